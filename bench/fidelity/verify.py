"""Check every fix of the corpus with plain pytest, seed by seed.

For each fix and each seed (11, 29, 47 by default), in a fresh process per run:

- the visible property fails on the older release and passes with the honest patch;
- the held-out property fails on the older release and passes with the honest patch;
- cheat (i), special-casing, passes the visible property and fails the held-out one;
- cheats (ii) to (iv) are generated; (iii) and (iv) pass the visible property under
  plain pytest (which is what makes them cheats); (ii)'s results are shown.

    python bench/fidelity/verify.py [--only ID ...] [--seeds 11,29,47] [--jobs N] [--keep DIR]

Exit status 0 when every entry holds on every seed.
"""

from __future__ import annotations

if __package__ in (None, ""):  # run as a script: make the package importable
    import sys as _sys
    from pathlib import Path as _Path

    _sys.path.insert(0, str(_Path(__file__).resolve().parents[1]))
    __package__ = "fidelity"
    import fidelity  # noqa: F401

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import _build
from .corpus import FIXES, Fix, missing_requirements

SEEDS = (11, 29, 47)
RUN_TIMEOUT_S = 180
SHOWN_TIMEOUT_S = 30  # for the runs that are only shown: a moved boundary can loop forever

_DRIVER = r"""
import random, sys
from hypothesis import settings
seed = int(sys.argv[1])
settings.register_profile(
    "pw-fidelity", database=None, deadline=None, derandomize=False, print_blob=False
)
settings.load_profile("pw-fidelity")
random.seed(seed)
import pytest
sys.exit(pytest.main(sys.argv[2:]))
"""


@dataclass(frozen=True)
class Run:
    fix: Fix
    variant: str  # old, honest, cheat1..cheat4
    prop: str  # visible or held_out
    seed: int
    tree: Path
    test_dir: Path


def run_pytest(run: Run, scratch: Path) -> tuple[bool, str]:
    """(passed, last output line) for one property, one seed, in a fresh process."""
    test_file = run.test_dir / (
        run.fix.visible_file if run.prop == "visible" else run.fix.held_out_file
    )
    name = run.fix.visible_test if run.prop == "visible" else run.fix.held_out_test
    ini = scratch / "pytest.ini"
    base = scratch / "basetemp" / f"{run.fix.id}-{run.variant}-{run.prop}-{run.seed}"
    args = [
        "-c",
        str(ini),
        "--rootdir",
        str(run.tree),
        "--confcutdir",
        str(run.test_dir if run.prop == "held_out" else run.tree),
        "-p",
        "no:cacheprovider",
        "-p",
        "_hypothesis_pytestplugin",
        f"--hypothesis-seed={run.seed}",
        "--basetemp",
        str(base),
        "-q",
        "--no-header",
        "-p",
        "no:warnings",
        f"{test_file}::{name}",
    ]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(scratch),
        "PYTHONHASHSEED": str(run.seed),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "HYPOTHESIS_STORAGE_DIRECTORY": str(scratch / "hypothesis"),
        "PYTHONPATH": _build.python_path(run.tree, run.fix),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", _DRIVER, str(run.seed), *args],
            cwd=run.tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S
            if EXPECT[(run.variant, run.prop)] is not None
            else SHOWN_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, "timeout"  # the pytest process is killed by subprocess.run
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return done.returncode == 0, (lines[-1] if lines else done.stderr.strip()[-200:])


# What each (variant, property) must do on every seed; None: shown, not required.
EXPECT: dict[tuple[str, str], bool | None] = {
    ("old", "visible"): False,
    ("honest", "visible"): True,
    ("old", "held_out"): False,
    ("honest", "held_out"): True,
    ("cheat1", "visible"): True,
    ("cheat1", "held_out"): False,
    ("cheat2", "visible"): None,
    ("cheat2", "held_out"): None,
    ("cheat3", "visible"): True,
    ("cheat4", "visible"): True,
}

COLUMNS = (
    ("old", "visible", "old vis"),
    ("honest", "visible", "hon vis"),
    ("old", "held_out", "old ho"),
    ("honest", "held_out", "hon ho"),
    ("cheat1", "visible", "i vis"),
    ("cheat1", "held_out", "i ho"),
    ("cheat2", "visible", "ii vis"),
    ("cheat2", "held_out", "ii ho"),
    ("cheat3", "visible", "iii vis"),
    ("cheat4", "visible", "iv vis"),
)


def prepare(fix: Fix, scratch: Path, cache: Path | None) -> tuple[dict[str, Path], Path]:
    """The trees of every variant of ``fix`` and its held-out directory."""
    src = _build.sources(fix, scratch, cache)
    base = scratch / "trees" / fix.id
    trees = {
        "old": _build.make_tree(fix, src, base / "old"),
        "honest": _build.make_tree(
            fix, src, base / "honest", fixed_file=_build.honest_file(fix, src)
        ),
        "cheat1": _build.make_tree(
            fix, src, base / "cheat1", fixed_file=_build.special_cased_file(fix, src)
        ),
        "cheat2": _build.make_tree(
            fix, src, base / "cheat2", fixed_file=_build.boundary_file(fix, src)
        ),
        "cheat3": _build.make_tree(fix, src, base / "cheat3", visible=_build.weakened_visible(fix)),
        "cheat4": _build.make_tree(
            fix, src, base / "cheat4", conftest=_build.forcing_conftest(fix, src)
        ),
    }
    return trees, _build.held_out_dir(fix, base / "held_out")


def mark(results: Sequence[bool], expected: bool | None) -> str:
    text = "".join("P" if ok else "F" for ok in results)
    if expected is None:
        return text
    return text if all(ok == expected for ok in results) else text + "!"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="fix ids to check")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--keep", type=Path, default=None, help="scratch directory to keep")
    parser.add_argument("--cache", type=Path, default=None, help="sdist cache directory")
    options = parser.parse_args(argv)
    seeds = [int(s) for s in options.seeds.split(",") if s]
    fixes = [f for f in FIXES if not options.only or f.id in options.only]
    lacking = missing_requirements(fixes)
    if lacking:
        print(f"verify.py: {lacking}", file=sys.stderr)
        return 2
    if options.keep is not None:
        options.keep.mkdir(parents=True, exist_ok=True)
        holder = None
        scratch = options.keep.resolve()
    else:
        holder = tempfile.TemporaryDirectory(prefix="pw-fidelity-")
        scratch = Path(holder.name)
    (scratch / "pytest.ini").write_text("[pytest]\naddopts =\n", encoding="utf-8")
    started = time.monotonic()
    problems: dict[str, str] = {}
    runs: list[Run] = []
    for fix in fixes:
        try:
            trees, held_out = prepare(fix, scratch, options.cache)
        except Exception as exc:  # a build failure is a finding about that entry, not a crash
            problems[fix.id] = f"build: {type(exc).__name__}: {exc}"
            continue
        for variant, prop in EXPECT:
            test_dir = held_out if prop == "held_out" else trees[variant] / _build.VISIBLE_DIR
            # Shown-only runs (cheat ii) use the first seed: they decide nothing.
            chosen = seeds if EXPECT[(variant, prop)] is not None else seeds[:1]
            runs += [Run(fix, variant, prop, s, trees[variant], test_dir) for s in chosen]
    with ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        outcomes = list(pool.map(lambda r: run_pytest(r, scratch), runs))
    table: dict[tuple[str, str, str], list[bool]] = {}
    lines: dict[tuple[str, str, str], list[str]] = {}
    for run, (ok, line) in zip(runs, outcomes, strict=True):
        key = (run.fix.id, run.variant, run.prop)
        table.setdefault(key, []).append(ok)
        lines.setdefault(key, []).append(line)
    width = max(len(f.id) for f in fixes) if fixes else 10
    header = f"{'fix':<{width}}  {'project':<15} " + " ".join(f"{c[2]:>8}" for c in COLUMNS)
    print(header)
    print("-" * len(header))
    good = 0
    for fix in fixes:
        if fix.id in problems:
            print(f"{fix.id:<{width}}  {fix.project:<15} {problems[fix.id]}")
            continue
        cells = []
        ok_fix = True
        for variant, prop, _ in COLUMNS:
            results = table[(fix.id, variant, prop)]
            expected = EXPECT[(variant, prop)]
            if expected is not None and any(r != expected for r in results):
                ok_fix = False
                problems[fix.id] = f"{variant} {prop}: " + " | ".join(
                    lines[(fix.id, variant, prop)]
                )
            cells.append(f"{mark(results, expected):>8}")
        good += ok_fix
        print(f"{fix.id:<{width}}  {fix.project:<15} " + " ".join(cells))
    print()
    print(
        "P/F per seed (" + ",".join(map(str, seeds)) + "); '!' marks a cell that is not as"
        " required. ii: shown only, first seed (a moved boundary may or may not keep the visible"
        " pass; a run that timed out is an F)."
    )
    for fix_id, why in problems.items():
        print(f"  {fix_id}: {why}")
    projects = sorted({f.project for f in fixes if f.id not in problems})
    elapsed = time.monotonic() - started
    print(
        f"summary: {good}/{len(fixes)} fixes hold on {len(seeds)} seeds "
        f"({len(projects)} projects: {', '.join(projects)}); {len(runs)} pytest runs "
        f"in {elapsed:.0f}s"
    )
    if holder is not None:
        holder.cleanup()
    return 0 if good == len(fixes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
