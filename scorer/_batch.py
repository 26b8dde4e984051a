"""``score-batch``: many requests, one executor (SPEC section 14; docs/scale.md).

Each request goes through the three phases of ``score`` (scorer/_score.py) on a thread of
its own: plan, hand its units to the shared executor, wait for them, decide and write the
bundle. Up to ``executor.jobs + 1`` requests are in flight, so while the last units of one
request run, the next request's plan is ready and its units are queued: no slot waits while
work is queued, and at most that many requests hold trees on disk.

Every request ends in exactly one :class:`BatchResult`: a verdict (fresh, or the one the
log directory already holds for its id: resume) or an error. A request id is claimed with
a lock file in the log directory while it is looked up and scored, so two batches sharing
the log directory never both score it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import CancelledError, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from patchwarden.sandbox import resolve_commit

from ._bundle import INDEX
from ._config import ScorerConfig
from ._contract import DEFAULT_CONTRACT_PATH
from ._errors import InputError, PatchwardenError
from ._score import ScoreRequest, Verdict, finish_score, plan_score
from .executors import Executor, RunOutcome, RunUnit, collect

MAX_ID_CHARS = 200
CLAIMS_DIR = ".requests"
"""Lock files of request ids being scored, in the log directory (empty files)."""

HELD_OUT_UNSUPPORTED = "held_out is not supported"
"""Until the scorer runs held-out properties (SPEC section 13), a request that asks for them
gets this error rather than a verdict that silently left them out."""

RequestId = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS, pattern=r"^[^\x00-\x1f\x7f]+$")
]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]


class RequestLine(BaseModel):
    """One line of REQUESTS.jsonl."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: RequestId
    repo: NonEmpty
    """The repository's working tree; a relative path is relative to the requests file."""
    parent: NonEmpty
    patch: NonEmpty
    contract: NonEmpty = DEFAULT_CONTRACT_PATH
    held_out: NonEmpty | None = None


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


@dataclass(frozen=True)
class BatchResult:
    """What one request (or one line that is not a request) got: a verdict or an error."""

    line: int
    id: str | None
    verdict: dict[str, Any] | None = None
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
            entry = json.loads(json.dumps(self.verdict, sort_keys=True))
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
        raise InputError(f"cannot read the requests: {exc.strerror or exc}", where=str(path))
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
        except json.JSONDecodeError:
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
        first_line[line.id] = number
        if line.held_out is not None:
            errors.append(BatchResult(number, line.id, error=f"{where}: {HELD_OUT_UNSUPPORTED}"))
            continue
        requests.append(
            BatchRequest(
                where=where,
                line=number,
                id=line.id,
                repo=base / line.repo,
                parent=line.parent,
                patch=line.patch,
                contract=line.contract,
            )
        )
    return requests, errors


def _first(exc: ValidationError) -> str:
    first = exc.errors()[0]
    if first["type"] == "model_type":
        return "not a JSON object"
    where = ".".join(str(p) for p in first["loc"]) or "request"
    if first["type"] == "extra_forbidden":
        return f"{where}: unknown key"
    if first["type"] == "missing":
        return f"{where}: missing"
    return f"{where}: {first['msg']}"


# -- resume ------------------------------------------------------------------------------------


class VerdictIndex:
    """The log directory's verdicts by request id, read once and then only what was appended
    since (other processes may be writing the same index)."""

    def __init__(self, log_dir: Path) -> None:
        self._path = log_dir / INDEX
        self._offset = 0
        self._by_request: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.refresh()

    def refresh(self) -> None:
        with self._lock:
            try:
                handle = self._path.open("rb")
            except FileNotFoundError:
                return
            with handle:
                fcntl.flock(handle, fcntl.LOCK_SH)
                handle.seek(self._offset)
                tail = handle.read()
            start = self._offset
            self._offset += len(tail)
            self._parse(tail, start)

    def _parse(self, tail: bytes, start: int) -> None:
        for line in tail.splitlines():
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                raise InputError(
                    f"an index line is not JSON (at byte {start})", where=str(self._path)
                ) from None
            finally:
                start += len(line) + 1
            request_id = entry.get("request_id") if isinstance(entry, dict) else None
            if isinstance(request_id, str) and isinstance(entry.get("verdict_id"), str):
                self._by_request.setdefault(request_id, entry)

    def verdict_of(self, request_id: str) -> dict[str, Any] | None:
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


def score_batch(
    requests: Sequence[BatchRequest],
    config: ScorerConfig,
    executor: Executor,
    *,
    on_result: ResultCallback,
    on_unit: UnitCallback | None = None,
) -> list[BatchResult]:
    """Score every request (or find its verdict); ``on_result`` gets each result as it
    comes, ``on_unit`` each unit as it finishes. Never raises for one request's failure."""
    log_dir = Path(config.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    index = VerdictIndex(log_dir)
    results: list[BatchResult] = []
    lock = threading.Lock()

    def one(request: BatchRequest) -> None:
        result = _score_one(request, config, executor, index, on_unit)
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
    executor: Executor,
    index: VerdictIndex,
    on_unit: UnitCallback | None,
) -> BatchResult:
    where = request.where
    try:
        with claim(Path(config.log_dir), request.id):
            entry = index.verdict_of(request.id)
            if entry is not None:
                return _resumed(request, entry)
            verdict = _score_request(request, config, executor, on_unit)
            return BatchResult(request.line, request.id, verdict=_index_entry(verdict))
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
    executor: Executor,
    on_unit: UnitCallback | None,
) -> Verdict:
    score_request = ScoreRequest(
        repo=request.repo,
        contract=request.contract,
        parent=request.parent,
        patch=request.patch,
        request_id=request.id,
    )
    with contextlib.ExitStack() as stack:
        plan = plan_score(score_request, config, stack, describe_trees=executor.remote)
        futures = {}
        for unit in plan.units:
            future = executor.submit(unit)
            if on_unit is not None:
                future.add_done_callback(_notify(on_unit, unit))
            futures[unit.key] = future
        return finish_score(plan, collect(futures))


def _notify(on_unit: UnitCallback, unit: RunUnit) -> Callable[[Any], None]:
    def done(_: Any) -> None:
        on_unit(unit)

    return done


def _index_entry(verdict: Verdict) -> dict[str, Any]:
    """The index line ``finish_score`` wrote for ``verdict``."""
    return {**verdict.index_entry(), "bundle": str(verdict.bundle)}


def _resumed(request: BatchRequest, entry: dict[str, Any]) -> BatchResult:
    """The verdict the log directory holds for this id, if it is for these commits."""
    parent = resolve_commit(request.repo, request.parent)
    patch = resolve_commit(request.repo, request.patch)
    if (entry.get("parent_sha"), entry.get("patch_sha")) != (parent, patch):
        raise InputError(
            f"id {request.id!r} already names verdict {entry['verdict_id']} of other commits "
            f"({str(entry.get('parent_sha'))[:12]}..{str(entry.get('patch_sha'))[:12]})"
        )
    return BatchResult(request.line, request.id, verdict=entry, resumed=True)


__all__ = [
    "HELD_OUT_UNSUPPORTED",
    "BatchRequest",
    "BatchResult",
    "RequestLine",
    "RunOutcome",
    "VerdictIndex",
    "in_flight",
    "read_requests",
    "score_batch",
]
