"""The trusted pytest runner: one sandboxed pytest process per tree and seed.

Results travel only through the reporter's channel, a pipe the runner reads
outside the sandbox. In a scorer run every line on it is authenticated with
the run's secret (sandbox/_channel.py): a run whose channel, exit status or
hidden canaries are not exactly right is ``forged``, and keeps no record. A
run without its end marker is incomplete and its missing records stay missing
(never a pass). See docs/design/runner.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from ._argv import LaunchSpec
from ._channel import CANARY_DIR, RunSecret, canary_source, new_secret, verify_channel
from ._config import Limits, SandboxConfig
from ._entropy import RunEntropy
from ._env import find_project_copies
from ._inside import ORACLE, program
from ._launch import launch
from ._layout import ImportLayout, detect_layout
from ._product import ProductProcess as _ProductProcess
from ._product import runner_env as _base_env
from ._pytest_config import conftest_plugins, plugin_args, required_plugins
from ._runtime import pytest_entry_points, python_runtime
from ._supervise import ProcessResult
from ._trees import run_copy

REPORTER_SOURCE = program(ORACLE)
SENTINEL = "__patchwarden_sentinel__"  # = _inside/_boot.py (tests/test_reporter.py)
CHANNEL_READ_BYTES = 65536
CHANNEL_MAX_BYTES = 16 * 1024 * 1024  # far above any honest run's records; bounds a flood
CALL_TIMEOUT_SHARE = 0.75
PRODUCT_RESTARTS = 3
"""How many times one run starts a new product process for the properties that started
after the last one died; after that they fail with the death as their witness."""
"""A call into the product process may take this share of the idle limit. The oracle beats
on a pipe its supervisor counts as output while it waits (``LaunchSpec.beat_fd``), so the
idle limit measures only the oracle's own silent work and a hung call is the call's
``ProductHung``, never a run killed at the idle limit."""
TESTS_DIR_MOUNT = "/property-tests"
"""Where a tests directory kept apart from the tree appears under bubblewrap."""


@dataclass(frozen=True)
class PropertyTarget:
    """A contract property and the pytest node id that checks it."""

    prop: str
    node_id: str


@dataclass(frozen=True)
class PropertyRecord:
    prop: str
    status: str
    witness: str
    duration_s: float
    settings: str = ""
    """The Hypothesis settings the property's test ran with (empty if none)."""
    isolation: str = "in-process"
    """`isolated` (the product ran in a process of its own), `in-process: <why>` (it could
    not, and the property ran in the process that imports the product) or `in-process`
    (the operator's `sandbox.oracle`)."""
    cause: str = ""
    """Why it failed for a reason of the run's rather than the product's answer, as the
    exception and its file:line (``it did not collect: ImportError: ... (pkg/t.py:3)``,
    ``its setup failed: FixtureLookupError: fixture 'mocker' not found (...)``): diagnostics
    for a person, never read by a decision. Empty otherwise."""
    recheck: str = ""
    """For a property that failed isolated: its status (``pass``/``fail``) when the same
    seed ran it again in-process, in a run of its own; empty when it was not run again (or
    that run did not complete). The scorer believes an in-process ``pass`` only where the
    parent's run says the same (scorer/_recheck.py, docs/design/isolated-oracle.md,
    "Failures checked in-process")."""


@dataclass(frozen=True)
class PropertyRun:
    """What one sandboxed pytest process reported for one seed."""

    seed: int
    records: list[PropertyRecord]
    """One per scheduled property that reported, in schedule (contract) order."""
    missing: list[str]
    complete: bool
    """The reporter's authenticated end marker arrived, last and in sequence."""
    shadowed: list[str]
    problems: list[str]
    process: ProcessResult
    forged: list[str] = field(default_factory=list)
    """Why the channel cannot be believed (empty: authentic). Any line makes the run
    `forged` on the scorecard, and none of its records is used."""
    channel: str = ""
    """The channel as it came back (for reviewers; a later run's key differs)."""
    canaries: list[str] = field(default_factory=list)
    """The run's hidden canary properties (ids), left out of `records`."""
    observed: list[str] = field(default_factory=list)
    """Frame introspection by the project's code (see docs/design/runner.md): the scorer
    rejects what the patch's runs do and the parent's do not."""
    product: ProcessResult | None = None
    """The product process of an isolated run (None: every property ran in-process)."""
    configuration: list[str] = field(default_factory=list)
    """What of the project's pytest configuration (read from the parent) the run left out,
    each with why: scheduling and output options, plugins that only schedule or report
    (sandbox/_pytest_config.py)."""
    probes: list[str] = field(default_factory=list)
    """What product code did to probe its environment in the product process
    (``KIND TARGET from FILE:LINE (FUNCTION)``; docs/design/isolated-oracle.md, "Probes"):
    the scorer's `probes` check compares the patch's with the parent's."""
    entropy: RunEntropy | None = None
    """The hash seed and ``random`` seed its processes ran with (sandbox/_entropy.py)."""


@dataclass(frozen=True)
class TestOutcome:
    """One test's outcome in an agent run (the project's own configuration)."""

    __test__ = False  # not a pytest test class

    node_id: str
    outcome: str
    duration_s: float
    text: str
    """pytest's report of a failure, bounded (empty for a pass)."""
    summary: str = ""
    """The failure as the agent reads it first: the frames in the tree, the exception line,
    Hypothesis' failing example (sandbox/_inside/_failures.py)."""


@dataclass(frozen=True)
class AgentRun:
    outcomes: list[TestOutcome]
    complete: bool
    process: ProcessResult
    problems: list[str] = field(default_factory=list)
    collection_errors: list[TestOutcome] = field(default_factory=list)
    """Test modules that failed to import (node id of the module, outcome ``error``)."""
    configuration: list[str] = field(default_factory=list)
    """What of the project's pytest configuration the run left out, as the scorer's runs
    (``PropertyRun.configuration``)."""


def _interpreter(config: SandboxConfig) -> str:
    """The real interpreter path (a shim or bare name would not resolve inside)."""
    return python_runtime(config).executable


def layout_for(tree: Path, config: SandboxConfig, *, start: str = ".") -> ImportLayout:
    """The tree's import layout, or the operator's roots (``sandbox.import_roots``)."""
    return detect_layout(tree, override=config.import_roots, start=start)


def pytest_world(
    config: SandboxConfig, layout: ImportLayout, mode: str
) -> tuple[dict[str, Any], list[str]]:
    """The project's pytest configuration as the runner applies it in ``mode`` (the ini keys
    and options kept, the env's plugins to load), and what it leaves out, each with why.
    The scorer's and the agent's runs differ only in the options that select tests."""
    project = layout.pytest
    names, modules, dropped_plugins = plugin_args(
        pytest_entry_points(_interpreter(config)), project
    )
    world = {**project.to_json(mode), "plugins": names, "plugin_modules": modules}
    return world, [*project.dropped, *dropped_plugins]


def configuration_problems(tree: Path, config: SandboxConfig, layout: ImportLayout) -> list[str]:
    """Why the project's pytest configuration (``layout.pytest``) cannot be honoured with the
    configured interpreter: a file that does not parse, a required plugin the env lacks, a
    conftest's ``pytest_plugins`` naming a module neither the env nor the tree has."""
    project = layout.pytest
    problems = list(project.problems)
    entry_points = pytest_entry_points(_interpreter(config))
    installed = {canonicalize_name(dist) for _, _, dist in entry_points}
    for name in required_plugins(project):
        if canonicalize_name(name) not in installed:
            problems.append(
                f"{project.source}: required plugin {name} is not in the env "
                "(add it to the declarations and run `patchwarden env build`)"
            )
    wanted = conftest_plugins(tree)
    modules = sorted({module for _, module in wanted})
    in_env = find_project_copies(_interpreter(config), modules) if modules else {}
    for conftest, module in wanted:
        top = module.split(".", 1)[0]
        # pytest puts a conftest's own directory on sys.path (prepend import mode): a module
        # beside it counts as the tree's.
        places = (*layout.roots, str(Path(conftest).parent))
        in_tree = any(
            (tree / root / top).is_dir() or (tree / root / f"{top}.py").is_file() for root in places
        )
        if module not in in_env and not in_tree:
            problems.append(f"{conftest}: pytest_plugins names {module}, which the env lacks")
    return problems


def configuration_line(problems: Sequence[str]) -> str:
    """The one line that says a project's pytest configuration cannot be honoured."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"the project's pytest configuration cannot be honoured: {problems[0]}{more}"


def _run_reporter(
    tree: Path,
    args: Sequence[str],
    seed: int,
    config: SandboxConfig,
    *,
    contract_paths: Sequence[str],
    tree_writable: bool,
    limits: Limits | None,
    layout: ImportLayout,
    cancel: threading.Event | None = None,
    on_output: Callable[[bytes], None] | None = None,
    secret: RunSecret | None = None,
    readonly_mounts: Sequence[tuple[Path, str]] = (),
    product: _ProductProcess | None = None,
    entropy: RunEntropy | None = None,
) -> tuple[bytes, list[str], ProcessResult, list[str]]:
    """Launch the reporter and return its channel's bytes, problems, process, and what of
    the project's pytest configuration the run left out (``pytest_world``).

    ``entropy``: a scored run's hash seed and ``random`` seed, for the oracle and the
    product process alike; ``seed`` then reaches the oracle alone, as the property's
    Hypothesis seed. None (the agent's runs): ``seed`` is all three, as before.

    The channel is a pipe, not a file: what was written cannot be truncated or
    rewritten later (say by an atexit handler in product code), only added to.
    With a secret, a second pipe carries it to the reporter and is closed here
    before the process starts (see _secret_pipe).
    """
    world, left_out = pytest_world(config, layout, str(args[list(args).index("--mode") + 1]))
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    secret_fd = _secret_pipe(secret) if secret is not None else None
    collected = bytearray()
    overflow = threading.Event()

    def drain() -> None:
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while block := pipe.read(CHANNEL_READ_BYTES):
                if len(collected) + len(block) > CHANNEL_MAX_BYTES:
                    overflow.set()
                    continue
                collected.extend(block)

    reader = threading.Thread(target=drain, name="patchwarden-channel", daemon=True)
    reader.start()
    oracle_fds: tuple[int, ...] = ()
    beat_fd: int | None = None
    if product is not None:
        beat_fd, beat_write = os.pipe()
        os.set_inheritable(beat_write, True)
        assert entropy is not None, "a product process runs only in scored runs"
        ends = product.start(tree, entropy, config, limits or config.limits, layout)
        oracle_fds = (*ends, beat_write)
        cut = list(args).index("--")
        extra = ["--product-fds", ",".join(map(str, oracle_fds))]
        extra += ["--call-timeout", f"{product.call_timeout_s:g}"]
        test_timeout = (limits or config.limits).test_timeout_s
        if test_timeout is not None:
            extra += ["--test-timeout", f"{test_timeout:g}"]
        args = [*args[:cut], *extra, *args[cut:]]
    try:
        argv = [
            _interpreter(config),
            "-s",
            "-P",
            # The program comes on stdin: nothing in the tree can shadow it, and the
            # command line stays short (it is visible in /proc inside the sandbox).
            "-",
            "--report-fd",
            str(write_end),
            "--seed",
            str(seed),
            "--layout",
            json.dumps(layout.to_json()),
            "--pytest",
            json.dumps(world),
            *(["--secret-fd", str(secret_fd)] if secret_fd is not None else []),
            *(["--random-seed", str(entropy.random_seed)] if entropy is not None else []),
            *args,
        ]
        spec = LaunchSpec(
            argv=argv,
            tree=tree,
            tree_writable=tree_writable,
            contract_paths=contract_paths,
            env=_base_env(entropy.hash_seed if entropy is not None else seed),
            pass_fds=((write_end,) if secret_fd is None else (write_end, secret_fd)) + oracle_fds,
            limits=limits,
            stdin=REPORTER_SOURCE.encode(),
            readonly_mounts=readonly_mounts,
            beat_fd=beat_fd,
        )
        process = launch(spec, config, cancel=cancel, on_output=on_output)
    finally:
        # launch() returns only when every process of the run is gone, so with
        # our end closed the reader sees end-of-file.
        os.close(write_end)
        if secret_fd is not None:
            os.close(secret_fd)
        for fd in (*oracle_fds, *([beat_fd] if beat_fd is not None else [])):
            os.close(fd)
        if product is not None:
            product.stop()
        reader.join()
    problems = []
    if overflow.is_set():
        problems.append(f"channel held more than {CHANNEL_MAX_BYTES} bytes; the rest was dropped")
    return bytes(collected), problems, process, left_out


def _secret_pipe(secret: RunSecret) -> int:
    """A pipe holding the run's secret, its write end already closed; returns the read end.

    The secret is a few hundred bytes, far below a pipe's buffer: written whole before the
    process starts, it is gone from the pipe once the reporter has read it.
    """
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, secret.payload())
    finally:
        os.close(write_end)
    os.set_inheritable(read_end, True)
    return read_end


def _plain_objects(raw: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    """Agent mode: one JSON object per line."""
    objects, problems = [], []
    for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # what product code can write: anything
            problems.append(f"channel line {number} is not JSON")
            continue
        if isinstance(obj, dict):
            objects.append(obj)
        else:
            problems.append(f"channel line {number} is not an object")
    return objects, problems


def _record(obj: Mapping[str, Any], seed: int) -> PropertyRecord | None:
    if obj.get("seed") != seed or obj.get("status") not in ("pass", "fail"):
        return None
    if not isinstance(obj.get("prop"), str) or not isinstance(obj.get("witness", ""), str):
        return None
    duration = obj.get("duration_s", 0.0)
    return PropertyRecord(
        prop=obj["prop"],
        status=obj["status"],
        witness=obj.get("witness", ""),
        duration_s=float(duration) if isinstance(duration, int | float) else 0.0,
        settings=str(obj.get("settings", "")),
        isolation=str(obj.get("isolation", "in-process")),
        cause=obj["cause"][:1000] if isinstance(obj.get("cause"), str) else "",
    )


def run_properties(
    tree: Path,
    targets: Sequence[PropertyTarget],
    seed: int,
    config: SandboxConfig,
    *,
    contract_paths: Sequence[str] = (),
    limits: Limits | None = None,
    layout: ImportLayout | None = None,
    tests_dir: Path | None = None,
    entropy: RunEntropy | None = None,
    recheck_failures: bool = False,
) -> PropertyRun:
    """Run every target for one seed in one sandboxed pytest process, with the run's hidden
    canaries, and verify the authenticated channel. What the run's product code writes goes
    to a copy of ``tree`` made for the run (the contract paths read-only), never to ``tree``.

    ``layout``: where the project's code is imported from; the scorer passes the parent's
    to both trees (None: read from ``tree``). ``tests_dir``: a host directory apart from
    the tree that holds the targets' test files (their node ids are relative to it). It is
    mounted read-only at TESTS_DIR_MOUNT and is pytest's root for the run; product code is
    still imported from the tree.

    With ``sandbox.oracle: isolated`` (the default) the product runs in a process of its own
    (docs/design/isolated-oracle.md); a property that cannot runs again, in-process, in a
    second run of its own, and its record says why (``PropertyRecord.isolation``).

    ``recheck_failures``: run each property that failed isolated again, in-process, in a run
    of its own, and keep its status in the record (``PropertyRecord.recheck``): what the
    conformance bench does with one tree; a score asks for the rechecks it needs itself,
    after both trees ran (scorer/_recheck.py).

    ``entropy``: the hash seed and ``random`` seed of every process of the run
    (sandbox/_entropy.py); the scorer gives the parent's and the patch's run of one seed the
    same. None: drawn fresh here. ``seed`` reaches only the oracle, as the Hypothesis seed.
    """
    layout = layout if layout is not None else layout_for(tree, config)
    entropy = entropy if entropy is not None else RunEntropy.draw()

    def one_run(chosen: Sequence[PropertyTarget], product: _ProductProcess | None) -> PropertyRun:
        return _scorer_run(
            tree,
            chosen,
            seed,
            config,
            product=product,
            contract_paths=contract_paths,
            limits=limits,
            layout=layout,
            tests_dir=tests_dir,
            entropy=entropy,
        )

    if config.oracle != "isolated" or not targets:
        return one_run(targets, None)
    # Every target starts isolated: a test module inside a product package is the oracle's
    # own too (sandbox/_inside/_proxy.py, ProductFinder.oracle_own).
    why: dict[str, str] = {}
    isolated = list(targets)
    if not isolated:
        first = None
    else:
        chosen = limits or config.limits
        quiet = chosen.call_timeout_s or chosen.idle_time_s * CALL_TIMEOUT_SHARE
        product = _ProductProcess(contract_paths=contract_paths, call_timeout_s=quiet)
        first = one_run(isolated, product)
        for _ in range(PRODUCT_RESTARTS):
            # The product process died (crashed, hung, exited) under one property: the ones
            # that started after it never met a product. They run again, with a new one.
            orphans = {r.prop for r in first.records if _orphaned(r)}
            if not first.complete or not orphans:
                break
            product = _ProductProcess(contract_paths=contract_paths, call_timeout_s=quiet)
            again = [t for t in isolated if t.prop in orphans]
            first = _rerun(first, one_run(again, product))
        first = replace(
            first,
            records=[
                replace(r, isolation="isolated") if _orphaned(r) else r for r in first.records
            ],
        )
        if first.complete:
            why.update(
                (r.prop, r.isolation.removeprefix("refused: "))
                for r in first.records
                if r.isolation.startswith("refused: ")
            )
    rest = [t for t in targets if t.prop in why]
    second = one_run(rest, None) if rest else None
    merged = _merged(targets, first, second, why)
    failed = {r.prop for r in merged.records if r.status == "fail" and r.isolation == "isolated"}
    if not recheck_failures or not failed or not merged.complete:
        return merged
    return _with_recheck(merged, one_run([t for t in targets if t.prop in failed], None))


def _with_recheck(run: PropertyRun, recheck: PropertyRun) -> PropertyRun:
    """``run`` with each isolated failure's in-process status (``PropertyRecord.recheck``).
    A recheck that did not complete, or whose channel cannot be believed, tells nothing:
    every ``recheck`` stays empty and the run is as it was (its problems noted)."""
    if not recheck.complete or recheck.forged:
        why = "did not complete" if not recheck.complete else "was forged"
        return replace(run, problems=[*run.problems, f"the in-process recheck {why}"])
    statuses = {r.prop: r.status for r in recheck.records}
    return replace(
        run,
        records=[
            replace(r, recheck=statuses[r.prop])
            if r.prop in statuses and r.status == "fail" and r.isolation == "isolated"
            else r
            for r in run.records
        ],
        channel="\n".join((run.channel, recheck.channel)),
    )


def _orphaned(record: PropertyRecord) -> bool:
    """Failed in an isolated run after the run's product process had died."""
    return record.status == "fail" and record.isolation.startswith("orphaned: ")


def _rerun(first: PropertyRun, again: PropertyRun) -> PropertyRun:
    """``first`` with the records of ``again`` (the same run's orphaned properties, run with
    a new product process) in their places; both runs' evidence kept."""
    fresh = {r.prop: r for r in again.records}
    return replace(
        first,
        records=[fresh.get(r.prop, r) for r in first.records],
        missing=first.missing,  # every orphan has its record in first
        complete=first.complete and again.complete,
        shadowed=sorted({*first.shadowed, *again.shadowed}),
        problems=[*first.problems, *again.problems],
        forged=[*first.forged, *again.forged],
        channel="\n".join((first.channel, again.channel)),
        canaries=[*first.canaries, *again.canaries],
        observed=[*first.observed, *again.observed],
        probes=[*first.probes, *again.probes],
    )


def _merged(
    targets: Sequence[PropertyTarget],
    first: PropertyRun | None,
    second: PropertyRun | None,
    why: Mapping[str, str],
) -> PropertyRun:
    """One run's worth of evidence from the isolated run and the in-process one."""
    runs = [r for r in (first, second) if r is not None]
    by_prop: dict[str, PropertyRecord] = {}
    for run in runs:
        for record in run.records:
            if run is second:
                record = replace(record, isolation=f"in-process: {why.get(record.prop, '?')}")
            if record.prop not in by_prop or run is second:
                by_prop[record.prop] = record
    records = [by_prop[t.prop] for t in targets if t.prop in by_prop]
    main_run = runs[0]
    return PropertyRun(
        seed=main_run.seed,
        records=records,
        missing=[t.prop for t in targets if t.prop not in by_prop],
        complete=all(r.complete for r in runs),
        shadowed=sorted({s for r in runs for s in r.shadowed}),
        problems=[p for r in runs for p in r.problems],
        process=main_run.process,
        forged=[f for r in runs for f in r.forged],
        channel="\n".join(r.channel for r in runs),
        canaries=[c for r in runs for c in r.canaries],
        observed=[o for r in runs for o in r.observed],
        product=first.product if first is not None else None,
        configuration=main_run.configuration,
        probes=first.probes if first is not None else [],
        entropy=main_run.entropy,
    )


def _scorer_run(
    tree: Path,
    targets: Sequence[PropertyTarget],
    seed: int,
    config: SandboxConfig,
    *,
    contract_paths: Sequence[str],
    limits: Limits | None,
    layout: ImportLayout,
    tests_dir: Path | None,
    product: _ProductProcess | None,
    entropy: RunEntropy,
) -> PropertyRun:
    """One sandboxed oracle process (and, isolated, its product process) for ``targets``."""
    targets_json = json.dumps([[t.prop, t.node_id] for t in targets])
    options = ["--mode", "scorer", "--targets", targets_json]
    isolated = config.backend == "bubblewrap"
    mounts: list[tuple[Path, str]] = []
    if tests_dir is not None:
        if isolated:
            mounts.append((tests_dir, TESTS_DIR_MOUNT))
            options += ["--spec-root", TESTS_DIR_MOUNT]
        else:
            options += ["--spec-root", str(tests_dir.resolve())]
    with contextlib.ExitStack() as stack:
        canary_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="patchwarden-canary-"))
        # Under bubblewrap the directory is mounted outside the tree; without isolation
        # (development only) the process reads it where it is.
        secret = new_secret(CANARY_DIR if isolated else canary_dir)
        _write_canary(Path(canary_dir), secret)
        if isolated:
            mounts.append((Path(canary_dir), CANARY_DIR))
        # Isolated, the oracle runs no product code and reads the tree as it is; the product
        # process gets a copy of its own. In-process the product runs in the oracle: the run
        # gets a writable copy, the contract paths read-only over it, as the agent's
        # run_tests gets its worktree (a read-only tree would tell product code that the
        # scorer is running; docs/design/isolated-oracle.md).
        run_tree = tree if product is not None else stack.enter_context(run_copy(tree, config))
        raw, problems, process, left_out = _run_reporter(
            run_tree,
            [*options, "--"],
            seed,
            config,
            contract_paths=contract_paths,
            tree_writable=product is None,
            limits=limits,
            layout=layout,
            secret=secret,
            readonly_mounts=mounts,
            product=product,
            entropy=entropy,
        )
    reading = verify_channel(raw, secret, process.exit_code)
    canaries = [c.prop for c in secret.canaries]
    complete = not reading.forged
    if not complete:
        # Nothing on a channel that fails its checks can be trusted: every record of the
        # run stays missing (the gate rejects it as missing_seed).
        problems.append("run not authentic: records discarded (see forged)")
    shadowed = sorted({str(s) for s in (reading.end or {}).get("shadowed", [])})
    seen: dict[str, list[PropertyRecord]] = {}
    for obj in reading.rows if complete else []:
        record = _record(obj, seed)
        if record is None:
            problems.append(f"malformed record on the channel: {json.dumps(obj)[:200]}")
            continue
        if record.prop not in canaries:
            seen.setdefault(record.prop, []).append(record)
    records, missing = [], []
    for target in targets:
        found = seen.get(target.prop, [])
        if not found:
            missing.append(target.prop)
        elif len(found) == 1:
            records.append(found[0])
        else:
            # Two records for one property: the property cannot pass on such evidence.
            problems.append(f"{len(found)} records for {target.prop}")
            records.append(
                PropertyRecord(
                    prop=target.prop,
                    status="fail",
                    witness=f"{target.prop}|ConflictingRecords|channel",
                    duration_s=0.0,
                )
            )
    return PropertyRun(
        seed=seed,
        records=records,
        missing=missing,
        complete=complete,
        shadowed=shadowed,
        problems=problems,
        process=process,
        forged=reading.forged,
        channel=raw.decode("utf-8", "replace"),
        canaries=canaries,
        observed=reading.observed,
        product=product.result if product is not None else None,
        configuration=left_out,
        probes=product.probes if product is not None else [],
        entropy=entropy,
    )


def _write_canary(directory: Path, secret: RunSecret) -> None:
    """The canary file, readable by the sandbox uid through a read-only mount."""
    directory.chmod(0o755)
    path = directory / secret.canary_file
    path.write_text(canary_source(secret), encoding="utf-8")
    path.chmod(0o644)


def run_agent_tests(
    tree: Path,
    pytest_args: Sequence[str],
    seed: int,
    config: SandboxConfig,
    *,
    contract_paths: Sequence[str] = (),
    limits: Limits | None = None,
    cancel: threading.Event | None = None,
    on_output: Callable[[bytes], None] | None = None,
    layout: ImportLayout | None = None,
) -> AgentRun:
    """The agent's own test run: the project's configuration, a writable tree, the project's
    import layout read from the tree itself (None) or given."""
    layout = layout if layout is not None else layout_for(tree, config)
    unhonoured = configuration_problems(tree, config, layout)
    raw, problems, process, left_out = _run_reporter(
        tree,
        ["--mode", "agent", "--targets", "[]", "--", *pytest_args],
        seed,
        config,
        contract_paths=contract_paths,
        tree_writable=True,
        limits=limits,
        layout=layout,
        cancel=cancel,
        on_output=on_output,
    )
    objects, line_problems = _plain_objects(raw)
    problems += line_problems
    if unhonoured:
        problems.insert(0, configuration_line(unhonoured))
    outcomes = [
        TestOutcome(
            node_id=str(o["test"]),
            outcome=str(o.get("outcome", "")),
            duration_s=float(o.get("duration_s") or 0.0),
            text=str(o.get("text", "")),
            summary=str(o.get("summary", "")),
        )
        for o in objects
        if "test" in o
    ]
    collection_errors = [
        TestOutcome(
            node_id=str(o["collection"]),
            outcome="error",
            duration_s=0.0,
            text=str(o.get("text", "")),
            summary=str(o.get("summary", "")),
        )
        for o in objects
        if "collection" in o
    ]
    complete = any(o.get(SENTINEL) is True for o in objects)
    return AgentRun(
        outcomes=outcomes,
        complete=complete,
        process=process,
        problems=problems,
        collection_errors=collection_errors,
        configuration=left_out,
    )
