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

    python bench/tasks.py [--only ID ...] [--cache DIR] [--keep DIR] [--json FILE [--resume]]
                          [--budget SECONDS]

Not part of CI (every task is about twenty sandboxed pytest processes of the project's test
modules). ``--budget`` stops starting new tasks after that many seconds; the table says how
many were tried.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fidelity._task import TaskOutcome, build_task
from fidelity.corpus import FIXES, Fix, missing_requirements

ORDER = (
    "semver",
    "priority",
    "parse",
    "python-slugify",
    "pathspec",
    "toolz",
    "hpack",
    "sqlparse",
    "boltons",
    "wcwidth",
    "more-itertools",
)
"""Projects with the smallest test modules first: a budget gets the most tasks."""


def run_one(fix: Fix, scratch: Path, cache: Path | None, oracle: str) -> TaskOutcome:
    return build_task(fix, scratch, cache, oracle)[0]


def why_not(outcome: TaskOutcome) -> str:
    """A short reason for a task that did not validate (the table groups them)."""
    if not outcome.built:
        return "not built: " + outcome.problem[:80]
    if outcome.reference == "accept" and "not a clean accept: " in outcome.problem:
        unclean = re.findall(r"(?:^|\), |: )(\w+) (?:review|reject) \(", outcome.problem)
        if unclean == ["isolation"]:
            return (
                "reference accepted, unclean only by isolation review (a property ran in-process)"
            )
        return "reference accepted, unclean by " + " + ".join(dict.fromkeys(unclean))
    if "no test fails on the base" in outcome.problem:
        return "no target"
    if "run of seed" in outcome.problem and "is incomplete" in outcome.problem:
        sides = [side for side in ("base", "reference") if f"the {side} run" in outcome.problem]
        return f"runs on the {' and the '.join(sides)} did not complete"
    if outcome.own_cannot_collect:
        return "the release's own pytest cannot collect them either: " + outcome.own_cannot_collect
    if "collecting the fix's test modules" in outcome.problem:
        return "the older release's tests do not collect: " + outcome.problem.split(": ", 1)[-1]
    return outcome.problem[:80]


def table(outcomes: Sequence[TaskOutcome], tried: int, total: int) -> str:
    built = [o for o in outcomes if o.built]
    valid = [o for o in built if o.validated]
    runnable = [o for o in outcomes if not o.own_cannot_collect]
    lines = [
        f"fixes tried: {tried} of {total} ({len({o.project for o in outcomes})} projects)",
        f"tasks built: {len(built)}/{tried}",
        f"tasks validated: {len(valid)}/{len(built)}",
        f"validated of the fixes the project's own pytest can run: {len(valid)}/{len(runnable)}"
        f" ({len({o.project for o in valid})} projects; {tried - len(runnable)} whose"
        " published release's own pytest cannot collect the fix's tests either)",
        f"gold (reference) accepted: {sum(o.reference == 'accept' for o in valid)}/{len(valid)}",
        f"empty patch rejected: {sum(o.empty == 'reject' for o in valid)}/{len(valid)}",
        f"over the built tasks: reference accepted {sum(o.reference == 'accept' for o in built)}"
        f"/{len(built)} ({len(valid)} clean), empty rejected"
        f" {sum(o.empty == 'reject' for o in built)}/{len(built)}",
        f"targets {sum(o.targets for o in built)}, guards {sum(o.guards for o in built)}, "
        f"excluded {sum(o.excluded for o in built)} (over the built tasks)",
    ]
    reasons: dict[str, int] = {}
    for o in outcomes:
        if not o.validated:
            reasons[why_not(o)] = reasons.get(why_not(o), 0) + 1
    for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
        lines.append(f"not validated, {count}: {reason}")
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
    parser.add_argument(
        "--resume", action="store_true", help="keep the outcomes already in --json, run the rest"
    )
    args = parser.parse_args(argv)
    fixes = sorted(
        (f for f in FIXES if args.only is None or f.id in args.only),
        key=lambda f: ORDER.index(f.project) if f.project in ORDER else len(ORDER),
    )
    lacking = missing_requirements(fixes)
    if lacking:
        print(f"tasks.py: {lacking}", file=sys.stderr)
        return 2
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="pw-bench-tasks-"))
    scratch.mkdir(parents=True, exist_ok=True)
    outcomes: list[TaskOutcome] = []
    if args.resume and args.json is not None and args.json.is_file():
        outcomes = [TaskOutcome(**o) for o in json.loads(args.json.read_text())]
    done = {o.fix for o in outcomes}
    start = time.monotonic()
    try:
        for fix in fixes:
            if fix.id in done:
                continue
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
