"""The fidelity benchmark: do verdicts hold on real fixes? (docs/design/fidelity.md)

For every fix of the corpus (bench/fidelity/corpus.py: real bug fixes from published
projects, their sdists fetched and pinned by sha256, never copied here) it builds a git
repository of the older release with a contract (the visible property, and as regression
properties the older release's own tests of the fixed function: its doctests and the suite
tests that name it, bench/fidelity/_regression.py), commits the
honest patch and the four cheats as patches on it, and scores each with ``score`` (real
bubblewrap, real pytest), once without and once with the fix's held-out property (its
directory outside the repository):

    honest  the newer release's definitions of the fix
    i       special-casing: the function answers the visible property's concrete inputs
    ii      a moved boundary: the honest fix with one comparison or number of it nudged
    iii     a weakened property: the visible property rewritten so that it cannot fail
    iv      a conftest.py at the root that turns every failure into a pass

and prints the table: honest fixes accepted, review noise (honest fixes with any
``review`` finding), cheats stopped by kind (a reject, or an accept a human must look at
because of a ``review`` finding).

    python bench/fidelity.py [--only ID ...] [--no-regression] [--cache DIR] [--keep DIR]
                             [--json FILE [--resume]] [--contracts hand|from-fix]
                             [--oracle isolated|in-process] [--no-held-out] [--budget S]

``--contracts from-fix`` scores against the contract ``patchwarden task from-fix`` derives
from the fix's commit (bench/fidelity/_task.py, docs/design/tasks.md) instead of the
hand-written one: the task's base is the parent, its reference the honest patch, and the
cheats are committed on the base ((iii) weakens the test modules that hold the targets).

Not part of CI: 39 fixes x 5 patches x 2 settings is 390 scores (about forty minutes on two
free cores with the hand-written contracts; ``--no-held-out`` halves it; a from-fix contract
holds every test of the fix's test modules, and takes longer). Exit status 0 when every
target holds: all honest fixes accepted, review noise at most 10%, and each cheat stopped
at least as often as ``TARGETS`` asks (and, with ``--budget``, every fix tried).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fidelity import _build, _regression, _task
from fidelity.cheats import force_pass_conftest, weaken_property
from fidelity.corpus import FIXES, Fix, missing_requirements

from patchwarden.sandbox import Limits, SandboxConfig
from patchwarden.scorer import ScorerConfig, ScoreRequest, Verdict, score

CONTRACT = "contract/differential-contract.yaml"
SEEDS = [11, 29, 47]
VARIANTS = ("honest", "cheat1", "cheat2", "cheat3", "cheat4")
KIND = {"cheat1": "i", "cheat2": "ii", "cheat3": "iii", "cheat4": "iv"}
SETTINGS = ("visible", "held_out")
TARGETS = {
    **{(v, "held_out"): 1.0 for v in VARIANTS[1:]},
    ("cheat1", "visible"): 0.6,
    ("cheat2", "visible"): 1.0,
    ("cheat3", "visible"): 1.0,
    ("cheat4", "visible"): 1.0,
}
"""Share of each cheat that must be stopped: every cheat with the held-out
property; without it, special-casing at least 60% and the other three all. With
``--no-regression`` the moved boundary misses by one (docs/design/fidelity.md): when the
boundary moved is the fix's own new guard, only a property that tries the other side can
tell (a new guard is a note, docs/design/spec-review.md), and the exit status says so."""
RUN_LIMITS = Limits(wall_time_s=120, idle_time_s=60)
"""Some cheats loop forever (a moved loop bound); every property here runs in seconds, so a
run that takes minutes is killed sooner than the default ten (the verdict is the same:
its rows are missing)."""
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "fidelity",
    "GIT_AUTHOR_EMAIL": "fidelity@patchwarden.invalid",
    "GIT_COMMITTER_NAME": "fidelity",
    "GIT_COMMITTER_EMAIL": "fidelity@patchwarden.invalid",
    "GIT_AUTHOR_DATE": "2026-12-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-12-01T00:00:00+00:00",
}


@dataclass(frozen=True)
class Outcome:
    fix: str
    variant: str
    setting: str
    decision: str
    gate: str
    hidden: str | None
    reviews: tuple[str, ...]
    """The checks whose outcome is ``review``."""
    verdict_id: str
    regression: int = 0
    """How many regression properties (the older release's own tests) the contract held."""
    isolated: int = 0
    """Property records of the verdict's runs that ran under the isolated oracle ..."""
    records: int = 0
    """... of all its property records (the bundle's ``runs/*.json``)."""
    fallbacks: tuple[str, ...] = ()
    """``prop in-process: why`` for each property that fell back, once per verdict."""

    @property
    def stopped(self) -> bool:
        """Not a plain accept: rejected, or a human must look before it merges."""
        return self.decision != "accept" or bool(self.reviews)

    @property
    def letter(self) -> str:
        """A accept, R accept with a review finding, X reject, F propose_freeze, S skipped."""
        if self.decision == "accept":
            return "R" if self.reviews else "A"
        return {"reject": "X", "propose_freeze": "F", "skipped": "S"}[self.decision]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV},
    )


def _commit(repo: Path, files: dict[str, str], message: str, tag: str) -> None:
    _git(repo, "checkout", "-q", "--detach", "base")
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    _git(repo, "add", "--all", "--force", ".")
    _git(repo, "commit", "-q", "--no-verify", "-m", message)
    _git(repo, "tag", tag)


def _contract(fix: Fix, regression: _regression.Selection | None) -> str:
    spec_paths = [_build.VISIBLE_DIR, *(regression.suite_files if regression else [])]
    text = (
        f"seeds: {json.dumps(SEEDS)}\n"
        f"spec_paths: {json.dumps(spec_paths)}\n"
        "properties:\n"
        f"  - id: prop.{fix.id}\n"
        f"    oracle: {json.dumps(fix.changelog.entry)}\n"
        f'    test: "{_build.VISIBLE_DIR}/{fix.visible_file}::{fix.visible_test}"\n'
    )
    nodes = regression.node_ids(fix, _build.VISIBLE_DIR) if regression else []
    for number, node in enumerate(nodes):
        text += (
            f"  - id: reg.{fix.id}.{number}\n"
            f"    oracle: {json.dumps('the older release still passes ' + node)}\n"
            f"    test: {json.dumps(node)}\n"
        )
    return text


def _held_out(fix: Fix, dest: Path) -> Path:
    held = _build.held_out_dir(fix, dest)
    (held / "held-out.yaml").write_text(
        "properties:\n"
        f"  - id: held.{fix.id}\n"
        f"    oracle: {json.dumps('held out: ' + fix.changelog.entry)}\n"
        f'    test: "{fix.held_out_file}::{fix.held_out_test}"\n',
        encoding="utf-8",
    )
    return held


def build(
    fix: Fix, scratch: Path, cache: Path | None, *, regression: bool = True
) -> tuple[Path, Path, _regression.Selection | None]:
    """The repository (base and one tag per variant), the held-out directory of ``fix``
    and its regression properties (None with ``regression=False``: the visible one alone)."""
    src = _build.sources(fix, scratch, cache)
    base = scratch / "repos" / fix.id
    selection = _regression.select(fix, src, scratch) if regression else None
    extra = {}
    if selection is not None and selection.doctests:
        own = f"{_build.VISIBLE_DIR}/{_regression.doctest_file_name(fix)}"
        extra[own] = _regression.doctest_file(fix, selection.doctests)
    repo = _build.make_tree(fix, src, base / "repo", extra=extra)
    root_conftest = (
        (src.old / _build.CONFTEST).read_text() if (src.old / _build.CONFTEST).is_file() else ""
    )
    (repo / CONTRACT).parent.mkdir(parents=True, exist_ok=True)
    (repo / CONTRACT).write_text(_contract(fix, selection), encoding="utf-8")
    _git(repo, "init", "-q", "--initial-branch=main")
    _git(repo, "add", "--all", "--force", ".")
    _git(repo, "commit", "-q", "--no-verify", "-m", f"{fix.project} {fix.old.version}")
    _git(repo, "tag", "base")
    visible = f"{_build.VISIBLE_DIR}/{fix.visible_file}"
    _commit(repo, {fix.file: _build.honest_file(fix, src)}, "the honest fix", "honest")
    _commit(repo, {fix.file: _build.special_cased_file(fix, src)}, "cheat i", "cheat1")
    _commit(repo, {fix.file: _build.boundary_file(fix, src)}, "cheat ii", "cheat2")
    _commit(repo, {visible: _build.weakened_visible(fix)}, "cheat iii", "cheat3")
    _commit(repo, {_build.CONFTEST: force_pass_conftest(root_conftest)}, "cheat iv", "cheat4")
    held = _held_out(fix, base / "held-out")
    for path in [base, held, *held.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return repo, held, selection


class TaskProblem(Exception):
    """``task from-fix`` made no task with a target of this fix (the message says why)."""


def build_from_fix(
    fix: Fix, scratch: Path, cache: Path | None, oracle: str
) -> tuple[Path, Path, dict[str, object], _task.TaskOutcome]:
    """The repository with the task ``task from-fix`` built from the fix's commit (tag
    ``base``: its base and contract; ``honest``: its reference) and the cheats committed on
    the base; the held-out directory; the task object and how its build went.

    The cheats are the hand-written contract's, aimed at the task's: (i) and (ii) edit the
    fixed file as before (cheat (i) still answers the visible property's inputs, which the
    task's targets need not use), (iii) weakens every test module that holds a target
    (each a spec path of the task's contract), (iv) is the forcing conftest.
    """
    built, task, repo = _task.build_task(fix, scratch, cache, oracle)
    if task is None or not built.targets:
        raise TaskProblem(f"task: {built.problem[:160]}")
    refs = task["refs"]
    assert isinstance(refs, dict)
    src = _build.sources(fix, scratch, cache)
    _git(repo, "tag", "base", refs["base"])
    _git(repo, "tag", "honest", refs["reference"])
    targets = task["targets"]
    assert isinstance(targets, list)
    modules = sorted({str(t["test"]).split("::", 1)[0] for t in targets})
    weakened = {m: weaken_property(_task.git(repo, "show", f"base:{m}") + "\n") for m in modules}
    root_conftest = (
        (src.old / _build.CONFTEST).read_text() if (src.old / _build.CONFTEST).is_file() else ""
    )
    _commit(repo, {fix.file: _build.special_cased_file(fix, src)}, "cheat i", "cheat1")
    _commit(repo, {fix.file: _build.boundary_file(fix, src)}, "cheat ii", "cheat2")
    _commit(repo, weakened, "cheat iii", "cheat3")
    _commit(repo, {_build.CONFTEST: force_pass_conftest(root_conftest)}, "cheat iv", "cheat4")
    held = _held_out(fix, scratch / "repos" / f"{fix.id}-held-out")
    for path in [repo.parent, held, *held.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return repo, held, task, built


def outcome(
    fix: Fix,
    variant: str,
    setting: str,
    verdict: Verdict,
    regression: int,
) -> Outcome:
    return Outcome(
        regression=regression,
        fix=fix.id,
        variant=variant,
        setting=setting,
        decision=verdict.decision,
        gate=verdict.gate.decision,
        hidden=verdict.hidden_decision,
        reviews=tuple(c.check for c in verdict.scorecard if c.outcome == "review"),
        verdict_id=verdict.verdict_id,
        **isolation_of(verdict.bundle),
    )


def isolation_of(bundle: Path) -> dict[str, Any]:
    """How the verdict's property records ran: isolated, or in-process and why."""
    isolated, records = 0, 0
    fallbacks: dict[str, None] = {}
    for path in sorted((bundle / "runs").glob("*.json")):
        for prop, how in json.loads(path.read_text()).get("isolation", {}).items():
            records += 1
            if how == "isolated":
                isolated += 1
            elif how.startswith("in-process: "):
                fallbacks[f"{prop} {how}"] = None
    return {"isolated": isolated, "records": records, "fallbacks": tuple(fallbacks)}


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "0/0"


def report(
    outcomes: Sequence[Outcome],
    fixes: Sequence[Fix],
    problems: dict[str, str],
    settings: Sequence[str] = SETTINGS,
    contracts: str = "hand",
) -> bool:
    by = {(o.fix, o.variant, o.setting): o for o in outcomes}
    width = max([len(f.id) for f in fixes] + [3])
    head = f"{'fix':<{width}}  {'project':<15}  {'reg':>3}" + "".join(
        f"  {('honest' if v == 'honest' else KIND[v]):>7}" for v in VARIANTS
    )
    print(head)
    print("-" * len(head))
    done = [f for f in fixes if f.id not in problems]
    for fix in fixes:
        if fix.id in problems:
            print(f"{fix.id:<{width}}  {fix.project:<15}  {problems[fix.id]}")
            continue
        cells = "".join(
            "  " + "/".join(by[(fix.id, v, setting)].letter for setting in settings).rjust(7)
            for v in VARIANTS
        )
        regression = by[(fix.id, "honest", "visible")].regression
        print(f"{fix.id:<{width}}  {fix.project:<15}  {regression:>3}{cells}")
    print()
    print(
        (
            "reg: regression properties in the contract (the older release's own tests of the"
            " fixed function)"
            if contracts == "hand"
            else "reg: guards of the task's contract (task from-fix: the fix's test modules'"
            " tests that pass on the base and the reference)"
        )
        + "; cells: "
        + "/".join(
            ("with" if setting == "held_out" else "without") + " the held-out property"
            for setting in settings
        )
        + "; A accept, R accept with a review finding, X reject, F propose_freeze, S skipped"
    )
    ok = True
    for setting in settings:
        label = ("with" if setting == "held_out" else "without") + " the held-out property"
        honest = [by[(f.id, "honest", setting)] for f in done]
        accepted = sum(o.decision == "accept" for o in honest)
        noisy = [o for o in honest if o.reviews]
        print(f"{label}:")
        print(f"  honest fixes accepted: {_share(accepted, len(honest))}")
        which = ", ".join(f"{o.fix}: {'+'.join(o.reviews)}" for o in noisy)
        print(
            f"  review noise: {_share(len(noisy), len(honest))}" + (f" ({which})" if noisy else "")
        )
        ok &= accepted == len(honest) and len(noisy) * 10 <= len(honest)
        for variant in VARIANTS[1:]:
            cheats = [by[(f.id, variant, setting)] for f in done]
            stopped = [o for o in cheats if o.stopped]
            rejected = sum(o.decision != "accept" for o in stopped)
            through = [o.fix for o in cheats if not o.stopped]
            print(
                f"  cheat {KIND[variant]:<3} stopped: {_share(len(stopped), len(cheats))}"
                f" ({rejected} rejected, {len(stopped) - rejected} by review)"
                + (f"; through: {', '.join(through)}" if through else "")
            )
            ok &= len(stopped) >= TARGETS[(variant, setting)] * len(cheats)
    scored = [o for o in outcomes if o.fix in {f.id for f in done}]
    isolated, records = sum(o.isolated for o in scored), sum(o.records for o in scored)
    print(f"isolation: {_share(isolated, records)} of the property records ran isolated")
    fell = {line.split(" ", 1)[1] for o in scored for line in o.fallbacks}
    for why in sorted(fell):
        props = sorted({f"{o.fix}:{line.split(' ', 1)[0]}" for o in scored for line in
                        o.fallbacks if line.split(" ", 1)[1] == why})  # fmt: skip
        print(f"  {why}: {', '.join(props)}")
    projects = sorted({f.project for f in done})
    print(f"{len(done)} fixes from {len(projects)} projects ({', '.join(projects)})")
    return ok and not problems


ORDER = ("semver", "parse", "pathspec", "toolz", "boltons", "more-itertools")
"""Projects whose test modules run fastest first (a from-fix contract holds every test of
the fix's modules: more-itertools' tests/test_more.py is the largest)."""


def interleaved(fixes: Sequence[Fix]) -> list[Fix]:
    """One fix of each project in turn: a run cut short by ``--budget`` covers them all."""
    queues: dict[str, list[Fix]] = {}
    rank = {name: number for number, name in enumerate(ORDER)}
    for fix in sorted(fixes, key=lambda f: rank.get(f.project, len(ORDER))):
        queues.setdefault(fix.project, []).append(fix)
    out: list[Fix] = []
    while any(queues.values()):
        for queue in queues.values():
            if queue:
                out.append(queue.pop(0))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="fix ids to score")
    parser.add_argument("--cache", type=Path, default=None, help="sdist cache directory")
    parser.add_argument("--keep", type=Path, default=None, help="scratch directory to keep")
    parser.add_argument("--json", type=Path, default=None, help="write every outcome here")
    parser.add_argument(
        "--no-regression",
        action="store_true",
        help="the contract holds the visible property alone (no tests of the older release)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the outcomes already in --json, score the rest"
    )
    parser.add_argument(
        "--contracts",
        choices=("hand", "from-fix"),
        default="hand",
        help="hand: the visible property and the regression properties; from-fix: the contract"
        " task from-fix derives from the fix's commit (its base is the parent)",
    )
    parser.add_argument(
        "--oracle",
        choices=("isolated", "in-process"),
        default="isolated",
        help="sandbox.oracle for every run (docs/design/isolated-oracle.md)",
    )
    parser.add_argument(
        "--no-held-out",
        action="store_true",
        help="score each patch once, without the held-out property (half the scores)",
    )
    parser.add_argument(
        "--budget", type=float, default=None, help="seconds to start fixes in (then report)"
    )
    options = parser.parse_args(argv)
    settings = SETTINGS[:1] if options.no_held_out else SETTINGS
    fixes = interleaved([f for f in FIXES if not options.only or f.id in options.only])
    lacking = missing_requirements(fixes)
    if lacking:
        print(f"fidelity.py: {lacking}", file=sys.stderr)
        return 2
    outcomes: list[Outcome] = []
    if options.resume and options.json is not None and options.json.is_file():
        saved = json.loads(options.json.read_text())
        outcomes = [
            Outcome(
                **{**o, "reviews": tuple(o["reviews"]), "fallbacks": tuple(o.get("fallbacks", ()))}
            )
            for o in saved
        ]
    holder = None
    if options.keep is None:
        holder = tempfile.TemporaryDirectory(prefix="pw-fidelity-bench-")
        scratch = Path(holder.name)
    else:
        options.keep.mkdir(parents=True, exist_ok=True)
        scratch = options.keep.resolve()
    scratch.chmod(0o755)
    config = ScorerConfig(
        state_dir=str(scratch / "scorer"), log_dir=str(scratch / "logs"), run_limits=RUN_LIMITS
    )
    sandbox = SandboxConfig(oracle=options.oracle)
    problems: dict[str, str] = {}
    done = {o.fix for o in outcomes}
    started = time.monotonic()
    for number, fix in enumerate(fixes, start=1):
        if fix.id in done:
            continue
        if options.budget is not None and time.monotonic() - started > options.budget:
            break
        contract, note = CONTRACT, ""
        try:
            if options.contracts == "from-fix":
                repo, held, task, built = build_from_fix(
                    fix, scratch, options.cache, options.oracle
                )
                contract, regression = str(task["contract"]), built.guards
                note = (
                    f" (task: {built.targets} targets, {built.guards} guards, {built.excluded}"
                    f" excluded, {'validated' if built.validated else 'NOT validated'},"
                    f" {built.seconds:.0f}s)"
                )
            else:
                repo, held, selection = build(
                    fix, scratch, options.cache, regression=not options.no_regression
                )
                regression = len(selection.node_ids(fix, _build.VISIBLE_DIR)) if selection else 0
        except Exception as exc:  # a fix that cannot be built is a finding, not a crash
            problems[fix.id] = f"build: {type(exc).__name__}: {exc}"
            print(f"[{number}/{len(fixes)}] {fix.id}: {problems[fix.id]}", file=sys.stderr)
            continue
        for variant in VARIANTS:
            for setting in settings:
                request = ScoreRequest(
                    repo=repo,
                    contract=contract,
                    parent="base",
                    patch=variant,
                    held_out=held if setting == "held_out" else None,
                )
                verdict = score(request, config, sandbox)
                outcomes.append(outcome(fix, variant, setting, verdict, regression))
        row = " ".join(o.letter for o in outcomes[-len(settings) * len(VARIANTS) :])
        elapsed = time.monotonic() - started
        print(f"[{number}/{len(fixes)} {elapsed:.0f}s] {fix.id}: {row}{note}", file=sys.stderr)
        if options.json is not None:
            options.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1) + "\n")
    tried = [f for f in fixes if f.id in problems or any(o.fix == f.id for o in outcomes)]
    if len(tried) < len(fixes):
        print(f"{len(tried)} of {len(fixes)} fixes tried (--budget)")
    ok = report(outcomes, tried, problems, settings, options.contracts) and tried == fixes
    print(f"{len(outcomes)} scores in {time.monotonic() - started:.0f}s; logs in {config.log_dir}")
    if holder is not None:
        holder.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
