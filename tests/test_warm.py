"""``patchwarden score --warm``: a warm scorer answers one-off ``score`` calls (docs/scale.md,
"One patch at a time: the warm scorer").

Real processes throughout: the ``patchwarden`` script, the detached warm scorer it starts,
bubblewrap runs. One warm scorer (one state directory) is shared by the module; the tests
that kill or stop a scorer use a state directory of their own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchwarden.sandbox import SandboxConfig, mounted_host_paths
from patchwarden.scorer import ScorerConfig
from patchwarden.server._warm_client import default_state_dir, locate
from tests.conftest import BUNDLE_FILES, CONTRACT

pytestmark = pytest.mark.bwrap

EXIT = {"accept": 0, "reject": 1}
PER_VERDICT = ("verdict_id", "bundle", "timestamp", "created_at", "finished_at", "started_at")
"""Fields that name one verdict or its time: they differ between any two scores."""


def _score(
    repo: Path, logs: Path, env: dict[str, str], patch: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    argv = ["patchwarden", "score", "--repo", str(repo), "--contract", CONTRACT]
    argv += ["--parent", "base", "--patch", patch, "--log-dir", str(logs), *extra]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)


def _warm_dir(state: Path) -> Path:
    return state / "patchwarden" / "scorer" / "warm"


def _scorer_pids(state: Path) -> list[int]:
    """The warm scorers started in ``state``, in start order (from their logs)."""
    pids = []
    for log in sorted(_warm_dir(state).glob("*.log")):
        pids += [int(m) for m in re.findall(r"warm scorer (\d+): listening", log.read_text())]
    return pids


def _wait_for(condition: object, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _stop(state: Path) -> None:
    for pid in _scorer_pids(state):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    _wait_for(lambda: not list(_warm_dir(state).glob("*.sock")), "the sockets to go")


@pytest.fixture(scope="module")
def warm_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    state = tmp_path_factory.mktemp("warm-state")
    yield {**os.environ, "XDG_STATE_HOME": str(state)}
    _stop(state)


def _without_per_verdict(data: dict[str, object]) -> dict[str, object]:
    """Also without what each score draws afresh: the extra seeds (``DRAWN``)."""
    out = {k: v for k, v in data.items() if k not in PER_VERDICT}
    extra = out.get("extra_seeds")
    if isinstance(extra, dict):
        out["extra_seeds"] = {k: v for k, v in extra.items() if k not in DRAWN}
    return out


DRAWN = ("seeds", "contract_hash", "counts")
"""What depends on the drawn seeds: which they are, and how many rows pass on them."""


def _without_draws(text: str) -> str:
    """A review note's text with its extra seeds' line (drawn per score) left out."""
    return re.sub(r"^extra seeds \[.*$", "extra seeds ...", text, flags=re.MULTILINE)


def _index(logs: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (logs / "verdicts.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("patch", ["patch-fix", "patch-regression"])
def test_warm_and_cold_score_give_the_same_verdict(
    example_repo: Path, tmp_path: Path, warm_env: dict[str, str], patch: str
) -> None:
    warm = _score(example_repo, tmp_path / "warm", warm_env, patch, "--json", "--warm")
    cold = _score(example_repo, tmp_path / "cold", warm_env, patch, "--json")
    decision = "accept" if patch == "patch-fix" else "reject"
    assert (warm.returncode, warm.stderr) == (cold.returncode, cold.stderr) == (EXIT[decision], "")
    warm_json, cold_json = json.loads(warm.stdout), json.loads(cold.stdout)
    assert warm_json["decision"] == decision
    assert _without_per_verdict(warm_json) == _without_per_verdict(cold_json)
    [warm_line], [cold_line] = _index(tmp_path / "warm"), _index(tmp_path / "cold")
    assert warm_line.keys() == cold_line.keys()
    assert _without_per_verdict(warm_line) == _without_per_verdict(cold_line)
    warm_bundle, cold_bundle = Path(str(warm_line["bundle"])), Path(str(cold_line["bundle"]))
    assert {p.name for p in warm_bundle.iterdir()} == BUNDLE_FILES
    for name in ("scorecard.json", "patch.diff", "restored.json"):
        assert (warm_bundle / name).read_bytes() == (cold_bundle / name).read_bytes(), name
    note = "review-note.txt"
    warm_note = _without_draws((warm_bundle / note).read_text())
    assert warm_note == _without_draws((cold_bundle / note).read_text())
    # The text output too, once the verdict's own path is taken out.
    text = _score(example_repo, tmp_path / "warm", warm_env, patch, "--warm")
    assert (text.returncode, text.stderr) == (EXIT[decision], "")
    assert _without_draws(text.stdout).startswith(warm_note)
    assert re.fullmatch(r"evidence: \S+\n", text.stdout.splitlines(keepends=True)[-1])
    assert len(_scorer_pids(Path(warm_env["XDG_STATE_HOME"]))) == 1  # one scorer answered all


def test_the_warm_client_imports_no_scorer(
    example_repo: Path, tmp_path: Path, warm_env: dict[str, str]
) -> None:
    """The client must not pay for what the warm scorer has loaded already."""
    heavy = tmp_path / "heavy.json"
    probe = (
        "import atexit, json, sys\n"
        "heavy = ('pydantic', 'git', 'patchwarden.scorer', 'patchwarden.sandbox', 'yaml')\n"
        f"atexit.register(lambda: open({str(heavy)!r}, 'w').write(json.dumps("
        "sorted(m for m in heavy if m in sys.modules))))\n"
        "from patchwarden.server.cli import main\n"
        "main()\n"
    )
    argv = [sys.executable, "-c", probe, "score", "--warm", "--repo", str(example_repo)]
    argv += ["--contract", CONTRACT, "--parent", "base", "--patch", "patch-fix"]
    argv += ["--log-dir", str(tmp_path / "logs"), "--json"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=warm_env, timeout=600)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert json.loads(proc.stdout)["decision"] == "accept"
    assert json.loads(heavy.read_text()) == []


def test_another_configuration_never_reaches_the_scorer(
    example_repo: Path, tmp_path: Path, warm_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", warm_env["XDG_STATE_HOME"])
    config = tmp_path / "one-job.yaml"
    config.write_text("scorer:\n  jobs: 1\n")
    state = Path(warm_env["XDG_STATE_HOME"])
    before = {p.name for p in _warm_dir(state).glob("*.sock")}
    proc = _score(example_repo, tmp_path / "logs", warm_env, "patch-fix", "--warm", "--json",
                  "--config", str(config))  # fmt: skip
    assert (proc.returncode, proc.stderr) == (0, "")
    after = {p.name for p in _warm_dir(state).glob("*.sock")}
    assert len(after - before) == 1  # a scorer of its own
    place = locate(config)
    assert place is not None and place.socket.name in after - before
    config.write_text("scorer:\n  jobs: 2\n")  # other bytes: another key again
    assert locate(config) != place


def _raw_request(place_socket: Path, payload: bytes) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(place_socket))
        conn.sendall(payload)
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(65536)
            assert chunk, "the warm scorer closed without an answer"
            data += chunk
    answer: dict[str, object] = json.loads(data)
    return answer


def test_a_request_the_scorer_cannot_parse_is_refused_and_it_keeps_serving(
    example_repo: Path, tmp_path: Path, warm_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _score(example_repo, tmp_path / "logs", warm_env, "patch-fix", "--warm")  # it runs
    monkeypatch.setenv("XDG_STATE_HOME", warm_env["XDG_STATE_HOME"])
    place = locate(None)
    assert place is not None and place.socket.exists()
    assert _raw_request(place.socket, b"nonsense\n")["error"] == (
        "not JSON: Expecting value: line 1 column 1 (char 0)"
    )
    other = {"key": "0" * 24, "argv": [], "cwd": "/", "env": {}}
    assert _raw_request(place.socket, json.dumps(other).encode() + b"\n") == {
        "error": "the request is for another configuration (key mismatch)"
    }
    bad_env = {"key": place.key, "argv": [], "cwd": "/", "env": {"A": 1}}
    assert _raw_request(place.socket, json.dumps(bad_env).encode() + b"\n") == {
        "error": "env is not a mapping of variable names to strings"
    }
    proc = _score(example_repo, tmp_path / "logs", warm_env, "patch-fix", "--warm", "--json")
    assert (proc.returncode, proc.stderr) == (0, "")


@pytest.mark.skipif(
    os.getuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"
)
def test_only_our_uid_reaches_the_warm_scorer(
    example_repo: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    warm_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As another uid: the private directory stops it; opened up on purpose, SO_PEERCRED does."""
    # A scorer of its own, started here with a long idle time: one left by another test may
    # have been started with a short one and be gone before the second probe connects.
    # A short directory name: the probe connects by path (at most 107 bytes).
    state = tmp_path_factory.mktemp("ws")
    env = {**warm_env, "XDG_STATE_HOME": str(state)}
    try:
        _score(example_repo, tmp_path / "logs", env, "patch-fix", "--warm", "--warm-idle", "600")
        _probe_as_nobody(env, monkeypatch)
    finally:
        _stop(state)


def _probe_as_nobody(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", env["XDG_STATE_HOME"])
    place = locate(None)
    assert place is not None
    assert place.directory.stat().st_mode & 0o777 == 0o700
    assert place.socket.stat().st_mode & 0o777 == 0o600
    probe = (
        "import socket, sys\n"
        "c = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        f"    c.connect({str(place.socket)!r})\n"
        "except PermissionError:\n"
        "    print('denied'); sys.exit()\n"
        # The scorer may answer and close before our request is written: the refusal is
        # then already in our receive buffer, and writing fails with EPIPE.
        "try:\n"
        "    c.sendall(b'{}\\n')\n"
        "except (BrokenPipeError, ConnectionResetError):\n"
        "    pass\n"
        "print(c.makefile().readline(), end='')\n"
    )
    as_nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    as_nobody += [sys.executable, "-c", probe]
    # Directories above that others cannot search (pytest's 0700 base), with their modes.
    closed = [
        (p, stat.S_IMODE(p.stat().st_mode)) for p in place.directory.parents
        if not p.stat().st_mode & stat.S_IXOTH
    ]  # fmt: skip
    try:
        assert subprocess.run(as_nobody, capture_output=True, text=True).stdout == "denied\n"
        for path, mode in closed:
            path.chmod(mode | stat.S_IXOTH)
        place.directory.chmod(0o701)
        place.socket.chmod(0o666)
        done = subprocess.run(as_nobody, capture_output=True, text=True)
        assert done.stdout, done.stderr
        assert json.loads(done.stdout) == {"error": "uid 65534 may not use this scorer"}
    finally:
        for path, mode in closed:
            path.chmod(mode)
        place.directory.chmod(0o700)
        place.socket.chmod(0o600)


def test_killed_mid_request_the_call_scores_in_process(
    example_repo: Path, tmp_path: Path, scorer_env: dict[str, str]
) -> None:
    """kill -9 the warm scorer while it writes the bundle (a pause point: scorer/_faults.py):
    the call still gives its verdict once, says so in one line, and the next call replaces
    the stale socket with a new scorer."""
    state, pause, logs = tmp_path / "state", tmp_path / "pause", tmp_path / "logs"
    pause.mkdir()
    env = {**scorer_env, "XDG_STATE_HOME": str(state), "PATCHWARDEN_TEST_PAUSE_DIR": str(pause)}
    _score(example_repo, logs, env, "patch-regression", "--warm")  # started and warm
    (pause / "pause-at-bundle").write_text("")
    argv = ["patchwarden", "score", "--warm", "--repo", str(example_repo), "--contract", CONTRACT]
    argv += ["--parent", "base", "--patch", "patch-fix", "--log-dir", str(logs), "--json"]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env)  # fmt: skip
    _wait_for(lambda: list(pause.glob("bundle.*")), "the warm scorer to pause")
    [mark] = pause.glob("bundle.*")
    (pause / "pause-at-bundle").unlink()  # the in-process score must not pause
    os.kill(int(mark.suffix[1:]), signal.SIGKILL)
    stdout, stderr = client.communicate(timeout=600)
    [socket_path] = _warm_dir(state).glob("*.sock")
    assert client.returncode == 0
    assert stderr == (
        f"patchwarden: the warm scorer at {socket_path} gave no answer; scoring in this process\n"
    )
    verdict = json.loads(stdout)
    assert verdict["decision"] == "accept"
    index = _index(logs)
    assert [e["decision"] for e in index] == ["reject", "accept"]  # the verdict once
    published = {p.name for p in (logs / "verdicts").iterdir() if not p.name.startswith(".")}
    assert published == {Path(str(e["bundle"])).name for e in index}  # no half bundle

    again = _score(example_repo, logs, env, "patch-fix", "--warm", "--json")  # stale socket
    assert (again.returncode, again.stderr) == (0, "")
    assert len(_scorer_pids(state)) == 2
    _stop(state)


def test_the_warm_scorer_exits_when_idle(
    example_repo: Path, tmp_path: Path, scorer_env: dict[str, str]
) -> None:
    state = tmp_path / "state"
    env = {**scorer_env, "XDG_STATE_HOME": str(state)}
    proc = _score(example_repo, tmp_path / "logs", env, "patch-fix", "--warm", "--warm-idle", "1")
    assert (proc.returncode, proc.stderr) == (0, "")
    _wait_for(lambda: not list(_warm_dir(state).glob("*.sock")), "the idle scorer to go")
    [log] = _warm_dir(state).glob("*.log")
    _wait_for(lambda: log.read_text().endswith(": stopped\n"), "the log's last line")
    assert ": idle for 1 s\n" in log.read_text()


def test_sigterm_stops_the_warm_scorer_and_removes_its_socket(
    example_repo: Path, tmp_path: Path, warm_env: dict[str, str]
) -> None:
    _score(example_repo, tmp_path / "logs", warm_env, "patch-fix", "--warm")  # it runs
    state = Path(warm_env["XDG_STATE_HOME"])
    _stop(state)  # SIGTERM to each; waits for every socket to go
    for log in _warm_dir(state).glob("*.log"):
        assert log.read_text().endswith(": stopped\n")


def test_the_warm_state_dir_is_the_scorers_and_no_sandbox_mounts_it() -> None:
    assert default_state_dir() == Path(ScorerConfig().state_dir)
    warm = default_state_dir() / "warm"
    for mounted in mounted_host_paths(SandboxConfig()):
        assert not warm.is_relative_to(mounted), mounted
