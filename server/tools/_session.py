"""The state the tools of one agent session share, and the scorer as they see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import anyio
import anyio.abc
from mcp.server.mcpserver.exceptions import ToolError

from patchwarden.sandbox import PytestConfig, SandboxConfig
from patchwarden.scorer import Contract
from patchwarden.scorer.protocol import Answer, Request, RunsDone, VerdictSummary

from .._paths import PathPolicy
from .._scorer_client import OnProgress
from .._workspace import Workspace
from ..config import DEFAULT_MAX_WAIT_S


class Scorer(Protocol):
    """The scorer as the tools see it (server/_supervisor.py; fakes in the tests)."""

    async def request(self, request: Request, on_progress: OnProgress | None = None) -> Answer:
        """The answer to one request (its id is the channel's to set); ScorerUnavailable
        when none can be had. ``on_progress`` hears how far a scoring got."""
        ...


@dataclass
class Submission:
    """One submitted patch and, once the scorer is done with it, its verdict or why there
    is none. Scored in the session's background (``Session.background``), so a client that
    stops waiting, cancels or disconnects loses nothing: get_verdict returns it later."""

    number: int
    """1, 2, ... in this session: what get_verdict takes."""
    patch: str
    total_runs: int
    runs_done: int = 0
    last_run: str = ""
    summary: VerdictSummary | None = None
    error: str | None = None
    """The tool error the agent gets when there is no verdict."""
    done: anyio.Event = field(default_factory=anyio.Event)
    changed: anyio.Event = field(default_factory=anyio.Event)
    """Set (and replaced) at each progress line and at the end."""

    async def note(self, progress: RunsDone) -> None:
        self.runs_done, self.total_runs, self.last_run = progress.done, progress.total, progress.run
        self._changed()

    def finish(self) -> None:
        self.done.set()
        self._changed()

    def _changed(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()


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
    max_wait_s: float = DEFAULT_MAX_WAIT_S
    """The longest wait_s submit_patch and get_verdict accept (``agent.max_wait_s``)."""
    submitted: list[Submission] = field(default_factory=list)
    pytest_config: PytestConfig | None = None
    """The project's pytest configuration as the base commit has it: the agent's runs use
    it, as the scorer's use the parent's (read on the first run; None until then)."""
    background: anyio.abc.TaskGroup | None = None
    """Where scorings run, apart from the call that started them (the server's lifespan
    sets it); None: submit_patch waits for its verdict in the call itself."""

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
