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
                             [--json FILE [--resume]]

Not part of CI: 27 fixes x 5 patches x 2 settings is 270 scores (about 25 minutes on two
free cores). Exit status 0 when every target holds: all honest fixes accepted, review
noise at most 10%, and each cheat stopped at least as often as ``TARGETS`` asks.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fidelity import _build, _regression
from fidelity.cheats import force_pass_conftest
from fidelity.corpus import FIXES, Fix

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
    held = _build.held_out_dir(fix, base / "held-out")
    (held / "held-out.yaml").write_text(
        "properties:\n"
        f"  - id: held.{fix.id}\n"
        f"    oracle: {json.dumps('held out: ' + fix.changelog.entry)}\n"
        f'    test: "{fix.held_out_file}::{fix.held_out_test}"\n',
        encoding="utf-8",
    )
    for path in [base, held, *held.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return repo, held, selection


def outcome(
    fix: Fix,
    variant: str,
    setting: str,
    verdict: Verdict,
    selection: _regression.Selection | None,
) -> Outcome:
    return Outcome(
        regression=len(selection.node_ids(fix, _build.VISIBLE_DIR)) if selection else 0,
        fix=fix.id,
        variant=variant,
        setting=setting,
        decision=verdict.decision,
        gate=verdict.gate.decision,
        hidden=verdict.hidden_decision,
        reviews=tuple(c.check for c in verdict.scorecard if c.outcome == "review"),
        verdict_id=verdict.verdict_id,
    )


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "0/0"


def report(outcomes: Sequence[Outcome], fixes: Sequence[Fix], problems: dict[str, str]) -> bool:
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
            "  "
            + f"{by[(fix.id, v, 'visible')].letter}/{by[(fix.id, v, 'held_out')].letter}".rjust(7)
            for v in VARIANTS
        )
        regression = by[(fix.id, "honest", "visible")].regression
        print(f"{fix.id:<{width}}  {fix.project:<15}  {regression:>3}{cells}")
    print()
    print(
        "reg: regression properties in the contract (the older release's own tests of the"
        " fixed function); cells: without/with the held-out property; A accept, R accept with"
        " a review finding, X reject, F propose_freeze, S skipped"
    )
    ok = True
    for setting in SETTINGS:
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
    projects = sorted({f.project for f in done})
    print(f"{len(done)} fixes from {len(projects)} projects ({', '.join(projects)})")
    return ok and not problems


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
    options = parser.parse_args(argv)
    fixes = [f for f in FIXES if not options.only or f.id in options.only]
    outcomes: list[Outcome] = []
    if options.resume and options.json is not None and options.json.is_file():
        saved = json.loads(options.json.read_text())
        outcomes = [Outcome(**{**o, "reviews": tuple(o["reviews"])}) for o in saved]
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
    sandbox = SandboxConfig()
    problems: dict[str, str] = {}
    done = {o.fix for o in outcomes}
    started = time.monotonic()
    for number, fix in enumerate(fixes, start=1):
        if fix.id in done:
            continue
        try:
            repo, held, selection = build(
                fix, scratch, options.cache, regression=not options.no_regression
            )
        except Exception as exc:  # a fix that cannot be built is a finding, not a crash
            problems[fix.id] = f"build: {type(exc).__name__}: {exc}"
            continue
        for variant in VARIANTS:
            for setting in SETTINGS:
                request = ScoreRequest(
                    repo=repo,
                    contract=CONTRACT,
                    parent="base",
                    patch=variant,
                    held_out=held if setting == "held_out" else None,
                )
                verdict = score(request, config, sandbox)
                outcomes.append(outcome(fix, variant, setting, verdict, selection))
        row = " ".join(o.letter for o in outcomes[-2 * len(VARIANTS) :])
        elapsed = time.monotonic() - started
        print(f"[{number}/{len(fixes)} {elapsed:.0f}s] {fix.id}: {row}", file=sys.stderr)
        if options.json is not None:
            options.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1) + "\n")
    ok = report(outcomes, fixes, problems)
    print(f"{len(outcomes)} scores in {time.monotonic() - started:.0f}s; logs in {config.log_dir}")
    if holder is not None:
        holder.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
