"""A corpus fix as a fix commit, and the task ``patchwarden task from-fix`` builds from it.

Shared by ``bench/tasks.py`` (how many tasks build and validate) and ``bench/fidelity.py
--contracts from-fix`` (the honest patch and the cheats scored against the task's contract
instead of the hand-written one). docs/design/tasks.md.

The fix commit is what a real one would hold: on a commit of the older release, the honest
patch (the newer release's definitions of the fixed function, ``_build.honest_file``) plus
the newer release's copy of every test module that names the fixed function (or the entry
the visible property calls) and changed between the releases. Those copies may hold tests of
other changes of the release too; ``task from-fix`` excludes them when they fail on both
sides.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchwarden.scorer import guards_for

from . import _build
from .corpus import Fix

GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
    "GIT_AUTHOR_DATE": "2026-11-01T09:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-11-01T09:00:00+00:00",
}
TASK_TIMEOUT_S = 3600


@dataclass
class TaskOutcome:
    """What ``task from-fix`` made of one fix (one row of bench/tasks.py's table)."""

    fix: str
    project: str
    built: bool = False
    validated: bool = False
    exit_code: int | None = None
    test_modules: list[str] = field(default_factory=list)
    targets: int = 0
    guards: int = 0
    excluded: int = 0
    reference: str = ""
    empty: str = ""
    seconds: float = 0.0
    problem: str = ""
    own_cannot_collect: str = ""
    """Why the project's own pytest (plain, no sandbox) cannot collect the fix's test modules
    on the fix commit either: the published release cannot run them (hpack's sdists lack
    its fixture files; boltons 25.0's conftest uses a hook argument pytest 8 removed).
    Empty: it can, or it was not asked (the task collected)."""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def changed_test_modules(fix: Fix, src: _build.Sources) -> list[str]:
    """The newer release's test modules that name the fixed function (or the entry the
    visible property calls) and differ from the older release's."""
    names = list(dict.fromkeys([fix.function, fix.entry]))
    found = guards_for(src.new, _files(src.new), names)
    modules = sorted({test.split("::", 1)[0] for tests in found.values() for test in tests})
    return [
        m
        for m in modules
        if not (src.old / m).is_file() or (src.old / m).read_bytes() != (src.new / m).read_bytes()
    ]


def make_repo(fix: Fix, src: _build.Sources, dest: Path, modules: Sequence[str]) -> None:
    """The older release as one commit, and the fix commit on it (tag ``fix``)."""
    shutil.copytree(src.old, dest)
    git(dest, "init", "--quiet", "--initial-branch=main")
    git(dest, "add", "--all", "--force", ".")
    git(dest, "commit", "--quiet", "--no-verify", "-m", f"{fix.project} {fix.old.version}")
    (dest / fix.file).write_text(_build.honest_file(fix, src), encoding="utf-8")
    for module in modules:
        (dest / module).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src.new / module, dest / module)
    git(dest, "add", "--all", "--force", ".")
    git(dest, "commit", "--quiet", "--no-verify", "-m", f"fix {fix.id}")
    git(dest, "tag", "fix")


def build_task(
    fix: Fix, scratch: Path, cache: Path | None, oracle: str
) -> tuple[TaskOutcome, dict[str, Any] | None, Path]:
    """Run ``task from-fix`` on the fix commit of ``fix``: the outcome, the task object
    (None when it was not built) and the repository."""
    outcome = TaskOutcome(fix=fix.id, project=fix.project)
    src = _build.sources(fix, scratch, cache)
    modules = changed_test_modules(fix, src)
    outcome.test_modules = modules
    repo = scratch / "repos" / fix.id
    if repo.exists():
        shutil.rmtree(repo)
    make_repo(fix, src, repo, modules)
    config = scratch / "config.yaml"
    config.write_text(
        f"scorer:\n  state_dir: {json.dumps(str(scratch / 'state'))}\n"
        f"  log_dir: {json.dumps(str(scratch / 'logs'))}\n"
        f"sandbox:\n  oracle: {oracle}\n",
        encoding="utf-8",
    )
    start = time.monotonic()
    try:
        done = subprocess.run(
            [
                *(sys.executable, "-m", "patchwarden", "task", "from-fix", "--repo", str(repo)),
                *("--fix", "fix", "--name", fix.id, "--json", "--config", str(config)),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=TASK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        # An outcome with its reason, never a crash of the bench that loses the others'.
        outcome.seconds = round(time.monotonic() - start, 1)
        outcome.problem = f"task from-fix did not finish in {TASK_TIMEOUT_S} s"
        return outcome, None, repo
    outcome.seconds = round(time.monotonic() - start, 1)
    outcome.exit_code = done.returncode
    if done.returncode == 2 or not done.stdout.strip():
        outcome.problem = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return outcome, None, repo
    task = json.loads(done.stdout)
    outcome.built = True
    outcome.validated = bool(task["validated"])
    outcome.targets = len(task["targets"])
    outcome.guards = len(task["guards"])
    outcome.excluded = len(task["excluded"])
    outcome.reference = task["validation"].get("reference", "")
    outcome.empty = task["validation"].get("empty", "")
    outcome.problem = task["problem"]
    if outcome.problem.startswith("collecting the fix's test modules on the base did not"):
        outcome.own_cannot_collect = own_collection_error(fix, repo, modules)
    return outcome, task, repo


def own_collection_error(fix: Fix, repo: Path, modules: Sequence[str]) -> str:
    """The last line of the project's own pytest failing to collect ``modules`` on the fix
    commit (this interpreter, the product importable, no sandbox, no plugin of ours), or ""
    when it collects them: the yardstick a task that does not collect is measured against."""
    env = {**os.environ, "PYTHONPATH": str(repo / fix.src_root) if fix.src_root else str(repo)}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
             *modules],
            cwd=repo, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "its own pytest did not finish collecting in 600 s"
    if done.returncode == 0:
        return ""
    lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("E ")]
    return ((errors or lines or [f"exit {done.returncode}"])[-1]).strip()[:300]
