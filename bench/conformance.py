"""The conformance bench: does the scorer judge a project's own tests as its own pytest does?
(docs/design/isolated-oracle.md, "Conformance")

For every project of the corpus (bench/conformance_corpus.py: published sdists that ship their
tests, pinned by sha256, fetched at run time and cached, never copied here) it unpacks the
release, builds the project's env (sandbox/_env.py: its declarations plus the test
requirements the corpus names), and runs the project's whole own test suite three ways:

    own          ``python -m pytest`` in the env, in a copy of the release, with the project's
                 own configuration (ini, conftests, plugins), Hypothesis seed 11; per-test
                 outcomes from a report-log plugin of ours that only writes (no outcome
                 changes)
    in-process   the scorer's runner (``run_properties``), every test a property, seed 11,
                 ``sandbox.oracle: in-process``
    isolated     the same with the default oracle (the product in a process of its own)

One run per project per mode; ``--budget`` bounds each, and a test of the isolated run ends at
its 60 s deadline (``task from-fix``'s). A test AGREES when the scorer's
pass/fail is the own run's in scorer terms (only ``passed`` is a pass: skipped, xfailed,
xpassed and errors are failures) and, for a test the own run skipped or xfailed, the scorer's
witness says the same (``Skipped``, ``XFailed``): a skip is never matched by a failure of
another kind. It FALLS BACK when its isolated record ran in-process with a reason (or failed
isolated and passed when the runner ran it again in-process: the scorer judges such a test
in-process where the parent shows the same, scorer/_recheck.py). It DISAGREES otherwise: a
different outcome, or no record. The bench prints per project and in total the tests,
agreeing, falling back (each reason counted) and disagreeing, isolated and in-process each
against own, and writes every test's three outcomes to ``--json``.

    python bench/conformance.py [--only NAME ...] [--budget S] [--json OUT] [--cache DIR]
                                [--envs DIR] [--keep DIR]

Not part of CI (tests/adoption/test_conformance.py runs a small subset). Exit status 0 when
no test disagrees.
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
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conformance_corpus import BY_NAME, PROJECTS, Project
from fidelity._sdist import cache_dir, fetch, unpack

from patchwarden.sandbox import (
    Declarations,
    Limits,
    PropertyRun,
    PropertyTarget,
    SandboxConfig,
    build_env,
    collect_tests,
    detect_layout,
    read_declarations,
    run_properties,
)
from patchwarden.scorer._recheck import reconcile_pair

SEED = 11
MODES = ("in-process", "isolated")
DEFAULT_BUDGET_S = 300.0
TEST_TIMEOUT_S = 60.0
"""One test's deadline in the isolated run (``task from-fix``'s default)."""
REPORT_LOG = "pw_conformance_log"
REPORT_LOG_SOURCE = '''\
"""Writes every test report as a JSON line (the conformance bench; changes no outcome)."""
import json, os

_OUT = os.environ["PW_CONFORMANCE_LOG"]


def _write(row):
    with open(_OUT, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\\n")


def pytest_runtest_logreport(report):
    text = ""
    if report.failed or report.skipped:
        text = str(report.longrepr)[-1500:]
    _write({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
            "wasxfail": hasattr(report, "wasxfail"), "text": text})


def pytest_collectreport(report):
    if report.failed:
        _write({"nodeid": report.nodeid, "when": "collect", "outcome": "failed",
                "wasxfail": False, "text": str(report.longrepr)[-1500:]})
'''
OWN_KIND = {"skipped": "Skipped", "xfailed": "XFailed"}
"""The scorer's witness kind that matches an own outcome that is not a pass or a failure."""


@dataclass
class Own:
    outcomes: dict[str, str]
    """node id -> passed, failed, error, skipped, xfailed, xpassed (in collection order)."""
    texts: dict[str, str]
    collection_errors: dict[str, str]
    exit_code: int | None
    duration_s: float


@dataclass
class Row:
    node_id: str
    own: str
    in_process: str
    isolated: str
    in_process_class: str
    isolated_class: str
    """agree, fallback: <reason>, disagree, or incomplete: <why> (the run gave no records:
    it ran out of ``--budget`` or broke off; a speed or harness limit, not a verdict)."""
    own_text: str = ""


@dataclass
class ProjectResult:
    name: str
    version: str
    tests: list[Row] = field(default_factory=list)
    collection_errors: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    durations: dict[str, float] = field(default_factory=dict)
    own_exit: int | None = None
    """The project's own pytest's exit status (None: it ran out of ``--budget``)."""
    evidence: dict[str, str] = field(default_factory=dict)
    """Each scorer mode's run: completeness, exit, the tail of its output."""

    def counts(self, mode: str) -> dict[str, Any]:
        key = "isolated_class" if mode == "isolated" else "in_process_class"
        classes = [getattr(t, key) for t in self.tests]
        reasons = Counter(c.removeprefix("fallback: ") for c in classes if c.startswith("fallback"))
        return {
            "tests": len(classes),
            "agree": classes.count("agree"),
            "fallback": sum(reasons.values()),
            "fallback_reasons": dict(reasons.most_common()),
            "disagree": classes.count("disagree"),
            "incomplete": sum(c.startswith("incomplete") for c in classes),
        }


# --- the project's own pytest ---------------------------------------------------------------


def own_status(rows: Sequence[dict[str, Any]]) -> str:
    """One test's outcome from its setup/call/teardown reports, as pytest's summary says it."""
    status = "error"
    for row in rows:
        when, outcome, xfail = row["when"], row["outcome"], row["wasxfail"]
        if outcome == "failed":
            if when == "call":
                return "failed"  # a strict xpass is reported as a failure too
            return "error"
        if outcome == "skipped":
            return "xfailed" if xfail else "skipped"
        if when == "call":
            status = "xpassed" if xfail else "passed"
    return status


def run_own(tree: Path, python: Path, roots: Sequence[str], budget_s: float) -> Own:
    """The project's own pytest in a copy of ``tree`` (its writes never reach the scorer's)."""
    with tempfile.TemporaryDirectory(prefix="pw-own-") as scratch:
        work = Path(scratch) / "tree"
        shutil.copytree(tree, work, symlinks=True)
        plugin_dir = Path(scratch) / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / f"{REPORT_LOG}.py").write_text(REPORT_LOG_SOURCE, encoding="utf-8")
        log = Path(scratch) / "log.jsonl"
        paths = [str(plugin_dir), *(str(work / r) for r in roots)]
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
            "PYTHONPATH": os.pathsep.join(paths),
            "PW_CONFORMANCE_LOG": str(log),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        argv = [str(python), "-m", "pytest", "-p", REPORT_LOG, "--hypothesis-seed", str(SEED)]
        started = time.monotonic()
        try:
            done = subprocess.run(
                argv, cwd=work, env=env, capture_output=True, text=True, timeout=budget_s
            )
            code: int | None = done.returncode
        except subprocess.TimeoutExpired:
            code = None
        duration = time.monotonic() - started
        rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    by_node: dict[str, list[dict[str, Any]]] = {}
    errors: dict[str, str] = {}
    for row in rows:
        if row["when"] == "collect":
            errors[row["nodeid"]] = row["text"]
        else:
            by_node.setdefault(row["nodeid"], []).append(row)
    outcomes = {node: own_status(reports) for node, reports in by_node.items()}
    texts = {
        node: next((r["text"] for r in reports if r["text"]), "")
        for node, reports in by_node.items()
    }
    return Own(outcomes, texts, errors, code, round(duration, 1))


# --- the scorer's runner ---------------------------------------------------------------------


def _props(node_ids: Sequence[str]) -> list[PropertyTarget]:
    return [PropertyTarget(f"t{i:04d}", node) for i, node in enumerate(node_ids)]


def scorer_outcomes(run: PropertyRun, targets: Sequence[PropertyTarget]) -> dict[str, Any]:
    """node id -> (status, witness, isolation) of the run's record, or missing. A test that
    failed isolated and passed when run again in-process is judged as the scorer judges a
    guard that does so on the parent and on the patch (scorer/_recheck.py): in-process,
    named, a fallback here."""
    run = reconcile_pair(run, run)[0]
    records = {r.prop: r for r in run.records}
    out: dict[str, Any] = {}
    for target in targets:
        record = records.get(target.prop)
        if record is None:
            out[target.node_id] = ("missing", "", "")
        else:
            out[target.node_id] = (record.status, record.witness, record.isolation)
    return out


def classify(own: str, status: str, witness: str, isolation: str) -> str:
    """agree, fallback: <reason>, or disagree (see the module's docstring)."""
    if isolation.startswith("in-process: "):
        return "fallback: " + isolation.removeprefix("in-process: ")
    if status == "missing":
        return "disagree"
    kind = witness.split("|")[1] if witness.count("|") >= 2 else ""
    if own == "passed":
        return "agree" if status == "pass" else "disagree"
    if status == "pass":
        return "disagree"
    expected = OWN_KIND.get(own)
    if expected is not None:
        return "agree" if kind == expected else "disagree"
    return "disagree" if kind in OWN_KIND.values() else "agree"


def _shown(outcome: tuple[str, str, str]) -> str:
    status, witness, _isolation = outcome
    return status if not witness else f"{status} ({witness.split('|', 1)[1]})"


def _evidence(run: PropertyRun) -> str:
    process = run.process
    lines = [
        f"complete={run.complete} exit={process.exit_code} timed_out={process.timed_out} "
        f"idle_timed_out={process.idle_timed_out} duration={process.duration_s:.1f}s",
        *(f"problem: {p}" for p in run.problems),
        *(f"shadowed: {s}" for s in run.shadowed),
        "--- stdout (tail)",
        process.stdout[-6000:],
        "--- stderr (tail)",
        process.stderr[-3000:],
    ]
    if run.product is not None:
        lines += ["--- product stderr (tail)", run.product.stderr[-3000:]]
    return "\n".join(lines)


# --- one project ----------------------------------------------------------------------------


def envs_dir_default() -> Path:
    return cache_dir().parent / "conformance-envs"


def run_project(
    project: Project, scratch: Path, budget_s: float, cache: Path | None, envs: Path
) -> ProjectResult:
    result = ProjectResult(project.name, project.version)
    archive = fetch(project.name, project.version, project.sha256, cache=cache)
    tree = unpack(archive, scratch / project.name)
    layout = detect_layout(tree)
    declared = read_declarations(tree)
    declarations = Declarations(
        requirements=(*declared.requirements, *project.test_requires),
        sources=(*declared.sources, "the conformance corpus's test_requires"),
        dropped=declared.dropped,
        project=declared.project,
        version=declared.version,
    )
    started = time.monotonic()
    env = build_env(envs, declarations, project_packages=layout.packages)
    result.durations["env"] = round(time.monotonic() - started, 1)
    own = run_own(tree, env.python, layout.roots, budget_s)
    result.durations["own"] = own.duration_s
    result.collection_errors = own.collection_errors
    result.own_exit = own.exit_code
    if own.exit_code is None:
        result.problems.append(f"own pytest: not finished in {budget_s:.0f}s")
    elif not own.outcomes:
        result.problems.append(f"own pytest ran no test (exit {own.exit_code})")
    node_ids = list(own.outcomes)
    # A test parametrized over a set names its cases by their place ([expected0]): which
    # case has which id depends on the hash seed, and the own run and each scorer run have
    # their own (isodate's test_parse). contract check refuses such an id, so the scorer
    # runs the function, as a contract must name it, and each case is compared with that.
    files = sorted({n.split("::", 1)[0] for n in node_ids})
    collect_config = SandboxConfig(python=str(env.python), limits=Limits(wall_time_s=budget_s))
    unordered = set(collect_tests(tree, files, collect_config, layout=layout).unordered)

    def scored_as(node: str) -> str:
        function = node.split("[", 1)[0]
        return function if function in unordered else node

    targets = _props(list(dict.fromkeys(scored_as(n) for n in node_ids)))
    # A test that drives product code forever in quick calls (h11's loops on `type(event) is
    # h11.ConnectionClosed`, never true for a handle) ends at its deadline, as in `task
    # from-fix`, instead of taking the whole run and its records with it.
    limits = Limits(
        wall_time_s=budget_s, idle_time_s=min(budget_s, 120.0), test_timeout_s=TEST_TIMEOUT_S
    )
    scored: dict[str, dict[str, Any]] = {}
    incomplete: dict[str, str] = {}
    for mode in MODES:
        config = SandboxConfig(python=str(env.python), oracle=mode, limits=limits)
        started = time.monotonic()
        run = run_properties(tree, targets, SEED, config, layout=layout, recheck_failures=True)
        result.durations[mode] = round(time.monotonic() - started, 1)
        scored[mode] = scorer_outcomes(run, targets)
        result.evidence[mode] = _evidence(run)
        # The whole output beside the tree: every failure's traceback, for --keep.
        (scratch / project.name / f"{mode}.stdout.txt").write_text(run.process.stdout)
        if not run.complete:
            why = "timed out" if run.process.timed_out else "; ".join(run.problems[:1])
            result.problems.append(f"{mode}: the run did not complete ({why})")
            incomplete[mode] = f"incomplete: {why or 'no end marker'}"
    for node in node_ids:
        own_outcome = own.outcomes[node]
        inproc, isolated = (scored[mode][scored_as(node)] for mode in MODES)
        result.tests.append(
            Row(
                node_id=node,
                own=own_outcome,
                in_process=_shown(inproc),
                isolated=_shown(isolated) + (f" [{isolated[2]}]" if isolated[2] else ""),
                in_process_class=incomplete.get("in-process") or classify(own_outcome, *inproc),
                isolated_class=incomplete.get("isolated") or classify(own_outcome, *isolated),
                own_text=own.texts.get(node, "")[-600:],
            )
        )
    return result


# --- report ---------------------------------------------------------------------------------


def _line(name: str, counts: dict[str, Any]) -> str:
    return (
        f"{name:<18} {counts['tests']:>5} {counts['agree']:>6} {counts['fallback']:>8} "
        f"{counts['disagree']:>8} {counts['incomplete']:>10}"
    )


def report(results: Sequence[ProjectResult]) -> str:
    out = []
    for mode in ("isolated", "in-process"):
        out.append(f"\n{mode} vs own pytest")
        out.append(
            f"{'project':<18} {'tests':>5} {'agree':>6} {'fallback':>8} {'disagree':>8} "
            f"{'incomplete':>10}"
        )
        total: Counter[str] = Counter()
        reasons: Counter[str] = Counter()
        for result in results:
            counts = result.counts(mode)
            out.append(_line(result.name, counts))
            total.update(
                {k: counts[k] for k in ("tests", "agree", "fallback", "disagree", "incomplete")}
            )
            reasons.update(counts["fallback_reasons"])
        out.append(_line("TOTAL", dict(total)))
        for reason, count in reasons.most_common():
            out.append(f"  fallback x{count}: {reason}")
    out.append("\ndisagreements (isolated vs own):")
    for result in results:
        for test in result.tests:
            if test.isolated_class == "disagree":
                out.append(
                    f"  {result.name}: {test.node_id}: own {test.own}, isolated {test.isolated}"
                )
    for result in results:
        for problem in result.problems:
            out.append(f"problem: {result.name}: {problem}")
        for node in result.collection_errors:
            out.append(f"collection error (own pytest): {result.name}: {node}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, metavar="S")
    parser.add_argument("--json", type=Path, metavar="OUT")
    parser.add_argument("--cache", type=Path, help="the sdist cache (default: fidelity's)")
    parser.add_argument("--envs", type=Path, help="where project envs are built and reused")
    parser.add_argument("--keep", type=Path, help="unpack here and keep each run's evidence")
    options = parser.parse_args(argv)
    unknown = [n for n in options.only if n not in BY_NAME]
    if unknown:
        parser.error(f"--only {unknown[0]}: not in the corpus (bench/conformance_corpus.py)")
    chosen = [BY_NAME[n] for n in options.only] if options.only else list(PROJECTS)
    envs = options.envs or envs_dir_default()
    results: list[ProjectResult] = []
    with tempfile.TemporaryDirectory(prefix="pw-conformance-") as tmp:
        scratch = options.keep or Path(tmp)
        scratch.mkdir(parents=True, exist_ok=True)
        for project in chosen:
            print(f"[{time.strftime('%H:%M:%S')}] {project.name} {project.version}", flush=True)
            try:
                result = run_project(project, scratch, options.budget, options.cache, envs)
            except Exception as exc:  # one project's failure is reported, the rest still run
                result = ProjectResult(project.name, project.version)
                result.problems.append(f"not run: {type(exc).__name__}: {exc}"[:500])
            results.append(result)
            iso = result.counts("isolated")
            print(
                f"  tests={iso['tests']} agree={iso['agree']} fallback={iso['fallback']} "
                f"disagree={iso['disagree']} incomplete={iso['incomplete']} "
                f"{result.durations} {result.problems}",
                flush=True,
            )
            if options.json:
                options.json.write_text(
                    json.dumps([asdict(r) for r in results], indent=1), encoding="utf-8"
                )
    print(report(results))
    clean = all(
        r.counts("isolated")["disagree"] == 0 and r.counts("isolated")["incomplete"] == 0
        for r in results
    )
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
