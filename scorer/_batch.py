"""``score-batch``: many requests, one executor (docs/scale.md).

Each request goes through the three phases of ``score`` (scorer/_score.py) on a thread of
its own: plan, hand its units to the shared executor, wait for them, decide and write the
bundle. Up to ``executor.jobs + 1`` requests are in flight, so while the last units of one
request run, the next request's plan is ready and its units are queued: no slot waits while
work is queued, and at most that many requests hold trees on disk.

Units with the very same inputs (the same tree bytes, seed, properties, contract paths and
limits: typically the parent's schedule, shared by every patch on one base commit) run
once per batch and every request that needs them gets that run (:class:`SharedRuns`); the
bundles name it by its run id.

Every request ends in exactly one :class:`BatchResult`: a verdict (fresh, or the one the
log directory already holds for its id: resume) or an error. A request id is claimed with
a lock file in the log directory while it is looked up and scored, so two batches sharing
the log directory never both score it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints, ValidationError

from patchwarden.sandbox import resolve_commit

from ._config import ScorerConfig
from ._contract import DEFAULT_CONTRACT_PATH
from ._errors import InputError, PatchwardenError, one_line
from ._index import IndexCursor, IndexLine, warn_on_stderr
from ._recheck import recheck
from ._score import (
    ScoreRequest,
    Verdict,
    check_without_runs,
    finish_score,
    pin_moved_boundaries,
    plan_score,
    settle_on_error,
)
from ._seeds import ScoreSecret
from ._task import TASK_REFS
from .executors import Executor, RunOutcome, RunUnit, collect, tree_digest

MAX_ID_CHARS = 200
SHARED_RUNS = 64
"""Finished runs kept for requests that need the same unit (each holds its captured output)."""
TASK_BRANCHES = TASK_REFS.removeprefix("refs/heads/")
CLAIMS_DIR = ".requests"
"""Lock files of request ids being scored, in the log directory (empty files)."""


RequestId = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, pattern=r"^[^\x00-\x1f\x7f]+$")
]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]


def _one_word_url(url: str) -> str:
    if not url or url.startswith("-") or any(c.isspace() or not c.isprintable() for c in url):
        raise ValueError("a git URL of one word, not starting with '-'")
    return url


FetchUrl = Annotated[str, AfterValidator(_one_word_url)]
"""A git URL or path (git would read one starting with ``-`` as an option)."""


class RequestLine(BaseModel):
    """One line of REQUESTS.jsonl."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: RequestId
    repo: NonEmpty
    """The repository's working tree; a relative path is relative to the requests file."""
    parent: NonEmpty | None = None
    """The base commit; or give ``task``."""
    patch: NonEmpty
    contract: NonEmpty | None = None
    task: NonEmpty | None = None
    """A task of ``task from-fix``: its ref prefix (``patchwarden/tasks/NAME``, or NAME) or
    its ``--json`` file (relative to the requests file); parent and contract come from it."""
    held_out: NonEmpty | None = None
    fetch_url: FetchUrl | None = None
    """Where Ray workers fetch this repository's commits from (else: git bundles from the
    driver); overrides ``--fetch-url``; the local executor does not use it."""


@dataclass(frozen=True)
class BatchRequest:
    where: str
    """``FILE:LINE`` of the request, for its error line."""
    line: int
    id: str
    repo: Path
    parent: str
    patch: str
    contract: str
    held_out: str | None = None
    fetch_url: str | None = None


@dataclass(frozen=True)
class BatchResult:
    """What one request (or one line that is not a request) got: a verdict or an error."""

    line: int
    id: str | None
    verdict: IndexLine | None = None
    """The verdict's index line (verdict id, decision, shas, results, bundle)."""
    error: str | None = None
    resumed: bool = False
    """The verdict was already in the log directory; nothing was run."""
    crash: BaseException | None = field(default=None, compare=False)
    """An internal error (a bug): the caller writes its traceback somewhere and says where."""

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` line: ``{"id", "decision", "verdict_id", ...}`` or ``{"id", "error"}``."""
        if self.verdict is not None:
            # Keys sorted as in the index, so a resumed line and a fresh one read the same.
            entry = json.loads(json.dumps(self.verdict.to_json(), sort_keys=True))
            entry.pop("request_id", None)
            return {"id": self.id, **entry}
        out: dict[str, Any] = {"id": self.id, "error": self.error}
        if self.id is None:
            out["line"] = self.line
        return out


# -- reading the requests --------------------------------------------------------------------


def read_requests(path: Path) -> tuple[list[BatchRequest], list[BatchResult]]:
    """The requests of ``path`` and an error result for each line that is not one.

    The file itself must be readable UTF-8 (else InputError naming it, or its line); a line
    that is not a request, repeats an id, or asks for what the scorer cannot do is an error
    result for that line.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        message = f"cannot read the requests: {exc.strerror or exc}"
        raise InputError(message, where=str(path)) from None
    base = path.resolve().parent
    requests: list[BatchRequest] = []
    errors: list[BatchResult] = []
    first_line: dict[str, int] = {}
    for number, data in enumerate(raw.split(b"\n"), start=1):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", where=f"{path}:{number}") from None
        if not text.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, a huge integer, absurd nesting
            errors.append(BatchResult(number, None, error=f"{where}: not a JSON object"))
            continue
        request_id = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(request_id, str) or not 0 < len(request_id) <= MAX_ID_CHARS:
            request_id = None
        try:
            line = RequestLine.model_validate(obj)
        except ValidationError as exc:
            errors.append(BatchResult(number, request_id, error=f"{where}: {_first(exc)}"))
            continue
        if line.id in first_line:
            message = f"{where}: duplicate id {line.id!r} (first on line {first_line[line.id]})"
            errors.append(BatchResult(number, line.id, error=message))
            continue
        try:
            parent, contract = _parent_and_contract(line, base)
        except ValueError as exc:
            errors.append(BatchResult(number, line.id, error=f"{where}: {exc}"))
            continue
        first_line[line.id] = number
        requests.append(
            BatchRequest(
                where=where,
                line=number,
                id=line.id,
                repo=base / line.repo,
                parent=parent,
                patch=line.patch,
                contract=contract,
                held_out=str(base / line.held_out) if line.held_out is not None else None,
                fetch_url=line.fetch_url,
            )
        )
    return requests, errors


def _parent_and_contract(line: RequestLine, base: Path) -> tuple[str, str]:
    """The request's parent and contract: its own, or its task's (docs/design/tasks.md)."""
    if line.task is None:
        if line.parent is None:
            raise ValueError("parent: missing (or name a task)")
        return line.parent, line.contract or DEFAULT_CONTRACT_PATH
    if line.parent is not None:
        raise ValueError("task: the task gives the parent; give one of parent and task")
    if line.task.endswith(".json"):
        path = base / line.task
        try:
            task = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"task: cannot read the task file {path}: {exc.strerror}") from None
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise ValueError(f"task: {path} is not a JSON task file") from None
        if not isinstance(task, dict) or not all(
            isinstance(task.get(key), str) for key in ("base", "contract")
        ):
            raise ValueError(f"task: {path} is not a task file of `task from-fix --json`")
        return task["base"], line.contract or task["contract"]
    prefix = line.task.removeprefix("refs/heads/").rstrip("/")
    if not prefix.startswith(f"{TASK_BRANCHES}/"):
        prefix = f"{TASK_BRANCHES}/{prefix}"
    return f"{prefix}/base", line.contract or DEFAULT_CONTRACT_PATH


def with_fetch_urls(
    requests: Sequence[BatchRequest], urls: Mapping[Path, str]
) -> list[BatchRequest]:
    """The requests with the operator's fetch URL of their repository (``--fetch-url
    REPO=URL``, by the repository's resolved path) where their line names none. A URL for a
    repository no request names is an InputError: a mistyped path would otherwise send
    bundles without a word."""
    by_repo = {repo.resolve(): url for repo, url in urls.items()}
    named = {request.repo.resolve() for request in requests}
    for repo in by_repo:
        if repo not in named:
            raise InputError(f"no request names the repository {repo}", where="--fetch-url")
    return [
        dataclasses.replace(request, fetch_url=by_repo.get(request.repo.resolve()))
        if request.fetch_url is None
        else request
        for request in requests
    ]


def _first(exc: ValidationError) -> str:
    return one_line(_first_error(exc))


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    if first["type"] == "model_type":
        return "not a JSON object"
    where = ".".join(str(p) for p in first["loc"]) or "request"
    if first["type"] == "extra_forbidden":
        return f"{where}: unknown key"
    if first["type"] == "missing":
        return f"{where}: missing"
    return f"{where}: {str(first['msg']).removeprefix('Value error, ')}"


# -- resume ------------------------------------------------------------------------------------


class VerdictIndex:
    """The log directory's verdicts by request id, read once and then only what was appended
    since (other processes may be writing the same index); scorer/_index.py's policy: a bad
    line is an InputError naming file:line, a torn last line a warning on stderr."""

    def __init__(self, log_dir: Path) -> None:
        self._cursor = IndexCursor(log_dir)
        self._by_request: dict[str, IndexLine] = {}
        self._warned: str | None = None
        self._lock = threading.Lock()
        self.refresh()

    def refresh(self) -> None:
        with self._lock:
            appended = self._cursor.read()
            if appended.restarted:
                self._by_request = {}
            if appended.torn is not None and appended.torn != self._warned:
                warn_on_stderr(appended.torn)
            self._warned = appended.torn
            for indexed in appended.lines:
                if indexed.line.request_id is not None:
                    self._by_request.setdefault(indexed.line.request_id, indexed.line)

    def verdict_of(self, request_id: str) -> IndexLine | None:
        """The first verdict recorded for ``request_id``, if any (fresh from the index)."""
        self.refresh()
        with self._lock:
            return self._by_request.get(request_id)


@contextlib.contextmanager
def claim(log_dir: Path, request_id: str) -> Iterator[None]:
    """Exclusive use of ``request_id`` in ``log_dir`` across processes, while held."""
    claims = log_dir / CLAIMS_DIR
    claims.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(request_id.encode()).hexdigest()[:40]
    fd = os.open(claims / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# -- the driver ----------------------------------------------------------------------------------


ResultCallback = Callable[[BatchResult], None]
UnitCallback = Callable[[RunUnit], None]


def in_flight(executor: Executor) -> int:
    """Requests planned or running at once: one more than the slots, so the next request's
    units are queued before the last units of the current ones finish."""
    return max(2, executor.jobs + 1)


class SharedRuns:
    """The batch's view of the executor: a unit whose inputs match one already submitted gets
    that unit's run instead of a new one.

    The key is the unit with its tree replaced by the tree's digest (and the label and source,
    which name no input, cleared), so a field added to RunUnit later is part of it; and the
    fetch URL a remote worker gets the tree from, so a URL that fails fails only the requests
    that name it. A shared
    local run's tree is hashed again after the run, so a request that did not own the tree
    still learns if it changed. Finished runs are kept for ``capacity`` more units; a failed
    one is never handed out again.
    """

    def __init__(
        self, executor: Executor, *, capacity: int = SHARED_RUNS, on_unit: UnitCallback | None
    ) -> None:
        self._executor = executor
        self.import_roots = executor.import_roots
        self._capacity = capacity
        self._on_unit = on_unit
        self._runs: OrderedDict[tuple[RunUnit, str | None], Future[RunOutcome]] = OrderedDict()
        self._lock = threading.Lock()

    def submit(self, unit: RunUnit, digest: str) -> Future[RunOutcome]:
        inputs = dataclasses.replace(unit, label="", tree=Path(digest), source=None)
        key = (inputs, unit.source.fetch_url if unit.source is not None else None)
        with self._lock:
            known = self._runs.get(key)
            if known is not None and not (known.done() and known.exception() is not None):
                self._runs.move_to_end(key)
                return known
            shared: Future[RunOutcome] = Future()
            self._executor.submit(unit).add_done_callback(self._settle(unit, digest, shared))
            self._runs[key] = shared
            self._evict()
            return shared

    def _settle(
        self, unit: RunUnit, digest: str, shared: Future[RunOutcome]
    ) -> Callable[[Future[RunOutcome]], None]:
        def done(ran: Future[RunOutcome]) -> None:
            try:
                error = ran.exception()
                if error is not None:
                    shared.set_exception(error)
                    return
                outcome = ran.result()
                if not self._executor.remote and tree_digest(unit.tree) != digest:
                    changed = (
                        f"{unit.tree_name}: the tree changed during the run (seed {unit.seed})"
                    )
                    outcome = dataclasses.replace(outcome, drift=(*outcome.drift, changed))
                shared.set_result(outcome)
            except BaseException as exc:  # the tree vanished, say: the unit failed
                shared.set_exception(exc)
            finally:
                if self._on_unit is not None:
                    self._on_unit(unit)

        return done

    def _evict(self) -> None:
        finished = [key for key, future in self._runs.items() if future.done()]
        for key in finished[: max(0, len(self._runs) - self._capacity)]:
            del self._runs[key]


def score_batch(
    requests: Sequence[BatchRequest],
    config: ScorerConfig,
    executor: Executor,
    *,
    on_result: ResultCallback,
    on_unit: UnitCallback | None = None,
) -> list[BatchResult]:
    """Score every request (or find its verdict); ``on_result`` gets each result as it
    comes, ``on_unit`` each run as it finishes. Never raises for one request's failure."""
    log_dir = Path(config.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    index = VerdictIndex(log_dir)
    runs = SharedRuns(executor, on_unit=on_unit)
    # One secret for the batch: its requests' identical units (the parent's schedule on one
    # base) keep identical inputs, hash seeds and extra seeds included, and still share a run.
    secret = ScoreSecret.draw()
    results: list[BatchResult] = []
    lock = threading.Lock()

    def one(request: BatchRequest) -> None:
        result = _score_one(request, config, runs, executor.remote, index, secret)
        with lock:
            results.append(result)
        on_result(result)

    with ThreadPoolExecutor(in_flight(executor), thread_name_prefix="patchwarden-request") as pool:
        futures = [pool.submit(one, request) for request in requests]
        try:
            for future in futures:
                future.result()
        except BaseException:
            for future in futures:
                future.cancel()
            executor.close()  # queued units are dropped, so waiting requests end quickly
            raise
    return results


def _score_one(
    request: BatchRequest,
    config: ScorerConfig,
    runs: SharedRuns,
    remote: bool,
    index: VerdictIndex,
    secret: ScoreSecret,
) -> BatchResult:
    where = request.where
    try:
        with claim(Path(config.log_dir), request.id):
            entry = index.verdict_of(request.id)
            if entry is not None:
                return _resumed(request, entry)
            verdict = _score_request(request, config, runs, remote, secret)
            return BatchResult(request.line, request.id, verdict=verdict.index_line())
    except PatchwardenError as exc:
        return BatchResult(request.line, request.id, error=f"{where}: {exc}")
    except CancelledError:
        return BatchResult(request.line, request.id, error=f"{where}: cancelled")
    except OSError as exc:
        # The environment's failure (a full disk, a log directory we may not write).
        name = f"{exc.filename}: " if exc.filename else ""
        return BatchResult(request.line, request.id, error=f"{where}: {name}{exc.strerror or exc}")
    except Exception as exc:  # a bug: fail this request closed, keep scoring the others
        kind = type(exc).__name__
        return BatchResult(
            request.line, request.id, error=f"{where}: internal error ({kind})", crash=exc
        )


def _score_request(
    request: BatchRequest,
    config: ScorerConfig,
    runs: SharedRuns,
    remote: bool,
    secret: ScoreSecret,
) -> Verdict:
    score_request = ScoreRequest(
        repo=request.repo,
        contract=request.contract,
        parent=request.parent,
        patch=request.patch,
        request_id=request.id,
        held_out=Path(request.held_out) if request.held_out is not None else None,
        fetch_url=request.fetch_url,
    )
    with contextlib.ExitStack() as stack:
        plan = plan_score(
            score_request,
            config,
            stack,
            describe_trees=remote,
            import_roots=runs.import_roots,
            secret=secret,
        )
        digests = {u.tree_name: u.source.digest for u in plan.units if u.source is not None}
        digests = digests or {name: tree_digest(tree) for name, tree in plan.trees.items()}
        futures = {unit.key: runs.submit(unit, digests[unit.tree_name]) for unit in plan.units}
        with settle_on_error(futures):
            before = check_without_runs(plan)  # while the runs go
            outcomes = collect(futures)
        outcomes = recheck(
            plan.units, outcomes, lambda unit: runs.submit(unit, digests[unit.tree_name])
        )

        def submit(unit: RunUnit) -> Future[RunOutcome]:
            return runs.submit(unit, tree_digest(unit.tree))

        pinning = pin_moved_boundaries(plan, before, outcomes, submit, remote)
        return finish_score(plan, outcomes, before, pinning)


def _resumed(request: BatchRequest, entry: IndexLine) -> BatchResult:
    """The verdict the log directory holds for this id, if it is for these commits."""
    parent = resolve_commit(request.repo, request.parent)
    patch = resolve_commit(request.repo, request.patch)
    if (entry.parent_sha, entry.patch_sha) != (parent, patch):
        raise InputError(
            f"id {request.id!r} already names verdict {entry.verdict_id} of other commits "
            f"({str(entry.parent_sha)[:12]}..{str(entry.patch_sha)[:12]})"
        )
    return BatchResult(request.line, request.id, verdict=entry, resumed=True)


__all__ = [
    "BatchRequest",
    "BatchResult",
    "RequestLine",
    "RunOutcome",
    "SharedRuns",
    "VerdictIndex",
    "in_flight",
    "read_requests",
    "score_batch",
    "with_fetch_urls",
]
