"""Small real git repositories for the review-side tests (sweep, quarantine, freeze, scorecard).

Helpers only (no fixtures): each test module builds what it needs once, with
module-scoped fixtures, because every sandboxed pytest process costs a second.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import git

from patchwarden.scorer._hashing import sha256_file

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_DATE": "2026-11-01T09:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-11-01T09:00:00+00:00",
}

PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["."]\n'

# Tests that need to know which run of a series they are in share a counter
# directory mounted writable into the sandbox (sandbox.writable_paths): each
# call claims the next free number, atomically, also across parallel runs.
COUNTER_SOURCE = """\
import itertools
import os

COUNTER = {counter!r}


def run_index() -> int:
    for number in itertools.count():
        try:
            os.close(os.open(os.path.join(COUNTER, str(number)), os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return number
    raise AssertionError("unreachable")
"""


def init_repo(path: Path) -> git.Repo:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "init", "--quiet", "--initial-branch=main", str(path)],
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    repo = git.Repo(path)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Review Tests")
        config.set_value("user", "email", "review-tests@patchwarden.invalid")
        config.set_value("core", "hooksPath", os.devnull)
        config.set_value("commit", "gpgSign", "false")
    return repo


def write_files(root: Path, files: Mapping[str, str | None]) -> None:
    """Write (or, for None, delete) files under ``root``."""
    for rel, text in files.items():
        path = root / rel
        if text is None:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def commit(repo: git.Repo, files: Mapping[str, str | None], message: str) -> str:
    """Apply ``files`` to the working tree, commit everything, return the sha."""
    assert repo.working_tree_dir is not None
    write_files(Path(repo.working_tree_dir), files)
    repo.git.add("--all", "--force", ".")
    with repo.git.custom_environment(**GIT_ENV):
        repo.git.commit("--quiet", "--no-verify", "--allow-empty", "-m", message)
    return repo.head.commit.hexsha


def manifest_for(root: Path, fixtures: Mapping[str, list[str]]) -> str:
    """A manifest pinning the given fixtures (already written under ``root``)."""
    entries = [
        {
            "fixture": rel,
            "sha256": sha256_file(root / rel),
            "frozen_at": "2026-11-01T00:00:00Z",
            "covers": covers,
        }
        for rel, covers in fixtures.items()
    ]
    return json.dumps({"fixtures": entries}, indent=2) + "\n"


def contract_yaml(seeds: list[int], properties: Mapping[str, str], **extra: str) -> str:
    lines = [
        "contract_version: 1",
        f"seeds: {json.dumps(seeds)}",
        "spec_paths: [tests/properties]",
        "fixture_manifest: tests/fixtures/manifest.json",
    ]
    lines += [f"{key}: {value}" for key, value in extra.items()]
    lines.append("properties:")
    for prop, test in properties.items():
        lines += [f"  - id: {prop}", f'    test: "{test}"']
    return "\n".join(lines) + "\n"


def counter_dir(path: Path) -> Path:
    """A directory the sandbox uid may write (mounted via sandbox.writable_paths)."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o777)
    return path


def reset_counter(path: Path) -> None:
    for entry in path.iterdir():
        entry.unlink()


def operator_config(
    path: Path, *, state: Path, logs: Path, writable: tuple[Path, ...] = ()
) -> Path:
    """An operator config file: a private state dir and log dir, extra writable mounts."""
    lines = [
        "scorer:",
        f"  state_dir: {json.dumps(str(state))}",
        f"  log_dir: {json.dumps(str(logs))}",
    ]
    if writable:
        lines += ["sandbox:", "  writable_paths:"]
        lines += [f"    - {json.dumps(str(p))}" for p in writable]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def patchwarden(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run the ``patchwarden`` console script as a user does."""
    return subprocess.run(
        ["patchwarden", *args],
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else None,
        timeout=timeout,
        check=False,
    )
