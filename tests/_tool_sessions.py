"""A tool session on the orders example, and a scripted fake scorer, for the tool tests.

Helpers only (no fixtures): tests/test_server_tools.py calls the handlers directly,
tests/test_tools_inmemory.py goes through the SDK's in-memory client. The session is real
(a worktree, the path policy, the workspace); the scorer is a fake because those tests are
about what the tools do with its answers, its failures and its absence.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git

from patchwarden.sandbox import SandboxConfig
from patchwarden.scorer import read_contract_at, read_only_paths_at
from patchwarden.scorer.protocol import Answer, Request, VerdictSummary
from patchwarden.server._paths import PathPolicy
from patchwarden.server._workspace import open_workspace
from patchwarden.server.tools import Session

CONTRACT = "contract/differential-contract.yaml"
SUMMARY = VerdictSummary.model_validate(
    {
        "verdict_id": "v-1",
        "decision": "accept",
        "results": [{"prop": "prop.a", "decision": "accept", "reason": "both_pass"}],
        "scorecard": [{"check": "differential", "outcome": "pass"}],
        "counts": {
            "parent": {"lines": 3, "pass": 3, "fail": 0},
            "patch": {"lines": 3, "pass": 3, "fail": 0},
        },
    }
)


@dataclass
class FakeScorer:
    """Answers from a script, or raises what the script says; records every request."""

    answers: list[Answer | Exception] = field(default_factory=list)
    asked: list[Request] = field(default_factory=list)

    async def request(self, request: Request, on_progress: Any = None) -> Answer:
        self.asked.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def until_scored(tool: str, result: Any, call: Callable[[str, dict[str, Any]], Any]) -> Any:
    """``result`` of ``tool``, or, for a submission that answered ``pending`` (its scoring
    outlasted the call's wait on a loaded machine), the verdict get_verdict has for it."""
    while (
        tool in ("submit_patch", "get_verdict")
        and not result.is_error
        and result.structured_content.get("status") == "pending"
    ):
        number = result.structured_content["submission"]
        tool, result = "get_verdict", call("get_verdict", {"submission": number, "wait_s": 300})
    return result


@contextlib.contextmanager
def example_session(
    example_repo: Path,
    state: Path,
    scorer: FakeScorer,
    sandbox: SandboxConfig | None = None,
) -> Iterator[Session]:
    """A session on a fresh worktree of the example's base, two submissions allowed."""
    base = git.Repo(example_repo).commit("base").hexsha
    contract, contract_file = read_contract_at(example_repo, base, CONTRACT)
    with open_workspace(example_repo, base, state) as ws:
        yield Session(
            workspace=ws,
            policy=PathPolicy(
                ws.tree, read_only=read_only_paths_at(example_repo, base, contract, contract_file)
            ),
            contract=contract,
            contract_file=contract_file,
            quarantined=[],
            sandbox=sandbox or SandboxConfig(),
            scorer=scorer,
            max_submissions=2,
        )
