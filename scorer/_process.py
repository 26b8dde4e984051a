"""The scorer process: the trusted side of an agent session (docs/design/scoring.md).

The MCP server starts it as a child (``python -m patchwarden.scorer``) and talks to it over
the child's private stdin/stdout pipe in the typed protocol of :mod:`.protocol`: a ``Start``
line first (answered ``Ready`` once its setup holds, or ``Failure`` and exit 2), then one
request per line, each answered by id. It takes commit ids only, never file contents; it
reads both commits from the repository it was started for, into its own state directory
(mode 0700). The summary is built here, so witnesses, tracebacks and seed values never
leave this process; the full evidence goes to the reviewers' log directory.

This module never imports the server (tests/test_architecture.py runs the real child and
checks the modules it loaded).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ValidationError

from patchwarden.sandbox import SandboxConfig, default_trees_dir, repo_root, require_sandbox

from ._checkout import read_contract_at, state_dir
from ._config import ScorerConfig
from ._errors import HeldOutError, PatchwardenError, one_line
from ._groups import HIDDEN_REASON
from ._score import TREES, ScoreRequest, Verdict, score
from .layers import propose_freeze_record, read_quarantine_at
from .protocol import (
    MAX_LINE_BYTES,
    REQUEST,
    CheckOutcome,
    Failure,
    FreezeHandled,
    FreezeSummary,
    Ping,
    Pong,
    PropertyVerdict,
    ProposeFreeze,
    Ready,
    Request,
    RequestId,
    RunsDone,
    Scored,
    ScorePatch,
    SideCount,
    Start,
    VerdictSummary,
    encode,
)

FREEZE_PROPOSED = "freeze record proposed for review; a reviewer decides"
HELD_OUT_UNUSABLE = "the operator's checks could not be run (the operator has the details)"
MAX_FREEZE_REASON_CHARS = 500


def verdict_summary(verdict: Verdict) -> VerdictSummary:
    """What the agent may see of a verdict: ids, decisions, reason codes, outcomes, counts.

    Of the hidden groups (held-out properties, extra seeds) nothing but one result
    ``{prop: held_out, decision, reason: held_out}`` when they did not all accept: no id, no
    seed, no witness, and the counts are the contract's rows only.
    """
    results = [
        PropertyVerdict(prop=r.prop, decision=r.decision, reason=str(r.reason))
        for r in verdict.gate.results
    ]
    hidden = verdict.hidden_decision
    if hidden is not None and hidden != "accept":
        results.append(PropertyVerdict(prop=HIDDEN_REASON, decision=hidden, reason=HIDDEN_REASON))
    return VerdictSummary(
        verdict_id=verdict.verdict_id,
        decision=verdict.decision,
        results=results,
        scorecard=[CheckOutcome(check=c.check, outcome=c.outcome) for c in verdict.scorecard],
        counts={
            side: SideCount.model_validate({"lines": c.lines, "pass": c.pass_, "fail": c.fail})
            for side, c in verdict.gate.counts.items()
        },
    )


def hide_host_paths(text: str, config: ScorerConfig, repo: Path | None = None) -> str:
    """``text`` without the reviewers' and the scorer's host paths (and the repository's),
    for what the agent sees; the operator gets the full line on the scorer's stderr."""
    directories = [(config.log_dir, "<log dir>"), (config.state_dir, "<scorer state>")]
    trees = config.trees_dir or str(default_trees_dir())
    directories.append((trees, "<trees>"))
    if repo is not None:
        directories.append((str(repo), "<repo>"))
    for directory, name in directories:
        text = text.replace(str(Path(directory).resolve()), name).replace(directory, name)
    return text


def freeze_summary(status: str, reason: str, config: ScorerConfig) -> FreezeSummary:
    """What the agent sees of a freeze proposal: the status and a one-line reason without the
    reviewers' or the scorer's host paths."""
    if status == "proposed_for_review":
        return FreezeSummary(status="proposed_for_review", reason=FREEZE_PROPOSED)
    line = reason.splitlines()[0] if reason else "rejected"
    return FreezeSummary(
        status="rejected", reason=hide_host_paths(line, config)[:MAX_FREEZE_REASON_CHARS]
    )


class ScorerSession:
    """Answers requests for one repository and contract."""

    def __init__(
        self, repo: Path, contract: str, config: ScorerConfig, sandbox_config: SandboxConfig
    ) -> None:
        self.repo = repo
        self.contract = contract
        self.config = config
        self.sandbox_config = sandbox_config

    def handle(
        self, request: Request, on_progress: Callable[[RunsDone], None] | None = None
    ) -> BaseModel:
        try:
            if isinstance(request, ScorePatch):
                return Scored(id=request.id, summary=self.score(request, on_progress))
            if isinstance(request, ProposeFreeze):
                return FreezeHandled(id=request.id, freeze=self.freeze(request))
            assert isinstance(request, Ping)
            return Pong(id=request.id)
        except PatchwardenError as exc:
            return self.failure(request.id, str(exc))
        except OSError as exc:  # a full or read-only disk: the environment's failure
            where = f"{exc.filename}: " if exc.filename else ""
            return self.failure(request.id, f"{where}{exc.strerror or exc}")

    def failure(self, request_id: RequestId, message: str) -> Failure:
        """The full line to the operator (our stderr), the agent's without host paths."""
        print(f"patchwarden: scorer: request {request_id}: {message}", file=sys.stderr, flush=True)
        return Failure(id=request_id, error=hide_host_paths(message, self.config, self.repo))

    def score(
        self, request: ScorePatch, on_progress: Callable[[RunsDone], None] | None = None
    ) -> VerdictSummary:
        contract, _ = read_contract_at(self.repo, request.parent, self.contract)
        quarantined = read_quarantine_at(self.repo, request.parent, contract)
        visible_total = len(TREES) * len(contract.seeds)
        visible_done = 0

        def on_run(done: int, total: int, run: str) -> None:
            # Only the contract's schedule ("patch seed 29"): a hidden group's runs (their
            # names hold a ':') would tell the agent that they exist, and their seeds.
            nonlocal visible_done
            if on_progress is None or ":" in run.split(" ", 1)[0]:
                return
            visible_done += 1
            on_progress(
                RunsDone(id=request.id, done=visible_done, total=visible_total, run=run[:200])
            )

        try:
            verdict = score(
                ScoreRequest(
                    repo=self.repo,
                    contract=self.contract,
                    parent=request.parent,
                    patch=request.patch,
                ),
                self.config,
                self.sandbox_config,
                quarantined=quarantined,
                on_run=on_run,
            )
        except PatchwardenError as exc:
            if not isinstance(exc, HeldOutError) and not self._names_held_out(str(exc)):
                raise
            # It names held-out files: the operator reads it (our stderr), the agent does not.
            print(f"patchwarden scorer: {exc}", file=sys.stderr, flush=True)
            raise PatchwardenError(HELD_OUT_UNUSABLE) from None
        return verdict_summary(verdict)

    def _names_held_out(self, message: str) -> bool:
        directory = self.config.held_out_dir
        if not directory:
            return False
        return directory in message or str(Path(directory).resolve()) in message

    def freeze(self, request: ProposeFreeze) -> FreezeSummary:
        """The five-step freeze procedure for one test of one patch commit. Never skips
        anything: the record, if any, goes to the log directory for a reviewer."""
        proposal = propose_freeze_record(
            self.repo,
            request.patch,
            request.test_id,
            self.config,
            self.sandbox_config,
            contract=self.contract,
            reason=request.reason,
        )
        return freeze_summary(proposal.status, proposal.reason, self.config)


def _write(out: IO[bytes], message: BaseModel) -> None:
    out.write(encode(message))
    out.flush()


class _Answers:
    """The channel's writer for one request: progress lines from the runs' threads, then
    the answer; a progress line that comes after the answer is dropped (runs report from
    their own threads, and the last report may race the verdict)."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._answered = False

    def progress(self, message: RunsDone) -> None:
        with self._lock:
            if self._answered:
                return
            try:
                _write(self._out, message)
            except (BrokenPipeError, ValueError):  # the server is gone; the verdict is not
                self._answered = True

    def answer(self, message: BaseModel) -> None:
        with self._lock:
            self._answered = True
            _write(self._out, message)


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _die_with_the_server() -> None:
    """SIGKILL us when the server dies, so a killed server leaves no scorer (nor, through
    theirs, sandboxed runs) working for nobody. A server that died before the call is
    caught by the parent check after it."""
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(0)


def _read_line(stdin: IO[bytes]) -> bytes | None:
    """One line, or None at EOF; a line over the limit is read to its end and refused."""
    line = stdin.readline(MAX_LINE_BYTES + 1)
    if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
        while line and not line.endswith(b"\n"):
            line = stdin.readline(MAX_LINE_BYTES + 1)
        return b"\0too long"
    return line or None


def _validation_summary(exc: ValidationError) -> str:
    first = exc.errors()[0]
    if first["type"] == "json_invalid":
        return "malformed request: not one JSON object per line"
    where = ".".join(str(p) for p in first["loc"]) or "request"
    return one_line(f"malformed request: {where}: {first['msg']}")


def _start(stdin: IO[bytes]) -> ScorerSession:
    line = _read_line(stdin)
    if line is None:
        raise PatchwardenError("the server closed the channel before the start line")
    try:
        start = Start.model_validate_json(line)
    except ValidationError as exc:
        raise PatchwardenError(_validation_summary(exc)) from None
    require_sandbox(start.sandbox)
    state_dir(start.scorer)
    repo = repo_root(Path(start.repo))
    return ScorerSession(repo, start.contract, start.scorer, start.sandbox)


def serve_scorer(stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> int:
    """Run the request loop until EOF; return the exit code.

    Our stdout is the protocol channel: it is moved to a private descriptor and fd 1 is
    pointed at stderr, so a stray print cannot corrupt it.
    """
    # A terminal's Ctrl-C reaches the whole process group; the server decides when we stop
    # (it closes our stdin), so an interrupt here would only cut a verdict short.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if stdin is None:
        _die_with_the_server()
    if stdout is None:
        stdout = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    if stdin is None:
        stdin = sys.stdin.buffer
    try:
        session = _start(stdin)
    except PatchwardenError as exc:
        _write(stdout, Failure(error=str(exc)))
        return 2
    except OSError as exc:
        _write(stdout, Failure(error=f"{exc.filename or 'scorer'}: {exc.strerror or exc}"))
        return 2
    try:
        _write(stdout, Ready())
        _serve_requests(session, stdin, stdout)
    except BrokenPipeError:  # the server is gone; there is nobody to answer
        return 0
    return 0


def _serve_requests(session: ScorerSession, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    while (line := _read_line(stdin)) is not None:
        if line == b"\0too long":
            _write(stdout, Failure(error=f"request longer than {MAX_LINE_BYTES} bytes"))
            continue
        try:
            request = REQUEST.validate_json(line)
        except ValidationError as exc:
            _write(stdout, Failure(error=_validation_summary(exc)))
            continue
        answers = _Answers(stdout)
        try:
            answer = session.handle(request, answers.progress)
        except Exception as exc:  # a bug: keep serving, fail this request closed
            traceback.print_exc(file=sys.stderr)
            answer = Failure(id=request.id, error=f"internal scorer error ({type(exc).__name__})")
        answers.answer(answer)
