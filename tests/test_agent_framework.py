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

The framework runs in its own process (``tests/clients/pydantic_ai/session.py``): its
imports install import hooks (beartype's, through py-key-value) that would change how
later tests in this process import modules and read tracebacks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import git
import pytest

from patchwarden.server.tools import TOOLS
from tests.test_mcp_e2e import build_example, server_env

pytestmark = pytest.mark.bwrap

SESSION = Path(__file__).resolve().parent / "clients" / "pydantic_ai" / "session.py"


def fix_session(dirs: dict[str, Path]) -> dict[str, Any]:
    """Run the scripted pydantic-ai agent against ``patchwarden serve`` on ``dirs``."""
    job = {"config": str(dirs["config"]), "env": server_env(dirs), "cwd": str(dirs["base"])}
    done = subprocess.run(
        [sys.executable, "-P", str(SESSION)],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    record: dict[str, Any] = json.loads(done.stdout)
    return record


@pytest.mark.timeout(600)
def test_pydantic_ai_agent_fixes_the_example_and_gets_accept(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    dirs = build_example(tmp_path_factory.mktemp("agent"))
    run = fix_session(dirs)
    assert run["protocol"] == "2026-07-28"  # FastMCP's "auto" found the stateless era
    assert run["output"] == "verdict accept", run["output"]
    # The framework took our tools as the server lists them: every one, in order, with the
    # input schema from the wire, the description and the server's instructions.
    assert [t["name"] for t in run["seen_tools"]] == [tool.name for tool in TOOLS]
    wire = {t["name"]: t for t in run["listed"]}
    for seen in run["seen_tools"]:
        assert seen["schema"] == wire[seen["name"]]["schema"], seen["name"]
        assert seen["description"] == wire[seen["name"]]["description"], seen["name"]
    assert run["instructions"] and "get_verdict" in run["instructions"]
    # Each call passed the framework's validation and the server's: no retry, no error.
    calls = run["calls"]
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
    returns = run["returns"]
    assert all(r["kind"] == "ToolReturnPart" for r in returns), returns
    repro = returns[3]["content"]
    assert repro["exit_code"] == 0 and repro["stdout"].startswith("110 wrong"), repro
    assert returns[6]["content"]["counts"] == {"passed": 3}, returns[6]["content"]
    verdict = returns[-1]["content"]
    assert verdict["status"] == "scored" and verdict["decision"] == "accept", verdict
    assert {r["prop"]: r["reason"] for r in verdict["results"]} == {
        "prop.bulk_rounding": "parent_fail_cleared",
        "prop.order_total_non_negative": "both_pass",
        "prop.order_total_matches_fixture": "both_pass",
    }
    # The patch the scorer judged is the two edits, nothing else.
    edits = [tuple(edit) for edit in run["edits"]]
    repo = git.Repo(dirs["repo"])
    (ref,) = repo.git.for_each_ref("--format=%(refname)", "refs/patchwarden").splitlines()
    assert repo.git.diff("--name-only", "base", ref).splitlines() == ["orders/total.py"]
    base = repo.git.show("base:orders/total.py")
    patched = repo.git.show(f"{ref}:orders/total.py")
    assert [(old, new) for old, new in edits if old in base and new in patched] == edits
    assert patched == base.replace(edits[0][0], edits[0][1]).replace(edits[1][0], edits[1][1])
