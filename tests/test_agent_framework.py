"""A real agent framework drives a whole fix session over stdio (docs/clients.md,
"Agent frameworks").

pydantic-ai's ``Agent`` with its scripted ``FunctionModel`` connects to ``patchwarden serve``
on the orders example through its ``MCPToolset`` (FastMCP's client on the ``mcp`` SDK), and
fixes the bulk rounding bug as an agent would: the contract, a search for the function, a
read, a reproduction with ``run_python``, two edits, the tests, a submission and, when it
answers pending, ``get_verdict``. The scripted model decides each step from what the tools
returned (the path the search found, the mismatches the reproduction printed, the verdict),
and stops with a one-line answer. The framework saw our tools as the server lists them and
validated every call against their schemas; no call was retried or refused.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import git
import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from patchwarden.server.tools import TOOLS
from tests.test_mcp_e2e import build_example, server_env

pytestmark = pytest.mark.bwrap

REPRO = """\
from decimal import ROUND_HALF_UP, Decimal

from orders import bulk_price

wrong = []
for cents in range(100, 400):
    price = Decimal(cents).scaleb(-2)
    expected = (price * 10 * Decimal("0.95")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    got = bulk_price(price, 10)
    if got != expected:
        wrong.append(f"{price} x 10: got {got}, expected {expected}")
print(len(wrong), "wrong")
print("\\n".join(wrong[:3]))
"""
EDITS = (
    ("BULK_FACTOR = 0.95", 'BULK_FACTOR = Decimal("0.95")'),
    (
        "        return Decimal(str(round(float(gross) * BULK_FACTOR, 2))).quantize(CENT)",
        "        gross = gross * BULK_FACTOR",
    ),
)
MESSAGE = "Round bulk prices with Decimal ROUND_HALF_UP"


class ScriptedAgent:
    """The model: the next step of the fix, decided from the tools' answers so far."""

    def __init__(self) -> None:
        self.seen_tools: list[Any] = []
        self.instructions: str | None = None

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen_tools = list(info.function_tools)
        self.instructions = info.instructions
        parts = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts]
        retries = [p for p in parts if isinstance(p, RetryPromptPart)]
        if retries:
            return _say(f"stopped: {retries[-1].model_response()}")
        returns = [p.content for p in parts if isinstance(p, ToolReturnPart)]
        step = len(returns)
        if step == 0:
            return _call("get_contract", {})
        if step == 1:
            return _call("search_text", {"pattern": "def bulk_price", "glob": "*.py"})
        found = returns[1]["matches"]
        if not found:
            return _say("stopped: bulk_price is nowhere")
        path = found[0]["path"]
        if step == 2:
            return _call("read_file", {"path": path})
        if step == 3:
            if EDITS[0][0] not in returns[2]["content"]:
                return _say("stopped: the float factor is not there")
            return _call("run_python", {"code": REPRO})
        if step == 4:
            if returns[3]["exit_code"] != 0 or returns[3]["stdout"].startswith("0 wrong"):
                return _say(f"stopped: not reproduced: {returns[3]}")
            return _call(
                "edit_file", {"path": path, "old_text": EDITS[0][0], "new_text": EDITS[0][1]}
            )
        if step == 5:
            return _call(
                "edit_file", {"path": path, "old_text": EDITS[1][0], "new_text": EDITS[1][1]}
            )
        if step == 6:
            return _call("run_tests", {"keyword": "bulk"})
        if step == 7:
            if set(returns[6]["counts"]) != {"passed"}:
                return _say(f"stopped: tests fail: {returns[6]['counts']}")
            return _call("submit_patch", {"message": MESSAGE})
        last = returns[-1]
        if last["status"] == "pending":
            return _call("get_verdict", {"submission": last["submission"]})
        return _say(f"verdict {last['decision']}")


def _call(tool: str, args: dict[str, Any]) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool_name=tool, args=args)])


def _say(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content=text)])


async def fix_session(dirs: dict[str, Path], model: ScriptedAgent) -> tuple[Any, list[Any], str]:
    transport = StdioTransport(
        command=sys.executable,
        args=["-P", "-m", "patchwarden", "serve", "--config", str(dirs["config"])],
        env=server_env(dirs),
        cwd=str(dirs["base"]),
        keep_alive=False,
    )
    # pydantic-ai's own timeouts: 5 s for the handshake (the stdio front answers it before
    # the SDK loads: docs/clients.md, "Start-up"), 5 minutes a call.
    toolset = MCPToolset(transport, include_instructions=True)
    agent = Agent(FunctionModel(model), toolsets=[toolset])
    async with agent:
        listed = await toolset.list_tools()
        protocol = str(toolset.client.protocol_version)
        result = await agent.run("Fix the bulk rounding bug in the orders package.")
    return result, listed, protocol


@pytest.mark.timeout(600)
def test_pydantic_ai_agent_fixes_the_example_and_gets_accept(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    dirs = build_example(tmp_path_factory.mktemp("agent"))
    model = ScriptedAgent()
    result, listed, protocol = anyio.run(fix_session, dirs, model)
    assert protocol == "2026-07-28"  # FastMCP's "auto" found the stateless era
    assert result.output == "verdict accept", result.output
    # The framework took our tools as the server lists them: every one, in order, with the
    # input schema from the wire, the description and the server's instructions.
    assert [t.name for t in model.seen_tools] == [tool.name for tool in TOOLS]
    wire = {t.name: t for t in listed}
    for seen in model.seen_tools:
        assert seen.parameters_json_schema == wire[seen.name].input_schema, seen.name
        assert seen.description == wire[seen.name].description, seen.name
    assert model.instructions and "get_verdict" in model.instructions
    # Each call passed the framework's validation and the server's: no retry, no error.
    calls = [
        p.tool_name
        for m in result.all_messages()
        if isinstance(m, ModelResponse)
        for p in m.parts
        if isinstance(p, ToolCallPart)
    ]
    polls = calls[8:]
    assert calls[:8] == [
        "get_contract",
        "search_text",
        "read_file",
        "run_python",
        "edit_file",
        "edit_file",
        "run_tests",
        "submit_patch",
    ]
    assert polls == ["get_verdict"] * len(polls)
    returns = [
        p
        for m in result.all_messages()
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart | RetryPromptPart)
    ]
    assert all(isinstance(p, ToolReturnPart) for p in returns), returns
    repro = returns[3].content
    assert repro["exit_code"] == 0 and repro["stdout"].startswith("110 wrong"), repro
    assert returns[6].content["counts"] == {"passed": 3}, returns[6].content
    verdict = returns[-1].content
    assert verdict["status"] == "scored" and verdict["decision"] == "accept", verdict
    assert {r["prop"]: r["reason"] for r in verdict["results"]} == {
        "prop.bulk_rounding": "parent_fail_cleared",
        "prop.order_total_non_negative": "both_pass",
        "prop.order_total_matches_fixture": "both_pass",
    }
    # The patch the scorer judged is the two edits, nothing else.
    repo = git.Repo(dirs["repo"])
    (ref,) = repo.git.for_each_ref("--format=%(refname)", "refs/patchwarden").splitlines()
    assert repo.git.diff("--name-only", "base", ref).splitlines() == ["orders/total.py"]
    base = repo.git.show("base:orders/total.py")
    patched = repo.git.show(f"{ref}:orders/total.py")
    assert [(old, new) for old, new in EDITS if old in base and new in patched] == list(EDITS)
    assert patched == base.replace(EDITS[0][0], EDITS[0][1]).replace(EDITS[1][0], EDITS[1][1])
