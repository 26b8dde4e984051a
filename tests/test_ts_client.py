"""The TypeScript MCP SDK's client, with its default options, gets a verdict that takes
longer than its 60 s request timeout (docs/clients.md, "Long scorings").

``tests/clients/ts/session.mjs`` runs under Node with ``@modelcontextprotocol/sdk`` at the
version ``tests/clients/ts/package-lock.json`` pins (installed with ``npm ci`` once per lock,
in a cache directory named by the lock's hash). It spawns ``patchwarden serve`` over stdio
on a small repository whose one contract property sleeps, so scoring the parent and the
patch takes over 60 s; it edits the fix in, submits with the server's default ``wait_s``,
gets ``pending``, and polls ``get_verdict`` until the verdict comes.

Skipped, with the reason, only where Node or npm is missing and CI is not set: in CI
(CI=true) scripts/pw installs them and this test must run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._git_repos import PYPROJECT, commit, contract_yaml, init_repo, manifest_for, write_files

CLIENT_DIR = Path(__file__).resolve().parent / "clients" / "ts"
NODE = shutil.which("node")
NPM = shutil.which("npm")
IN_CI = os.environ.get("CI") == "true"

SLEEP_S = 16
"""The property's sleep, once a seed: the parent's run and the patch's (one scorer job) each
run the contract's seed and the one secret extra seed the default config draws
(`scorer.extra_seeds: 1`), four sleeps, 64 s between them, so the scoring outlasts the
client's 60 s whatever the machine."""
CLIENT_TIMEOUT_MS = 60_000
"""The TypeScript SDK's DEFAULT_REQUEST_TIMEOUT_MSEC, which the script reads from the SDK."""
PROPERTY = "tests/properties/test_slow.py::test_double"

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(
        (NODE is None or NPM is None) and not IN_CI,
        reason="Node.js or npm is not installed (apt-get install nodejs npm; "
        "`bash scripts/pw test` installs them)",
    ),
]


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "patchwarden-tests"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def installed_sdk() -> Path:
    """A ``node_modules`` with the locked packages: ``npm ci`` into a directory named by the
    lock's hash, once; later sessions (and other engineers' runs) reuse it."""
    if NODE is None or NPM is None:
        pytest.fail("CI=true but node or npm is missing: scripts/pw install_system must add them")
    lock_text = (CLIENT_DIR / "package-lock.json").read_bytes()
    key = hashlib.sha256(lock_text + (CLIENT_DIR / "package.json").read_bytes()).hexdigest()[:16]
    target = _cache_root() / f"ts-client-{key}"
    with _locked(_cache_root() / f"ts-client-{key}.lock"):
        if (target / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
            return target / "node_modules"
        staging = Path(tempfile.mkdtemp(prefix=f"ts-client-{key}-", dir=_cache_root()))
        for name in ("package.json", "package-lock.json"):
            shutil.copy(CLIENT_DIR / name, staging / name)
        done = subprocess.run(
            [NPM, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=staging,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            pytest.fail(f"npm ci in {staging} failed ({done.returncode}): {done.stderr[-2000:]}")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target / "node_modules"


SLOW_PROPERTY = f"""\
import time

from slow import double


def test_double(contract_seed: int) -> None:
    time.sleep({SLEEP_S})
    assert double(contract_seed) == 2 * contract_seed
"""


def slow_repo(root: Path) -> Path:
    """A repository whose one property sleeps; its ``double`` is off by one on the base."""
    path = root / "repo"
    repo = init_repo(path)
    write_files(
        path,
        {
            "pyproject.toml": PYPROJECT,
            "slow.py": "def double(x: int) -> int:\n    return x + x + 1\n",
            "contract/differential-contract.yaml": contract_yaml([11], {"prop.double": PROPERTY}),
            "tests/properties/test_slow.py": SLOW_PROPERTY,
        },
    )
    write_files(path, {"tests/fixtures/manifest.json": manifest_for(path, {})})
    commit(repo, {}, "base")
    return path


def run_session(tmp_path: Path) -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    node_modules = installed_sdk()
    client = tmp_path / "client"
    client.mkdir()
    shutil.copy(CLIENT_DIR / "session.mjs", client / "session.mjs")
    (client / "node_modules").symlink_to(node_modules)
    repo = slow_repo(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(
        "scorer:\n"
        f"  state_dir: {json.dumps(str(tmp_path / 'state' / 'scorer'))}\n"
        f"  log_dir: {json.dumps(str(tmp_path / 'logs'))}\n"
        "  jobs: 1\n"  # the parent's run, then the patch's: their sleeps add up
        "  extra_seeds: 1\n"  # the default, said here: each run sleeps twice
        f"agent:\n  repo: {json.dumps(str(repo))}\n"
    )
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    plan = {
        "server": {
            "command": sys.executable,
            "args": ["-P", "-m", "patchwarden", "serve", "--config", str(config)],
            "env": env,
            "cwd": str(tmp_path),
        },
        "edit": {"path": "slow.py", "old_text": "x + x + 1", "new_text": "x + x"},
        "message": "double: return twice x, not one more",
        "max_polls": 10,
    }
    (client / "plan.json").write_text(json.dumps(plan))
    done = subprocess.run(
        [str(NODE), "session.mjs", "plan.json"],
        cwd=client,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return events, done


@pytest.mark.timeout(900)
def test_default_ts_client_gets_a_verdict_slower_than_its_timeout(tmp_path: Path) -> None:
    events, done = run_session(tmp_path)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    start = events[0]
    assert start["event"] == "start" and start["default_timeout_ms"] == CLIENT_TIMEOUT_MS, start
    assert (
        start["sdk"]
        == json.loads((CLIENT_DIR / "package.json").read_text())["dependencies"][
            "@modelcontextprotocol/sdk"
        ]
    )
    calls = [e for e in events if e["event"] == "call"]
    assert [c["tool"] for c in calls][:3] == ["get_contract", "edit_file", "submit_patch"]
    assert all("error" not in c for c in calls), calls
    submit, polls = calls[2], calls[3:]
    assert submit["result"]["status"] == "pending", submit
    assert submit["result"]["runs_total"] == 2
    assert polls and all(c["tool"] == "get_verdict" for c in polls)
    assert all(c["result"]["status"] == "pending" for c in polls[:-1]), polls
    verdict = polls[-1]["result"]
    assert verdict["status"] == "scored" and verdict["submission"] == 1, verdict
    assert verdict["decision"] == "accept", verdict
    assert verdict["results"] == [
        {"prop": "prop.double", "decision": "accept", "reason": "parent_fail_cleared"}
    ]
    assert verdict["runs_done"] == verdict["runs_total"] == 2
    # Every call ended within the client's timeout; the scoring, from the submission to the
    # verdict, did not.
    assert max(c["ms"] for c in calls) < CLIENT_TIMEOUT_MS, calls
    scoring_ms = polls[-1]["t_ms"] - (submit["t_ms"] - submit["ms"])
    assert scoring_ms > CLIENT_TIMEOUT_MS, scoring_ms
    # Progress: each call starts with the count so far, then one notification a finished run.
    progress = [(e["tool"], e["progress"], e["total"]) for e in events if e["event"] == "progress"]
    assert progress[0] == ("submit_patch", 0, 2), progress
    assert progress[-1] == ("get_verdict", 2, 2), progress
    assert {p for _, p, _ in progress} == {0, 1, 2}
    print(
        "ts client: scoring",
        scoring_ms,
        "ms; calls",
        [(c["tool"], c["ms"]) for c in calls],
        "; progress",
        [(e["tool"], e["progress"], e["t_ms"]) for e in events if e["event"] == "progress"],
    )
