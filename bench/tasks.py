"""Tasks from real fixes: how many does ``task from-fix`` build and validate? (docs/design/tasks.md)

For every fix of the fidelity corpus (bench/fidelity/corpus.py: real bug fixes of published
projects, their sdists pinned by sha256 and cached, never copied here) it builds a git
repository of the older release and commits on it the fix as a real fix commit would hold
it: the honest patch (the newer release's definitions of the fixed function) plus the newer
release's copy of every test module that names the fixed function and changed between the
releases. Then it runs ``patchwarden task from-fix`` on that commit (real bubblewrap, real
pytest, the real scorer for both validations) and reports: tasks built, validated,
targets, guards and excluded tests, gold (reference) accepted N/N and empty rejected N/N of
the validated ones, and the wall time of each task.

A fix whose release changed no test module naming the function has nothing to derive
targets from: ``task from-fix`` refuses it (exit 2, "changes no test file"), and it is
counted as not built, with that reason.

    python bench/tasks.py [--only ID ...] [--cache DIR] [--keep DIR] [--json FILE]
                          [--budget SECONDS]

Not part of CI (every task is about twenty sandboxed pytest processes of the project's test
modules). ``--budget`` stops starting new tasks after that many seconds; the table says how
many were tried.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fidelity import _build
from fidelity.corpus import FIXES, Fix

from patchwarden.scorer import guards_for

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


ORDER = ("semver", "parse", "boltons", "more-itertools")


@dataclass
class Outcome:
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


def _git(repo: Path, *args: str) -> str:
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
    _git(dest, "init", "--quiet", "--initial-branch=main")
    _git(dest, "add", "--all", "--force", ".")
    _git(dest, "commit", "--quiet", "--no-verify", "-m", f"{fix.project} {fix.old.version}")
    (dest / fix.file).write_text(_build.honest_file(fix, src), encoding="utf-8")
    for module in modules:
        (dest / module).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src.new / module, dest / module)
    _git(dest, "add", "--all", "--force", ".")
    _git(dest, "commit", "--quiet", "--no-verify", "-m", f"fix {fix.id}")
    _git(dest, "tag", "fix")


def run_one(fix: Fix, scratch: Path, cache: Path | None, oracle: str) -> Outcome:
    outcome = Outcome(fix=fix.id, project=fix.project)
    src = _build.sources(fix, scratch, cache)
    modules = changed_test_modules(fix, src)
    outcome.test_modules = modules
    repo = scratch / "repos" / fix.id
    make_repo(fix, src, repo, modules)
    config = scratch / "config.yaml"
    config.write_text(
        f"scorer:\n  state_dir: {json.dumps(str(scratch / 'state'))}\n"
        f"  log_dir: {json.dumps(str(scratch / 'logs'))}\n"
        f"sandbox:\n  oracle: {oracle}\n",
        encoding="utf-8",
    )
    start = time.monotonic()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "patchwarden", "task", "from-fix", "--repo", str(repo)),
            *("--fix", "fix", "--name", fix.id, "--json", "--config", str(config)),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    outcome.seconds = round(time.monotonic() - start, 1)
    outcome.exit_code = done.returncode
    if done.returncode == 2 or not done.stdout.strip():
        outcome.problem = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return outcome
    task = json.loads(done.stdout)
    outcome.built = True
    outcome.validated = bool(task["validated"])
    outcome.targets = len(task["targets"])
    outcome.guards = len(task["guards"])
    outcome.excluded = len(task["excluded"])
    outcome.reference = task["validation"].get("reference", "")
    outcome.empty = task["validation"].get("empty", "")
    outcome.problem = task["problem"]
    return outcome


def table(outcomes: Sequence[Outcome], tried: int, total: int) -> str:
    built = [o for o in outcomes if o.built]
    valid = [o for o in built if o.validated]
    lines = [
        f"fixes tried: {tried} of {total} ({len({o.project for o in outcomes})} projects)",
        f"tasks built: {len(built)}/{tried}",
        f"tasks validated: {len(valid)}/{len(built)}",
        f"gold (reference) accepted: {sum(o.reference == 'accept' for o in valid)}/{len(valid)}",
        f"empty patch rejected: {sum(o.empty == 'reject' for o in valid)}/{len(valid)}",
        f"targets {sum(o.targets for o in built)}, guards {sum(o.guards for o in built)}, "
        f"excluded {sum(o.excluded for o in built)} (over the built tasks)",
    ]
    if built:
        times = sorted(o.seconds for o in built)
        lines.append(f"time per task: median {times[len(times) // 2]:.0f} s, max {times[-1]:.0f} s")
    lines.append("")
    lines.append("fix | built | validated | targets | guards | excluded | seconds | note")
    for o in outcomes:
        lines.append(
            f"{o.fix} | {'yes' if o.built else 'no'} | {'yes' if o.validated else 'no'} | "
            f"{o.targets} | {o.guards} | {o.excluded} | {o.seconds:.0f} | {o.problem[:120]}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="fix ids")
    parser.add_argument("--cache", type=Path, default=None, help="sdist cache directory")
    parser.add_argument("--keep", type=Path, default=None, help="scratch directory to keep")
    parser.add_argument("--json", type=Path, default=None, help="write every outcome here")
    parser.add_argument(
        "--oracle",
        choices=("isolated", "in-process"),
        default="isolated",
        help="sandbox.oracle for the runs (docs/design/isolated-oracle.md)",
    )
    parser.add_argument("--budget", type=float, default=None, help="seconds to start tasks in")
    args = parser.parse_args(argv)
    # The projects with the smallest test modules first: a budget gets the most tasks.
    fixes = sorted(
        (f for f in FIXES if args.only is None or f.id in args.only),
        key=lambda f: ORDER.index(f.project) if f.project in ORDER else len(ORDER),
    )
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="pw-bench-tasks-"))
    scratch.mkdir(parents=True, exist_ok=True)
    outcomes: list[Outcome] = []
    start = time.monotonic()
    try:
        for fix in fixes:
            if args.budget is not None and time.monotonic() - start > args.budget:
                break
            outcome = run_one(fix, scratch, args.cache, args.oracle)
            outcomes.append(outcome)
            print(json.dumps(asdict(outcome)), file=sys.stderr, flush=True)
            if args.json is not None:
                args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1))
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    print(table(outcomes, len(outcomes), len(fixes)))
    valid = [o for o in outcomes if o.validated]
    return 0 if valid and all(o.reference == "accept" and o.empty == "reject" for o in valid) else 1


if __name__ == "__main__":
    sys.exit(main())
