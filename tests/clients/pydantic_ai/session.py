"""The pydantic-ai side of tests/test_agent_framework.py, in its own process.

Importing pydantic-ai (FastMCP, py-key-value, beartype's import hooks) into the test
process would change how every later test there imports and reports: it runs here,
reads the job (config, environment, working directory of ``patchwarden serve``) as JSON
on stdin, and prints what the test asserts as one JSON object on stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
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


async def fix_session(job: dict[str, Any], model: ScriptedAgent) -> tuple[Any, list[Any], str]:
    transport = StdioTransport(
        command=sys.executable,
        args=["-P", "-m", "patchwarden", "serve", "--config", job["config"]],
        env=job["env"],
        cwd=job["cwd"],
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


def main() -> None:
    job = json.load(sys.stdin)
    model = ScriptedAgent()
    result, listed, protocol = anyio.run(fix_session, job, model)
    messages = result.all_messages()
    print(
        json.dumps(
            {
                "protocol": protocol,
                "output": result.output,
                "edits": [list(edit) for edit in EDITS],
                "seen_tools": [
                    {
                        "name": t.name,
                        "schema": t.parameters_json_schema,
                        "description": t.description,
                    }
                    for t in model.seen_tools
                ],
                "listed": [
                    {"name": t.name, "schema": t.input_schema, "description": t.description}
                    for t in listed
                ],
                "instructions": model.instructions,
                "calls": [
                    p.tool_name
                    for m in messages
                    if isinstance(m, ModelResponse)
                    for p in m.parts
                    if isinstance(p, ToolCallPart)
                ],
                "returns": [
                    {"kind": type(p).__name__, "content": p.content}
                    for m in messages
                    if isinstance(m, ModelRequest)
                    for p in m.parts
                    if isinstance(p, ToolReturnPart | RetryPromptPart)
                ],
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main()
