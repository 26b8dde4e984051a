"""The channel between the MCP server and the scorer process: one typed schema, both ends.

One JSON object per line over the scorer child's private stdin/stdout pipe
(docs/design/scoring.md, "The scorer process"):

    server -> scorer                                  scorer -> server
    Start {op: start, repo, contract, scorer, sandbox}  Ready {answer: ready} | Failure
    ScorePatch {op: score, id, parent, patch}           Scored {answer: verdict, id, summary}
    ProposeFreeze {op: freeze, id, patch, test_id, reason}
                                                        FreezeHandled {answer: freeze, id, freeze}
                                                        RunsDone {answer: progress, id, done,
                                                          total, run} (any, before a verdict)
    Ping {op: ping, id}                                 Pong {answer: pong, id}
    (anything malformed)                                Failure {answer: error, id, error}

Requests are discriminated on ``op``, answers on ``answer``. The scorer takes commit ids,
never file contents. The summaries are everything the agent may see of a verdict or a
freeze proposal; the MCP tools return these very models (server/tools/), so the schema
is written once.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from patchwarden.sandbox import SandboxConfig

from ._config import ScorerConfig

MAX_LINE_BYTES = 64 * 1024
"""Longest request line; a longer one is refused whole."""

MAX_ANSWER_BYTES = 1024 * 1024
"""Longest answer line the server reads."""

MAX_TEST_ID_CHARS = 1000
MAX_REASON_CHARS = 2000

Sha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}$", description="A full commit id.")]
RequestId = int | str
Decision = Literal["accept", "reject", "propose_freeze", "skipped"]


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# -- requests ---------------------------------------------------------------------------------


class Start(_Message):
    """The first line: what the scorer serves. Settings travel here, already resolved by the
    server (secret directories hidden), so the scorer never reads the operator's files."""

    op: Literal["start"] = "start"
    repo: str
    contract: str
    scorer: ScorerConfig
    sandbox: SandboxConfig


class ScorePatch(_Message):
    op: Literal["score"] = "score"
    id: RequestId
    parent: Sha
    patch: Sha


class ProposeFreeze(_Message):
    op: Literal["freeze"] = "freeze"
    id: RequestId
    patch: Sha
    test_id: Annotated[str, Field(min_length=1, max_length=MAX_TEST_ID_CHARS)]
    reason: Annotated[str, Field(max_length=MAX_REASON_CHARS)]


class Ping(_Message):
    op: Literal["ping"] = "ping"
    id: RequestId


Request = Annotated[ScorePatch | ProposeFreeze | Ping, Field(discriminator="op")]
REQUEST = TypeAdapter(Request)


# -- the summaries the agent sees -------------------------------------------------------------


class PropertyVerdict(_Message):
    prop: str
    decision: Decision
    reason: str


class CheckOutcome(_Message):
    check: str
    outcome: Literal["pass", "note", "review", "reject"]


class SideCount(_Message):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, serialize_by_alias=True
    )

    lines: int
    pass_: int = Field(alias="pass")
    fail: int


class VerdictSummary(_Message):
    """What the agent may see of a verdict: ids, decisions, reason codes, outcomes, counts.
    No witness, no traceback, no seed, no evidence text, no path."""

    verdict_id: str
    decision: Decision
    results: list[PropertyVerdict]
    scorecard: list[CheckOutcome]
    counts: dict[str, SideCount]


class FreezeSummary(_Message):
    """What the agent sees of a freeze proposal: never a skip, only a status and a reason."""

    status: Literal["proposed_for_review", "rejected"]
    reason: str


# -- answers ------------------------------------------------------------------------------------


class Ready(_Message):
    answer: Literal["ready"] = "ready"


class Scored(_Message):
    answer: Literal["verdict"] = "verdict"
    id: RequestId
    summary: VerdictSummary


class FreezeHandled(_Message):
    answer: Literal["freeze"] = "freeze"
    id: RequestId
    freeze: FreezeSummary


class RunsDone(_Message):
    """How far a scoring got: ``done`` of ``total`` sandboxed runs, the last one finished
    (``"patch seed 29"``). Sent before the verdict, as each run ends; the server turns it
    into progress notifications (docs/clients.md, "Long scorings")."""

    answer: Literal["progress"] = "progress"
    id: RequestId
    done: int
    total: int
    run: Annotated[str, Field(max_length=200)]


class Pong(_Message):
    answer: Literal["pong"] = "pong"
    id: RequestId


class Failure(_Message):
    """A request that got no verdict: one line saying why (no traceback, no host path of
    the scorer's)."""

    answer: Literal["error"] = "error"
    id: RequestId | None = None
    error: str


Answer = Annotated[
    Ready | Scored | FreezeHandled | RunsDone | Pong | Failure, Field(discriminator="answer")
]
ANSWER = TypeAdapter(Answer)


def encode(message: BaseModel) -> bytes:
    """One line of the channel."""
    return message.model_dump_json(by_alias=True).encode() + b"\n"


__all__ = [
    "ANSWER",
    "MAX_ANSWER_BYTES",
    "MAX_LINE_BYTES",
    "MAX_REASON_CHARS",
    "MAX_TEST_ID_CHARS",
    "REQUEST",
    "Answer",
    "CheckOutcome",
    "Failure",
    "FreezeHandled",
    "FreezeSummary",
    "Ping",
    "Pong",
    "PropertyVerdict",
    "ProposeFreeze",
    "Ready",
    "Request",
    "RequestId",
    "RunsDone",
    "ScorePatch",
    "Scored",
    "SideCount",
    "Start",
    "VerdictSummary",
    "encode",
]
