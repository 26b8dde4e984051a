"""The scorer process: the trusted side of an agent session (SPEC section 2, zone 3).

The MCP server starts it as a child (``patchwarden scorer ...``) and talks
to it over the child's private stdin/stdout pipe, one JSON object per line:

    -> {"id": 1, "op": "score", "parent": "<40 hex>", "patch": "<40 hex>"}
    <- {"id": 1, "summary": {"verdict_id": ..., "decision": ..., "results": [...],
                            "scorecard": [...], "counts": {...}}}
    -> {"id": 2, "op": "freeze", "patch": "<40 hex>", "test_id": "...", "reason": "..."}
    <- {"id": 2, "freeze": {"status": "proposed_for_review" | "rejected", "reason": "..."}}
    <- {"id": ..., "error": "one line"}             on any failure

The first line the scorer writes is ``{"ready": true}`` once its setup holds
(or ``{"error": ...}`` and exit 2). It takes commit ids only, never file
contents; it reads both commits from the repository it was started with,
into its own state directory (mode 0700). The summary is built here, so
witnesses, tracebacks and seed values never leave this process; the full
evidence goes to the reviewers' log directory.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import traceback
from pathlib import Path
from typing import IO, Any

import git

from patchwarden.sandbox import SandboxConfig, require_sandbox

from ._checkout import read_contract_at, state_dir
from ._config import ScorerConfig
from ._errors import InputError, PatchwardenError
from ._score import ScoreRequest, Verdict, score
from .layers import propose_freeze_record, read_quarantine_at

SHA_RE = re.compile(r"^[0-9a-f]{40}$")
MAX_REQUEST_BYTES = 64 * 1024
FREEZE_PROPOSED = "freeze record proposed for review; a reviewer decides"
MAX_FREEZE_REASON_CHARS = 500
MAX_TEST_ID_CHARS = 1000


def verdict_summary(verdict: Verdict) -> dict[str, Any]:
    """What the agent may see of a verdict: ids, decisions, reason codes, outcomes, counts.

    No witness, no traceback, no seed, no evidence text, no paths.
    """
    return {
        "verdict_id": verdict.verdict_id,
        "decision": verdict.decision,
        "results": [
            {"prop": r.prop, "decision": r.decision, "reason": str(r.reason)}
            for r in verdict.gate.results
        ],
        "scorecard": [{"check": c.check, "outcome": c.outcome} for c in verdict.scorecard],
        "counts": {
            side: {"lines": c.lines, "pass": c.pass_, "fail": c.fail}
            for side, c in verdict.gate.counts.items()
        },
    }


class ScorerSession:
    """Answers requests for one repository and contract."""

    def __init__(
        self, repo: Path, contract: str, config: ScorerConfig, sandbox_config: SandboxConfig
    ) -> None:
        self.repo = repo
        self.contract = contract
        self.config = config
        self.sandbox_config = sandbox_config

    def handle(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict):
            return {"id": None, "error": "a request must be a JSON object"}
        request_id = request.get("id")
        if not isinstance(request_id, int | str) or isinstance(request_id, bool):
            return {"id": None, "error": "a request needs an id (integer or string)"}
        op = request.get("op")
        try:
            if op == "score":
                return {"id": request_id, "summary": self.score(request)}
            if op == "freeze":
                return {"id": request_id, "freeze": self.freeze(request)}
            if op == "ping":
                return {"id": request_id, "pong": True}
            return {"id": request_id, "error": f"unknown op {op!r}"}
        except PatchwardenError as exc:
            return {"id": request_id, "error": str(exc)}

    def score(self, request: dict[str, Any]) -> dict[str, Any]:
        parent, patch = request.get("parent"), request.get("patch")
        for name, value in (("parent", parent), ("patch", patch)):
            if not isinstance(value, str) or not SHA_RE.match(value):
                raise InputError(f"{name} must be a full commit id (40 lowercase hex digits)")
        assert isinstance(parent, str) and isinstance(patch, str)
        contract, _ = read_contract_at(self.repo, parent, self.contract)
        quarantined = read_quarantine_at(self.repo, parent, contract)
        verdict = score(
            ScoreRequest(repo=self.repo, contract=self.contract, parent=parent, patch=patch),
            self.config,
            self.sandbox_config,
            quarantined=quarantined,
        )
        return verdict_summary(verdict)

    def freeze(self, request: dict[str, Any]) -> dict[str, str]:
        """The five-step freeze procedure (SPEC section 9) for one test of one patch commit.

        Never skips anything: the record, if any, goes to the log directory for a reviewer.
        """
        test_id, reason, patch = request.get("test_id"), request.get("reason"), request.get("patch")
        if not isinstance(test_id, str) or not test_id or len(test_id) > MAX_TEST_ID_CHARS:
            raise InputError("test_id must be a pytest node id")
        if not isinstance(reason, str):
            raise InputError("reason must be a string")
        if not isinstance(patch, str) or not SHA_RE.match(patch):
            raise InputError("patch must be a full commit id (40 lowercase hex digits)")
        proposal = propose_freeze_record(
            self.repo,
            patch,
            test_id,
            self.config,
            self.sandbox_config,
            contract=self.contract,
            reason=reason,
        )
        return freeze_summary(proposal.status, proposal.reason, self.config)


def freeze_summary(status: str, reason: str, config: ScorerConfig) -> dict[str, str]:
    """What the agent sees of a freeze proposal: the status and a one-line reason without the
    reviewers' or the scorer's host paths."""
    if status == "proposed_for_review":
        return {"status": status, "reason": FREEZE_PROPOSED}
    line = reason.splitlines()[0] if reason else "rejected"
    for directory, name in ((config.log_dir, "<log dir>"), (config.state_dir, "<scorer state>")):
        line = line.replace(str(Path(directory).resolve()), name).replace(directory, name)
    return {"status": "rejected", "reason": line[:MAX_FREEZE_REASON_CHARS]}


def _write(out: IO[bytes], obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, sort_keys=True).encode() + b"\n")
    out.flush()


def serve_scorer(
    repo: Path,
    contract: str,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
) -> int:
    """Run the request loop on stdin/stdout until EOF; return the exit code.

    Our stdout is the protocol channel: it is moved to a private descriptor
    and fd 1 is pointed at stderr, so a stray print cannot corrupt it.
    """
    # A terminal's Ctrl-C reaches the whole process group; the server decides when we stop
    # (it closes our stdin), so an interrupt here would only cut a verdict short.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if stdout is None:
        stdout = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    if stdin is None:
        stdin = sys.stdin.buffer
    try:
        require_sandbox(sandbox_config)
        state_dir(config)
        repo = Path(git.Repo(repo).working_tree_dir or repo).resolve()
    except PatchwardenError as exc:
        _write(stdout, {"error": str(exc)})
        return 2
    except OSError as exc:
        _write(stdout, {"error": f"{exc.filename or config.state_dir}: {exc.strerror or exc}"})
        return 2
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        _write(stdout, {"error": f"{repo}: not a git repository"})
        return 2
    session = ScorerSession(repo, contract, config, sandbox_config)
    _write(stdout, {"ready": True})
    while True:
        line = stdin.readline(MAX_REQUEST_BYTES + 1)
        if not line:
            return 0
        if len(line) > MAX_REQUEST_BYTES and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stdin.readline(MAX_REQUEST_BYTES + 1)
            _write(stdout, {"id": None, "error": f"request longer than {MAX_REQUEST_BYTES} bytes"})
            continue
        try:
            request = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            _write(stdout, {"id": None, "error": "a request must be one JSON object per line"})
            continue
        try:
            response = session.handle(request)
        except Exception as exc:  # a bug: keep serving, fail this request closed
            traceback.print_exc(file=sys.stderr)
            response = {
                "id": request.get("id") if isinstance(request, dict) else None,
                "error": f"internal scorer error ({type(exc).__name__})",
            }
        _write(stdout, response)
