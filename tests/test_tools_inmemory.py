"""The MCP tools through the SDK's in-memory client, with a fake scorer: fast checks of every
tool's schema, results and refusals. The scorer is a fake here because these tests are about
the tool layer; the real child and the real stdio transport are exercised end to end in
tests/test_mcp_e2e.py and tests/test_server_scorer.py.
"""

from __future__ import annotations

import json
import os
import re
import sysconfig
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from patchwarden.scorer.protocol import (
    Failure,
    FreezeHandled,
    FreezeSummary,
    ProposeFreeze,
    Scored,
    ScorePatch,
    VerdictSummary,
)
from patchwarden.server._app import build_app
from patchwarden.server._audit import AuditLog
from patchwarden.server.tools import READ_ONLY, TOOLS, Session, tool_named
from tests._tool_sessions import CONTRACT, SUMMARY, FakeScorer, example_session


@dataclass
class Harness:
    session: Session
    scorer: FakeScorer
    audit: Path

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        async def go() -> Any:
            async with Client(build_app(self.session, AuditLog(self.audit, "s1"))) as client:
                return await client.call_tool(tool, arguments or {})

        return anyio.run(go)


@pytest.fixture
def harness(example_repo: Path, tmp_path: Path) -> Iterator[Harness]:
    scorer = FakeScorer()
    with example_session(example_repo, tmp_path / "state", scorer) as session:
        yield Harness(session, scorer, tmp_path / "logs")


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_every_tool_is_listed_with_schemas_and_honest_annotations(harness: Harness) -> None:
    async def go() -> Any:
        app = build_app(harness.session, AuditLog(harness.audit, "s1"))
        async with Client(app) as client:
            return await client.list_tools()

    tools = {t.name: t for t in anyio.run(go).tools}
    assert list(tools) == [tool.name for tool in TOOLS]
    read_only = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint}
    assert read_only == {tool.name for tool in TOOLS if tool.annotations is READ_ONLY}
    for tool in TOOLS:
        # What the client sees is what the tool declares: the adapter adds and drops nothing.
        published, declared = tools[tool.name], tool.args.model_json_schema()
        assert published.input_schema["properties"] == declared.get("properties", {}), tool.name
        assert published.input_schema.get("required") == declared.get("required"), tool.name
        assert published.output_schema == tool.result.model_json_schema(
            mode="serialization", by_alias=True
        ), tool.name
        assert (published.title, published.description) == (tool.title, tool.published)
        assert published.annotations == tool.annotations, tool.name
    # The summary's fields are the protocol's: one schema, not three.
    verdict = tool_named("submit_patch").result.model_fields
    assert set(VerdictSummary.model_fields) <= set(verdict)
    for name, info in VerdictSummary.model_fields.items():
        assert verdict[name].annotation in (info.annotation, info.annotation | None), name


def test_file_tools_edit_the_worktree_and_refuse_contract_paths(harness: Harness) -> None:
    listed = harness.call("list_files", {"path": "orders"}).structured_content
    assert {e["path"] for e in listed["entries"]} >= {"orders/__init__.py", "orders/total.py"}
    read = harness.call("read_file", {"path": "orders/total.py", "start_line": 1, "end_line": 2})
    assert read.structured_content["start_line"] == 1
    written = harness.call("write_file", {"path": "orders/extra.py", "content": "X = 1\n"})
    assert written.structured_content == {"path": "orders/extra.py", "bytes_written": 6}
    edited = harness.call(
        "edit_file", {"path": "orders/extra.py", "old_text": "X = 1", "new_text": "X = 2"}
    )
    assert edited.structured_content == {"path": "orders/extra.py", "replacements": 1}
    assert (harness.session.workspace.tree / "orders/extra.py").read_text() == "X = 2\n"
    diff = harness.call("diff").structured_content
    assert "+X = 2" in diff["diff"]
    refused = harness.call("write_file", {"path": CONTRACT, "content": "seeds: []\n"})
    assert refused.is_error and "read-only" in _text(refused)
    escaped = harness.call("read_file", {"path": "../outside"})
    assert escaped.is_error
    missing = harness.call(
        "edit_file", {"path": "orders/extra.py", "old_text": "nope", "new_text": ""}
    )
    assert missing.is_error and "old_text was not found" in _text(missing)


def test_submit_patch_returns_the_protocol_summary_and_counts_submissions(
    harness: Harness,
) -> None:
    harness.scorer.answers = [
        Scored(id=1, summary=SUMMARY),
        Failure(id=2, error="the scorer could not read the contract"),
        Scored(id=3, summary=SUMMARY),
    ]
    harness.call("write_file", {"path": "orders/extra.py", "content": "X = 1\n"})
    result = harness.call("submit_patch", {"message": "add X"})
    assert not result.is_error
    assert result.structured_content == {
        "status": "scored",
        "submission": 1,
        "runs_done": 0,
        "runs_total": 6,
        **SUMMARY.model_dump(mode="json", by_alias=True),
    }
    asked = harness.scorer.asked[0]
    assert isinstance(asked, ScorePatch)
    assert asked.parent == harness.session.workspace.base and len(asked.patch) == 40
    failed = harness.call("submit_patch", {"message": "again"})
    assert failed.is_error
    assert "no verdict: the scorer could not judge the patch: the scorer could not read" in (
        _text(failed)
    )
    # Only judged submissions count (docs/reliability.md): the failed one left the budget.
    assert "it was not counted (1 submissions left)" in _text(failed)
    assert not harness.call("submit_patch", {"message": "third"}).is_error
    capped = harness.call("submit_patch", {"message": "fourth"})
    assert capped.is_error and "submission limit reached (2 per session)" in _text(capped)
    assert len(harness.scorer.asked) == 3


def test_request_freeze_goes_to_the_scorer_with_the_last_patch(harness: Harness) -> None:
    nothing = harness.call(
        "request_freeze", {"test_id": "tests/test_unit.py::test_a", "reason": "r"}
    )
    assert nothing.structured_content["status"] == "rejected" and harness.scorer.asked == []
    harness.scorer.answers = [
        Scored(id=1, summary=SUMMARY),
        FreezeHandled(id=2, freeze=FreezeSummary(status="proposed_for_review", reason="ok")),
    ]
    harness.call("write_file", {"path": "orders/extra.py", "content": "X = 1\n"})
    assert not harness.call("submit_patch", {"message": "m"}).is_error
    proposed = harness.call(
        "request_freeze", {"test_id": "tests/test_unit.py::test_a", "reason": "flaky clock"}
    )
    assert proposed.structured_content == {"status": "proposed_for_review", "reason": "ok"}
    asked = harness.scorer.asked[1]
    assert isinstance(asked, ProposeFreeze)
    assert asked.patch == harness.session.workspace.submissions[-1]
    assert asked.test_id == "tests/test_unit.py::test_a" and asked.reason == "flaky clock"
    bad = harness.call("request_freeze", {"test_id": "-p evil", "reason": "r"})
    assert bad.is_error


def test_get_contract_and_audit_log(harness: Harness) -> None:
    info = harness.call("get_contract").structured_content
    assert [p["id"] for p in info["properties"]] == [
        "prop.order_total_non_negative",
        "prop.order_total_matches_fixture",
        "prop.bulk_rounding",
    ]
    assert CONTRACT in info["read_only_paths"]
    lines = [json.loads(line) for line in (harness.audit / "audit.jsonl").read_text().splitlines()]
    assert [entry["tool"] for entry in lines] == ["get_contract"]


SKU_PATTERN = """\
import re


def sku_pattern(text):
    return re.compile(text)
"""
SKU_TEST = """\
from orders.sku import sku_pattern


def test_sku_pattern():
    assert sku_pattern("(")
"""


def _stdlib_fold_of_re_compile() -> str:
    """The fold line for ``re.compile("(")``'s frames, read here with the traceback module
    (the sandbox runs this interpreter)."""
    try:
        re.compile("(")
    except re.error as exc:
        frames = traceback.extract_tb(exc.__traceback__)[1:]
    stdlib = sysconfig.get_paths()["stdlib"]
    first, last = (
        f"{os.path.relpath(f.filename, stdlib)}:{f.lineno}" for f in (frames[0], frames[-1])
    )
    return f"  ... {len(frames)} frames in the standard library ({first} to {last})"


@pytest.mark.bwrap
def test_run_tests_leads_each_failure_with_the_worktrees_frames(harness: Harness) -> None:
    harness.call("write_file", {"path": "orders/sku.py", "content": SKU_PATTERN})
    harness.call("write_file", {"path": "tests/test_sku.py", "content": SKU_TEST})
    run = harness.call("run_tests", {"tests": ["tests/test_sku.py"]}).structured_content
    assert run["counts"] == {"failed": 1} and run["complete"], run
    assert run["tests"][0]["failure_text"].splitlines() == [
        "tests/test_sku.py:5 in test_sku_pattern",
        '    assert sku_pattern("(")',
        "orders/sku.py:5 in sku_pattern",
        "    return re.compile(text)",
        _stdlib_fold_of_re_compile(),
        "re.error: missing ), unterminated subpattern at position 0",
    ]
    # The long form: pytest's report, the standard library's entries folded to fit.
    long = harness.call("run_tests", {"tests": ["tests/test_sku.py"], "detail": "long"})
    lines = long.structured_content["tests"][0]["failure_text"].splitlines()
    # (pytest's default style: the test function's entry long, the middle ones short)
    assert lines[:2] == ["    def test_sku_pattern():", '>       assert sku_pattern("(")']
    assert lines[-5:-1] == [
        "orders/sku.py:5: in sku_pattern",
        "    return re.compile(text)",
        "           ^^^^^^^^^^^^^^^^",
        _stdlib_fold_of_re_compile(),
    ]
    assert lines[-1].split(None, 1) == [
        "E",
        "re.error: missing ), unterminated subpattern at position 0",
    ]
    # A test module that does not import: the module is the entry, its line leads.
    harness.call(
        "write_file", {"path": "tests/test_sku.py", "content": "from orders.sku import sku\n"}
    )
    run = harness.call("run_tests", {"tests": ["tests/test_sku.py"]}).structured_content
    assert run["counts"] == {"error": 1} and run["exit_code"] == 2, run
    (entry,) = run["tests"]
    assert (entry["node_id"], entry["outcome"]) == ("tests/test_sku.py", "error")
    lines = entry["failure_text"].splitlines()
    assert lines[:2] == ["tests/test_sku.py:1 in <module>", "    from orders.sku import sku"]
    assert lines[2].startswith("ImportError: cannot import name 'sku' from 'orders.sku' (")
    assert len(lines) == 3
