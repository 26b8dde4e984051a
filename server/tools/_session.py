"""The state the tools of one agent session share, and the scorer as they see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import anyio
from mcp.server.mcpserver.exceptions import ToolError

from patchwarden.sandbox import SandboxConfig
from patchwarden.scorer import Contract
from patchwarden.scorer.protocol import Answer, Request

from .._paths import PathPolicy
from .._workspace import Workspace


class Scorer(Protocol):
    """The scorer as the tools see it (server/_supervisor.py; fakes in the tests)."""

    async def request(self, request: Request) -> Answer:
        """The answer to one request (its id is the channel's to set); ScorerUnavailable
        when none can be had."""
        ...


@dataclass
class Session:
    """Everything the tools of one agent session share."""

    workspace: Workspace
    policy: PathPolicy
    contract: Contract
    contract_file: str | None
    quarantined: list[str]
    sandbox: SandboxConfig
    """Sandbox configuration of the agent's runs (secret directories hidden)."""
    scorer: Scorer
    max_submissions: int
    uncounted_faults: int = 3
    """Submissions without a verdict (the scorer failed) that do not count."""
    judged: int = 0
    """Submissions that got a verdict, or whose caller cancelled while it was judged."""
    unjudged: int = 0
    """Submissions that got no verdict because the scorer failed or answered an error."""
    run_lock: anyio.Lock = field(default_factory=anyio.Lock)
    submit_lock: anyio.Lock = field(default_factory=anyio.Lock)

    @property
    def charged(self) -> int:
        """Submissions counted against max_submissions: every judged one, and those without a
        verdict past the first ``uncounted_faults`` (so crashing the scorer on purpose, say
        with a patch that exhausts the host's memory, cannot buy unlimited tries)."""
        return self.judged + max(0, self.unjudged - self.uncounted_faults)

    @property
    def submissions_left(self) -> int:
        return max(0, self.max_submissions - self.charged)

    def no_verdict(self, why: str) -> ToolError:
        """Record a submission the scorer did not judge; the tool error that says so."""
        self.unjudged += 1
        counted = self.unjudged > self.uncounted_faults
        how = (
            "it counts against the limit: too many submissions got no verdict this session"
            if counted
            else "it was not counted"
        )
        return ToolError(
            f"no verdict: {why}. Submit again; {how} ({self.submissions_left} submissions left)"
        )
