"""The ctest runner: a CMake project's tests as the contract's properties (docs/design/runners.md).

Per tree: configure and build once with CMake in the sandbox (the same bubblewrap profile and
limits as every run), the tree mounted read-only at SOURCE_MOUNT and the build directory,
outside the tree, as the writable working directory. The build is cached per tree content
for the life of the process: the three seeds of one tree share it. Per seed: a copy of the
build for this run alone, and ``ctest --output-junit`` on the contract's tests with the seed
in the contract's environment variable.

Trust: there is no isolated oracle here. A test's assertions are compiled into the binary
that runs the product's code, so product code shares the process that reports the result
(the ``runner_trust`` check names it). What holds is what the sandbox holds: the sources are
read-only, the contract paths are the parent's (restored by the scorer), each run has its own
copy of the build, and the JUnit file is checked against ctest's exit status.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._argv import TREE_MOUNT, LaunchSpec
from ._config import Limits, SandboxConfig
from ._errors import ConfigError
from ._launch import launch, prepare_writable_tree
from ._pytest_runner import AgentRun, PropertyRecord, PropertyRun, PropertyTarget, TestOutcome
from ._supervise import ProcessResult
from ._trees import remove_copy, trees_dir

SOURCE_MOUNT = "/source"
"""Where the tree appears (read-only) in a ctest run; the build is the working directory."""
JUNIT_FILE = "patchwarden-junit.xml"
"""ctest's JUnit report, in the run's own copy of the build directory."""
JUNIT_MAX_BYTES = 16 * 1024 * 1024
MIN_CTEST = (3, 21)
"""``ctest --output-junit`` appeared in CMake 3.21."""
BUILD_PARALLEL = 2
CACHED_BUILDS = 8
"""Builds kept per process (a tree's three seeds share one; a long-lived scorer keeps the
last few trees' builds)."""
TRUST = "compiled-in"
"""The ctest runner's trust level: the assertions share the product's process."""

_ASSERTION = re.compile(r"(?P<file>[^\s:]+):(?P<line>\d+):[^\n]*Assertion [`'].*' failed")
_COMPILE_ERROR = re.compile(
    r"^(?P<file>[^\s:]+):(?P<line>\d+):(?:\d+:)?\s*(?:fatal )?error\b", re.M
)
_CMAKE_ERROR = re.compile(r"^CMake Error at (?P<file>[^\s:]+):(?P<line>\d+)", re.M)
_CTEST_LINE = re.compile(
    r"Test\s+#\d+: (?P<name>.+?) \.+\s*(?:\*+)?(?P<status>[^*\n]*?)\**\s+[\d.]+ sec"
)


@dataclass(frozen=True)
class Build:
    """One tree's configure-and-build, cached for its seeds."""

    ok: bool
    directory: Path
    witness: str
    """``build|<file:line of the first error>`` (or ``build|exit N``) when not ok."""
    process: ProcessResult
    """The last step that ran (configure, or build)."""
    definitions: dict[str, str] = field(default_factory=dict)
    """Each test's definition as ctest reads it (command and properties, the build and
    source paths written as placeholders): a record's ``settings``, compared with the
    parent's by the ``shadowing`` check. A patch that sets a test's ENVIRONMENT (the seed),
    WILL_FAIL or its command from a CMake file outside the contract paths shows there."""


_builds: dict[str, Build] = {}
_builds_lock = threading.Lock()


@atexit.register
def _drop_builds() -> None:
    """The cache lives as long as the process: its builds go with it."""
    with _builds_lock:
        homes = [b.directory.parent for b in _builds.values()]
        _builds.clear()
    for home in homes:
        remove_copy(home)


def ctest_version() -> tuple[int, int]:
    """The host's ctest version (the sandbox runs the same binary); ConfigError when there
    is none or it is older than 3.21."""
    try:
        out = subprocess.run(
            ["ctest", "--version"], capture_output=True, text=True, check=False, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        raise ConfigError(
            "the ctest runner needs cmake and ctest (apt-get install cmake g++)", where="ctest"
        ) from None
    found = re.search(r"(\d+)\.(\d+)", out)
    version = (int(found[1]), int(found[2])) if found else (0, 0)
    if version < MIN_CTEST:
        raise ConfigError(
            f"ctest {MIN_CTEST[0]}.{MIN_CTEST[1]} or newer is needed for --output-junit, "
            f"found {out.strip()[:60] or 'none'}",
            where="ctest",
        )
    return version


def tree_digest(tree: Path) -> str:
    """What a build depends on: every file's path, executable bit and bytes (links as
    links), ``.git`` left out."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not (Path(root) == tree and d == ".git"))
        for name in sorted(files):
            if Path(root) == tree and name == ".git":
                continue
            path = Path(root) / name
            rel = path.relative_to(tree).as_posix()
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                payload = b"link:" + os.readlink(path).encode()
            else:
                payload = path.read_bytes()
            digest.update(f"{rel}\0{info.st_mode & 0o111}\0{len(payload)}\0".encode())
            digest.update(payload)
    return digest.hexdigest()


def _places(tree: Path, build: Path, config: SandboxConfig) -> tuple[str, str]:
    """(source, build) as the sandboxed command sees them."""
    if config.backend == "bubblewrap":
        return SOURCE_MOUNT, TREE_MOUNT
    return str(tree.resolve()), str(build.resolve())


def _step(
    argv: Sequence[str],
    tree: Path,
    build: Path,
    config: SandboxConfig,
    limits: Limits | None,
    env: dict[str, str] | None = None,
    cancel: threading.Event | None = None,
    on_output: Callable[[bytes], None] | None = None,
) -> ProcessResult:
    spec = LaunchSpec(
        argv=list(argv),
        tree=build,
        tree_writable=True,
        env=env or {},
        limits=limits,
        readonly_mounts=[(tree, SOURCE_MOUNT)],
    )
    return launch(spec, config, cancel=cancel, on_output=on_output)


def _relative(path: str, tree: Path) -> str:
    for prefix in (SOURCE_MOUNT, str(tree.resolve()), str(tree)):
        if path.startswith(prefix + "/"):
            return path[len(prefix) + 1 :]
    return path


def build_witness(output: str, tree: Path, exit_code: int | None) -> str:
    """``build|<file:line>`` of the first compiler or CMake error in ``output``; else the
    exit status."""
    found = [m for m in (_COMPILE_ERROR.search(output), _CMAKE_ERROR.search(output)) if m]
    if found:
        first = min(found, key=lambda m: m.start())
        return f"build|{_relative(first['file'], tree)}:{first['line']}"
    return f"build|exit {exit_code if exit_code is not None else 'killed'}"


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """One builder per tree content, across threads and processes."""
    lock = trees_dir() / f"ctest-{name}.lock"
    with open(lock, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_tree(tree: Path, config: SandboxConfig, limits: Limits | None = None) -> Build:
    """The tree's build: configure and build in the sandbox, or the cached one."""
    key = tree_digest(tree)
    with _locked(key):
        with _builds_lock:
            cached = _builds.get(key)
        if cached is not None and cached.directory.is_dir():
            return cached
        ctest_version()
        home = Path(tempfile.mkdtemp(prefix="ctest-build-", dir=trees_dir()))
        directory = home / "build"
        directory.mkdir()
        prepare_writable_tree(directory, config)
        source, inside = _places(tree, directory, config)
        configure = ["cmake", "-S", source, "-B", inside, "-DCMAKE_BUILD_TYPE=Debug"]
        process = _step(configure, tree, directory, config, limits)
        if process.exit_code == 0:
            make = ["cmake", "--build", inside, "--parallel", str(BUILD_PARALLEL)]
            process = _step(make, tree, directory, config, limits)
        ok = process.exit_code == 0
        output = f"{process.stdout}\n{process.stderr}"
        build = Build(
            ok=ok,
            directory=directory,
            witness="" if ok else build_witness(output, tree, process.exit_code),
            process=process,
            definitions=_definitions(tree, directory, config, limits) if ok else {},
        )
        _remember(key, build)
        return build


def _definitions(
    tree: Path, directory: Path, config: SandboxConfig, limits: Limits | None
) -> dict[str, str]:
    """``ctest --show-only=json-v1`` in the fresh build: test name -> its definition (one
    canonical JSON line). Unreadable output gives no definitions, which differ from any."""
    source, inside = _places(tree, directory, config)
    argv = ["ctest", "--test-dir", inside, "--show-only=json-v1"]
    process = _step(argv, tree, directory, config, limits)
    try:
        tests = json.loads(process.stdout).get("tests", [])
    except (ValueError, AttributeError):
        return {}
    out = {}
    for test in tests if isinstance(tests, list) else []:
        if not isinstance(test, dict) or not isinstance(test.get("name"), str):
            continue
        shown = {"command": test.get("command"), "properties": test.get("properties")}
        text = json.dumps(shown, sort_keys=True).replace(inside, "<build>")
        out[test["name"]] = "ctest " + text.replace(source, "<source>")
    return out


def _remember(key: str, build: Build) -> None:
    with _builds_lock:
        _builds[key] = build
        old = list(_builds)[:-CACHED_BUILDS]
        dropped = [_builds.pop(k) for k in old]
    for gone in dropped:
        # A run still copying it holds nothing but its own copy once started; an evicted
        # build is rebuilt on its next use.
        remove_copy(gone.directory.parent)


def _name_regex(names: Sequence[str]) -> str:
    """A ctest ``-R`` expression matching exactly ``names`` (CMake's regex syntax)."""
    escaped = [re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", n) for n in names]
    return "^(" + "|".join(escaped) + ")$"


@contextlib.contextmanager
def _run_build(build: Build, config: SandboxConfig) -> Iterator[Path]:
    """The build for one run: a copy of its own under bubblewrap (each run writes only its
    own), the cached build itself without isolation (its absolute paths are the host's)."""
    if config.backend != "bubblewrap":
        yield build.directory
        return
    home = Path(tempfile.mkdtemp(prefix="ctest-run-", dir=trees_dir()))
    try:
        copy = home / "build"
        shutil.copytree(build.directory, copy, symlinks=True)
        prepare_writable_tree(copy, config)
        yield copy
    finally:
        remove_copy(home)


def failure_witness(prop: str, output: str, ctest_status: str, tree: Path) -> str:
    """The failure's class: the ``file:line`` of the failed ``assert``, else the signal or
    the exit status ctest saw (addresses, temp paths and timings are left out)."""
    found = _ASSERTION.search(output)
    if found:
        return f"{prop}|assert|{_relative(found['file'], tree)}:{found['line']}"
    status = " ".join(ctest_status.replace("Exception:", "").split()) or "Failed"
    kind = "exit" if status == "Failed" else "timeout" if status == "Timeout" else "signal"
    return f"{prop}|{kind}|{status}"


def ctest_statuses(stdout: str) -> dict[str, str]:
    """Each test's status as ctest printed it (``Passed``, ``Failed``, ``SegFault``...)."""
    return {m["name"]: m["status"].strip() for m in _CTEST_LINE.finditer(stdout)}


def read_junit(raw: bytes) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """Test name -> (junit status, its output), and the problems reading it."""
    if len(raw) > JUNIT_MAX_BYTES:
        return {}, [f"JUnit report larger than {JUNIT_MAX_BYTES} bytes"]
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as exc:
        return {}, [f"JUnit report is not XML: {exc}"]
    cases: dict[str, tuple[str, str]] = {}
    problems = []
    for case in root.iter("testcase"):
        name = case.get("name", "")
        if name in cases:
            problems.append(f"JUnit report names {name!r} twice")
            cases[name] = ("fail", "twice in the report")
            continue
        out = "".join(e.text or "" for e in case.iter("system-out"))
        cases[name] = (case.get("status", ""), out)
    return cases, problems


def run_ctest_properties(
    tree: Path,
    targets: Sequence[PropertyTarget],
    seed: int,
    config: SandboxConfig,
    *,
    seed_env: str,
    limits: Limits | None = None,
) -> PropertyRun:
    """Every target (a ctest test name) for one seed: the tree's build, then ctest in a copy
    of it. A failed build fails every target with the build's witness; a target the JUnit
    report does not name is missing, never a pass."""
    build = build_tree(tree, config, limits)
    if not build.ok:
        records = [
            PropertyRecord(t.prop, "fail", build.witness, 0.0, isolation=TRUST) for t in targets
        ]
        return PropertyRun(
            seed=seed,
            records=records,
            missing=[],
            complete=True,
            shadowed=[],
            problems=["the build failed: every property fails on this side"],
            process=build.process,
        )
    with _run_build(build, config) as directory:
        _source, inside = _places(tree, directory, config)
        junit = directory / JUNIT_FILE
        junit.unlink(missing_ok=True)
        argv = [
            "ctest",
            "--test-dir",
            inside,
            "--output-junit",
            JUNIT_FILE,
            "--no-tests=error",
            "-R",
            _name_regex([t.node_id for t in targets]),
        ]
        process = _step(argv, tree, directory, config, limits, env={seed_env: str(seed)})
        raw = junit.read_bytes() if junit.is_file() and not junit.is_symlink() else b""
    cases, problems = read_junit(raw) if raw else ({}, ["no JUnit report"])
    statuses = ctest_statuses(process.stdout)
    forged = _forged(cases, process)
    records, missing = [], []
    for target in targets if not forged else []:
        case = cases.get(target.node_id)
        if case is None:
            missing.append(target.prop)
            continue
        status, output = case
        shown = build.definitions.get(target.node_id, "")
        if status == "run":
            records.append(PropertyRecord(target.prop, "pass", "", 0.0, shown, TRUST))
            continue
        ctest_status = statuses.get(target.node_id, status)
        witness = failure_witness(target.prop, output, ctest_status, tree)
        records.append(PropertyRecord(target.prop, "fail", witness, 0.0, shown, TRUST))
    if forged:
        missing = [t.prop for t in targets]
    return PropertyRun(
        seed=seed,
        records=records,
        missing=missing,
        complete=bool(cases) and not forged,
        shadowed=[],
        problems=problems,
        process=process,
        forged=forged,
        channel=raw.decode("utf-8", "replace"),
    )


def _forged(cases: dict[str, tuple[str, str]], process: ProcessResult) -> list[str]:
    """Why the JUnit report cannot be believed: it disagrees with ctest's exit status (a
    test process can write the report; it cannot change how ctest exits)."""
    if not cases:
        return []
    all_pass = all(status == "run" for status, _ in cases.values())
    if process.exit_code == 0 and not all_pass:
        return ["ctest exited 0 but the JUnit report has a failing test"]
    if process.exit_code != 0 and all_pass:
        return [f"ctest exited {process.exit_code} but the JUnit report has every test passing"]
    return []


def list_ctest_tests(tree: Path, config: SandboxConfig, limits: Limits | None = None) -> list[str]:
    """The tree's ctest test names (``ctest -N`` after a configure and build), in order."""
    build = build_tree(tree, config, limits)
    if not build.ok:
        raise ConfigError(f"the CMake project does not build ({build.witness})", where=str(tree))
    with _run_build(build, config) as directory:
        _source, inside = _places(tree, directory, config)
        process = _step(["ctest", "--test-dir", inside, "-N"], tree, directory, config, limits)
    return re.findall(r"^\s*Test\s+#\d+: (.+?)\s*$", process.stdout, re.M)


AGENT_TEXT_CHARS = 4000


def run_agent_ctest(
    tree: Path,
    seed: int,
    config: SandboxConfig,
    *,
    seed_env: str,
    tests: Sequence[str] = (),
    exclude: Sequence[str] = (),
    limits: Limits | None = None,
    cancel: threading.Event | None = None,
    on_output: Callable[[bytes], None] | None = None,
) -> AgentRun:
    """The agent's ``run_tests`` on a CMake project: the worktree's build (cached per
    content), then ctest on ``tests`` (default: all) but ``exclude`` (the quarantined), the
    first seed in ``seed_env``. Each failure's summary leads with the failed ``assert``'s
    ``file:line``; a build that fails is one ``error`` outcome named ``build`` whose summary
    is the first error's ``file:line``."""
    build = build_tree(tree, config, limits)
    if not build.ok:
        output = f"{build.process.stdout}\n{build.process.stderr}"
        error = TestOutcome(
            node_id="build",
            outcome="error",
            duration_s=build.process.duration_s,
            text=output[-AGENT_TEXT_CHARS:],
            summary=build.witness.removeprefix("build|"),
        )
        return AgentRun(
            outcomes=[],
            complete=False,
            process=build.process,
            problems=[f"the build failed at {error.summary}"],
            collection_errors=[error],
        )
    with _run_build(build, config) as directory:
        _source, inside = _places(tree, directory, config)
        junit = directory / JUNIT_FILE
        junit.unlink(missing_ok=True)
        argv = ["ctest", "--test-dir", inside, "--output-junit", JUNIT_FILE]
        if tests:
            argv += ["-R", _name_regex(tests)]
        if exclude:
            argv += ["-E", _name_regex(exclude)]
        process = _step(
            argv,
            tree,
            directory,
            config,
            limits,
            env={seed_env: str(seed)},
            cancel=cancel,
            on_output=on_output,
        )
        raw = junit.read_bytes() if junit.is_file() and not junit.is_symlink() else b""
    cases, problems = read_junit(raw) if raw else ({}, ["no JUnit report"])
    statuses = ctest_statuses(process.stdout)
    outcomes = []
    for name, (status, output) in cases.items():
        outcome = {"run": "passed", "fail": "failed"}.get(status, "skipped")
        summary = ""
        if outcome == "failed":
            witness = failure_witness(name, output, statuses.get(name, ""), tree)
            summary = witness.split("|", 2)[2] + "\n" + output.strip()[-AGENT_TEXT_CHARS:]
        outcomes.append(
            TestOutcome(
                node_id=name,
                outcome=outcome,
                duration_s=0.0,
                text=output[-AGENT_TEXT_CHARS:],
                summary=summary,
            )
        )
    return AgentRun(outcomes=outcomes, complete=bool(raw), process=process, problems=problems)
