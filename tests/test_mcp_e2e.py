"""End to end: the SDK client over stdio against ``patchwarden serve`` on the orders example.

Two module-scoped sessions keep this affordable (a sandboxed pytest process
costs about two seconds, a scored patch six of them):

- ``agent``: schemas, file tools, attacks and sandbox probes; nothing is submitted.
- ``scoring``: the three example patches, the hooks trick and the submission cap.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import git
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters

from patchwarden.server.tools import READ_ONLY, TOOLS
from tests._tool_sessions import until_scored

pytestmark = pytest.mark.bwrap

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "orders"
REQUIRED = {
    tool.name: {name for name, info in tool.args.model_fields.items() if info.is_required()}
    for tool in TOOLS
}
"""Each tool's required arguments, as the registry declares them."""
READ_ONLY_TOOLS = {tool.name for tool in TOOLS if tool.annotations is READ_ONLY}
SUMMARY_KEYS = {"verdict_id", "decision", "results", "scorecard", "counts"} | {
    "status",
    "submission",
    "runs_done",
    "runs_total",
}


@dataclass
class Served:
    """A running ``patchwarden serve`` and a client connected to it."""

    portal: BlockingPortal
    client: Client
    dirs: dict[str, Path]
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            self.progress.append((value, total, message))

        def once(tool: str, arguments: dict[str, Any]) -> Any:
            return self.portal.call(
                lambda: self.client.call_tool(tool, arguments, progress_callback=progress)
            )

        return until_scored(tool, once(tool, arguments or {}), once)

    def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.call(tool, arguments)
        assert not result.is_error, _text(result)
        return dict(result.structured_content)

    def refused(self, tool: str, arguments: dict[str, Any], match: str) -> str:
        result = self.call(tool, arguments)
        assert result.is_error, f"{tool} {arguments} was not refused: {_text(result)}"
        assert match.lower() in _text(result).lower(), _text(result)
        return _text(result)


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


QUARANTINED = "tests/test_unit.py::test_order_discount"


def add_quarantine_commit(repo: Path) -> str:
    """A commit on top of base whose contract quarantines one unit test; tagged 'quarantined'."""
    contract = repo / "contract" / "differential-contract.yaml"
    contract.write_text(contract.read_text() + "quarantine_list: tests/quarantine.json\n")
    r = git.Repo(repo)
    entry = {"test_id": QUARANTINED, "failures": 1, "runs": 3, "since": "2026-11-05T10:00:00Z"}
    (repo / "tests" / "quarantine.json").write_text(
        json.dumps({"base": r.head.commit.hexsha, "runs": 3, "tests": [entry]})
    )
    r.git.add("--all")
    identity = {
        "GIT_AUTHOR_NAME": "op",
        "GIT_AUTHOR_EMAIL": "op@example.invalid",
        "GIT_COMMITTER_NAME": "op",
        "GIT_COMMITTER_EMAIL": "op@example.invalid",
    }
    r.git.commit("-q", "--no-verify", "-m", "quarantine a flaky test", env=identity)
    r.create_tag("quarantined")
    return "quarantined"


def build_example(
    base: Path, config_extra: str = "", quarantine: bool = False, scorer_extra: str = ""
) -> dict[str, Path]:
    repo = base / "orders"
    subprocess.run(
        [sys.executable, str(EXAMPLES / "make_repo.py"), str(repo)], check=True, capture_output=True
    )
    base_ref = add_quarantine_commit(repo) if quarantine else "base"
    dirs = {
        "base": base,
        "repo": repo,
        "state": base / "state",
        "logs": base / "logs",
        "scorer_state": base / "state" / "scorer",
        "config": base / "config.yaml",
    }
    dirs["config"].write_text(
        f"scorer:\n  state_dir: {json.dumps(str(dirs['scorer_state']))}\n"
        f"  log_dir: {json.dumps(str(dirs['logs']))}\n{scorer_extra}"
        f"agent:\n  repo: {json.dumps(str(repo))}\n  base: {base_ref}\n{config_extra}"
    )
    return dirs


def server_env(dirs: dict[str, Path]) -> dict[str, str]:
    env = {"XDG_STATE_HOME": str(dirs["state"])}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A factory: start a server on a fresh example repository (stopped at module end)."""
    stack: list[Any] = []
    portal_cm = start_blocking_portal()
    portal = portal_cm.__enter__()

    def start(config_extra: str = "", quarantine: bool = False, scorer_extra: str = "") -> Served:
        dirs = build_example(tmp_path_factory.mktemp("e2e"), config_extra, quarantine, scorer_extra)
        params = StdioServerParameters(
            command=sys.executable,
            args=[
                "-P",
                "-m",
                "patchwarden",
                "serve",
                "--config",
                str(dirs["config"]),
            ],
            env=server_env(dirs),
            cwd=str(dirs["base"]),
        )
        cm = portal.wrap_async_context_manager(Client(params, read_timeout_seconds=600))
        client = cm.__enter__()
        stack.append(cm)
        return Served(portal, client, dirs)

    try:
        yield start
    finally:
        for cm in reversed(stack):
            cm.__exit__(None, None, None)
        portal_cm.__exit__(None, None, None)


@pytest.fixture(scope="module")
def agent(serve: Any) -> Served:
    return serve(quarantine=True)


# -- the agent session: schemas, file tools, attacks ----------------------------


def test_tools_have_the_documented_names_schemas_and_annotations(agent: Served) -> None:
    tools = {t.name: t for t in agent.portal.call(agent.client.list_tools).tools}
    assert list(tools) == [tool.name for tool in TOOLS]
    assert REQUIRED["write_file"] == {"path", "content"}  # the derivation reads the models
    for name, required in REQUIRED.items():
        tool = tools[name]
        assert set(tool.input_schema.get("required", [])) == required, name
        assert tool.output_schema and tool.output_schema.get("properties"), name
        assert tool.description, name
        hints = tool.annotations
        assert hints is not None
        assert hints.read_only_hint is (name in READ_ONLY_TOOLS), name
        assert hints.open_world_hint is False, name
    assert set(tools["run_tests"].input_schema["properties"]) == {
        "tests",
        "keyword",
        "timeout_s",
        "detail",
    }
    assert set(tools["read_file"].input_schema["properties"]) == {"path", "start_line", "end_line"}
    assert set(tools["list_files"].input_schema["properties"]) == {"path", "pattern"}
    assert set(tools["submit_patch"].output_schema["properties"]) == SUMMARY_KEYS
    assert tools["write_file"].annotations.destructive_hint is True
    assert tools["diff"].annotations.idempotent_hint is True


def test_get_contract(agent: Served) -> None:
    contract = agent.ok("get_contract")
    assert contract["seeds"] == [11, 29, 47]
    assert [p["id"] for p in contract["properties"]] == [
        "prop.order_total_non_negative",
        "prop.order_total_matches_fixture",
        "prop.bulk_rounding",
    ]
    assert "contract/differential-contract.yaml" in contract["read_only_paths"]
    assert "tests/properties" in contract["read_only_paths"]
    assert "tests/quarantine.json" in contract["read_only_paths"]
    assert "tests/fixtures/orders.json" in contract["read_only_paths"]
    assert contract["quarantined_tests"] == [QUARANTINED]
    assert contract["submissions_left"] == 20


def test_list_read_write_edit_and_diff(agent: Served) -> None:
    listing = agent.ok("list_files", {"pattern": "*.py"})
    paths = {e["path"] for e in listing["entries"]}
    assert {"orders/total.py", "tests/test_unit.py"} <= paths
    assert not any(p.startswith(".git") for p in paths)
    head = agent.ok("read_file", {"path": "orders/total.py", "start_line": 1, "end_line": 1})
    assert head["content"].startswith('"""Order totals')
    assert head["total_lines"] > 10 and head["end_line"] == 1
    assert agent.ok("write_file", {"path": "notes/todo.txt", "content": "étude\n"}) == {
        "path": "notes/todo.txt",
        "bytes_written": 7,
    }
    assert (
        agent.ok("edit_file", {"path": "notes/todo.txt", "old_text": "étude", "new_text": "study"})[
            "replacements"
        ]
        == 1
    )
    agent.refused(
        "edit_file", {"path": "notes/todo.txt", "old_text": "absent", "new_text": "x"}, "not found"
    )
    agent.ok("write_file", {"path": "notes/twice.txt", "content": "a a\n"})
    agent.refused(
        "edit_file", {"path": "notes/twice.txt", "old_text": "a", "new_text": "b"}, "occurs 2 times"
    )
    diff = agent.ok("diff")
    assert {f["path"] for f in diff["files"]} == {"notes/todo.txt", "notes/twice.txt"}
    assert "+study" in diff["diff"]


def test_apply_patch(agent: Served) -> None:
    patch = textwrap.dedent("""\
        diff --git a/notes/todo.txt b/notes/todo.txt
        --- a/notes/todo.txt
        +++ b/notes/todo.txt
        @@ -1 +1 @@
        -study
        +study more
        """)
    assert agent.ok("apply_patch", {"patch": patch})["files"] == [
        {"path": "notes/todo.txt", "change": "modified"}
    ]
    hook = (
        "diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n"
        "--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+touch /tmp/pw-hook\n"
    )
    agent.refused("apply_patch", {"patch": hook}, ".git")
    contract = (
        "--- a/contract/differential-contract.yaml\n+++ b/contract/differential-contract.yaml\n"
        "@@ -1 +1 @@\n-contract_version: 1\n+contract_version: 2\n"
    )
    agent.refused("apply_patch", {"patch": contract}, "contract path")


@pytest.mark.parametrize(
    ("tool", "arguments", "match"),
    [
        ("read_file", {"path": "../x"}, "'..'"),
        ("read_file", {"path": "/etc/passwd"}, "absolute"),
        ("read_file", {"path": ".git"}, ".git"),
        ("list_files", {"path": "/"}, "absolute"),
        ("run_python", {"path": "../x.py"}, "'..'"),
        ("run_python", {"path": "/etc/passwd"}, "absolute"),
        ("run_python", {"path": ".git/config"}, ".git"),
        ("write_file", {"path": "../escape.txt", "content": "x"}, "'..'"),
        ("write_file", {"path": "/tmp/escape.txt", "content": "x"}, "absolute"),
        (
            "write_file",
            {"path": "contract/differential-contract.yaml", "content": "seeds: [1]\n"},
            "contract path",
        ),
        (
            "write_file",
            {"path": "tests/properties/test_orders.py", "content": "x"},
            "contract path",
        ),
        ("write_file", {"path": "tests/fixtures/manifest.json", "content": "{}"}, "contract path"),
        ("write_file", {"path": "tests/fixtures/orders.json", "content": "{}"}, "contract path"),
        ("write_file", {"path": ".freeze/record.json", "content": "{}"}, "contract path"),
        (
            "edit_file",
            {"path": "contract/differential-contract.yaml", "old_text": "seeds", "new_text": "x"},
            "contract path",
        ),
        ("write_file", {"path": ".git/config", "content": "x"}, ".git"),
    ],
)
def test_paths_outside_the_policy_are_refused(
    agent: Served, tool: str, arguments: dict[str, Any], match: str
) -> None:
    agent.refused(tool, arguments, match)
    assert not Path("/tmp/escape.txt").exists()


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(agent: Served) -> None:
    for tool, arguments in [
        ("read_file", {}),
        ("read_file", {"path": 3}),
        ("read_file", {"path": "orders/total.py", "start_line": 0}),
        ("write_file", {"path": "x.txt"}),
        ("run_tests", {"tests": "tests/test_unit.py"}),
        ("run_tests", {"tests": ["--rootdir=/"]}),
        ("run_tests", {"timeout_s": -1}),
        ("run_tests", {"timeout_s": 10_000}),
        ("submit_patch", {"message": ""}),
        ("request_freeze", {"test_id": "x"}),
        ("no_such_tool", {}),
    ]:
        result = agent.call(tool, arguments)
        assert result.is_error, (tool, arguments, _text(result))
        assert agent.ok("read_file", {"path": "orders/__init__.py"})["total_lines"] > 0


def test_request_freeze_never_skips(agent: Served) -> None:
    answer = agent.ok(
        "request_freeze", {"test_id": "tests/test_unit.py::test_order_discount", "reason": "flaky"}
    )
    assert answer == {
        "status": "rejected",
        "reason": "submit a patch first: a freeze request is bound to a submitted patch",
    }


def test_run_tests_reports_outcomes_and_progress(agent: Served) -> None:
    agent.progress.clear()
    run = agent.ok("run_tests", {"tests": ["tests/test_unit.py"]})
    assert run["counts"] == {"passed": 5}
    assert run["complete"] and not run["timed_out"]
    assert run["quarantined_left_out"] == 1 and run["quarantined"] == [QUARANTINED]
    assert QUARANTINED not in {t["node_id"] for t in run["tests"]}
    assert all(t["outcome"] == "passed" for t in run["tests"])
    assert agent.progress and agent.progress[-1][0] == 100.0
    run = agent.ok("run_tests", {"keyword": "bulk_rounding"})
    assert [t["node_id"] for t in run["tests"]] == [
        "tests/properties/test_orders.py::test_bulk_rounding_sampled"
    ]
    assert run["counts"] == {"failed": 1}
    assert "assert" in run["tests"][0]["failure_text"]


SYMLINK_TEST = """\
import os

def test_plant_links():
    os.symlink("/etc", "link_etc")
    os.symlink("../../..", "link_up")
    os.symlink("/", "notes/link_root")
    os.symlink("contract/differential-contract.yaml", "link_contract")
"""


def test_symlinks_planted_by_a_test_run_are_refused(agent: Served) -> None:
    agent.ok("write_file", {"path": "tests/test_plant_links.py", "content": SYMLINK_TEST})
    run = agent.ok("run_tests", {"tests": ["tests/test_plant_links.py"]})
    assert run["counts"] == {"passed": 1}, run
    kinds = {e["path"]: e["kind"] for e in agent.ok("list_files")["entries"]}
    assert kinds["link_etc"] == kinds["link_up"] == kinds["link_contract"] == "symlink"
    assert not any(p.startswith(("link_etc/", "link_up/")) for p in kinds)
    agent.refused("read_file", {"path": "link_etc/passwd"}, "leaving the worktree")
    agent.refused("read_file", {"path": "link_up/etc/passwd"}, "leaving the worktree")
    agent.refused("read_file", {"path": "notes/link_root/etc/passwd"}, "leaving the worktree")
    agent.refused("list_files", {"path": "link_etc"}, "leaving the worktree")
    agent.refused("run_python", {"path": "link_etc/passwd"}, "leaving the worktree")
    # The search reads what read_file may: nothing of /etc through the link.
    assert agent.ok("search_text", {"pattern": "root:x:0:0"})["matches"] == []
    agent.refused("write_file", {"path": "link_etc/evil", "content": "x"}, "symbolic link")
    agent.refused("write_file", {"path": "link_up/tmp/evil", "content": "x"}, "symbolic link")
    agent.refused("write_file", {"path": "link_contract", "content": "x"}, "symbolic link")
    agent.refused(
        "edit_file",
        {"path": "link_contract", "old_text": "seeds", "new_text": "x"},
        "symbolic link",
    )
    patch = "--- /dev/null\n+++ b/link_etc/evil\n@@ -0,0 +1 @@\n+x\n"
    agent.refused("apply_patch", {"patch": patch}, "symbolic link")
    assert not Path("/etc/evil").exists()
    # A link that stays inside the worktree may be read (the contract is readable anyway).
    assert "seeds" in agent.ok("read_file", {"path": "link_contract"})["content"]


PROBE_TEST = """\
import json, os

def _cmdlines():
    lines = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{{pid}}/cmdline", "rb") as f:
                    lines.append(f.read().replace(b"\\0", b" ").decode(errors="replace"))
            except OSError:
                pass
    return lines

def _fd_targets():
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{{fd}}"))
        except OSError:
            pass
    return targets

def _dot_git():
    try:
        with open(".git") as f:
            return f.read()
    except IsADirectoryError:
        return os.listdir(".git")
    except OSError as exc:
        return type(exc).__name__

def test_probe():
    seen = {{
        "scorer_state": os.path.exists({scorer_state!r}),
        "logs": os.path.exists({logs!r}),
        "server_state": os.path.exists({server_state!r}),
        "repo_git": os.path.exists({repo_git!r}),
        "config": os.path.exists({config!r}),
        "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "scorer_visible": any(" scorer " in c for c in _cmdlines()),
        "serve_visible": any(" serve " in c for c in _cmdlines()),
        "dot_git": _dot_git(),
        "fds": _fd_targets(),
        "uid": os.getuid(),
    }}
    assert False, "PROBE " + json.dumps(seen) + " END"
"""


def test_code_run_by_run_tests_cannot_find_or_reach_the_scorer(agent: Served) -> None:
    dirs = agent.dirs
    probe = PROBE_TEST.format(
        scorer_state=str(dirs["scorer_state"]),
        logs=str(dirs["logs"]),
        server_state=str(dirs["state"] / "patchwarden" / "server"),
        repo_git=str(dirs["repo"] / ".git"),
        config=str(dirs["config"]),
    )
    agent.ok("write_file", {"path": "tests/test_probe.py", "content": probe})
    run = agent.ok("run_tests", {"tests": ["tests/test_probe.py"]})
    text = run["tests"][0]["failure_text"]
    assert "PROBE " in text, run
    seen = json.loads(text[text.rindex("PROBE ") + 6 : text.rindex(" END")])
    assert seen["scorer_state"] is False
    assert seen["logs"] is False
    assert seen["server_state"] is False
    assert seen["repo_git"] is False
    assert seen["config"] is False
    assert seen["scorer_visible"] is False and seen["serve_visible"] is False
    assert len(seen["pids"]) <= 5, seen[
        "pids"
    ]  # bubblewrap's init, setpriv/python: a new PID namespace
    # covered (an empty directory or /dev/null on a nodev mount): the gitdir path does not show
    assert seen["dot_git"] in ("", [], "PermissionError"), seen["dot_git"]
    assert seen["uid"] != 0
    scorer_pipes = _scorer_pipes(dirs["config"])
    assert scorer_pipes and not scorer_pipes & set(seen["fds"]), (scorer_pipes, seen["fds"])
    assert not any(str(dirs["base"]) in target for target in seen["fds"])


def _scorer_pipes(config: Path) -> set[str]:
    """The pipes of this session's scorer child (the child of the server started with
    ``config``), seen from the host."""
    pipes = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"patchwarden.scorer" not in cmdline:
                continue
            stat = Path(f"/proc/{pid}/stat").read_text()
            parent = stat[stat.rindex(")") + 2 :].split()[1]
            if str(config).encode() in Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0"):
                pipes |= {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1)}
        except OSError:
            continue
    return pipes


SLOW_TEST = """\
import time

def test_slow():
    print("sleeping", flush=True)
    time.sleep(120)
"""


def test_run_tests_timeout_and_cancellation(agent: Served) -> None:
    agent.ok("write_file", {"path": "tests/test_slow.py", "content": SLOW_TEST})
    started = time.monotonic()
    run = agent.ok("run_tests", {"tests": ["tests/test_slow.py"], "timeout_s": 3})
    assert run["timed_out"] and not run["complete"]
    assert time.monotonic() - started < 30

    async def cancelled_call() -> bool:
        with anyio.move_on_after(4) as scope:
            await agent.client.call_tool("run_tests", {"tests": ["tests/test_slow.py"]})
        return scope.cancelled_caught

    assert agent.portal.call(cancelled_call)
    started = time.monotonic()
    run = agent.ok("run_tests", {"tests": ["tests/test_unit.py"]})  # the lock was released
    assert run["counts"] == {"passed": 5}
    assert time.monotonic() - started < 30
    audit = [
        json.loads(line) for line in (agent.dirs["logs"] / "audit.jsonl").read_text().splitlines()
    ]
    assert any(e["tool"] == "run_tests" and e["outcome"] == "cancelled" for e in audit)


def test_audit_log_has_one_line_per_call_without_contents(agent: Served) -> None:
    agent.ok("write_file", {"path": "notes/secret.txt", "content": "TOP-SECRET-CONTENT"})
    agent.call("no_such_tool", {"x": 1})
    lines = (agent.dirs["logs"] / "audit.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    assert "TOP-SECRET-CONTENT" not in "".join(lines)
    last_write = [e for e in entries if e["tool"] == "write_file"][-1]
    assert last_write["arguments"] == {"path": "notes/secret.txt", "content": {"elided_chars": 18}}
    assert last_write["outcome"] == "ok" and last_write["duration_s"] >= 0
    assert entries[-1]["tool"] == "no_such_tool" and entries[-1]["outcome"] == "error"
    assert {"time", "tool", "arguments", "outcome", "message", "duration_s"} <= set(entries[-1])
    refused = [e for e in entries if e["tool"] == "read_file" and e["outcome"] == "error"]
    assert any("'..'" in e["message"] for e in refused)


# -- the scoring session --------------------------------------------------------

EXPECTED = {
    "fix": (
        "accept",
        {
            "prop.bulk_rounding": "parent_fail_cleared",
            "prop.order_total_non_negative": "both_pass",
            "prop.order_total_matches_fixture": "both_pass",
        },
    ),
    "regression": ("reject", {"prop.order_total_non_negative": "regression"}),
    "refactor": (
        "propose_freeze",
        {
            "prop.bulk_rounding": "shared_variant_fail",
            "prop.order_total_non_negative": "both_pass",
            "prop.order_total_matches_fixture": "both_pass",
        },
    ),
}
LEAKS = ("AssertionError", "Traceback", "|", "11", "29", "47")


@pytest.fixture(scope="module")
def scoring(serve: Any) -> Served:
    return serve("  max_submissions: 4\n")


def _overlay(name: str) -> dict[str, str]:
    directory = EXAMPLES / "patches" / name
    return {
        p.relative_to(directory).as_posix(): p.read_text()
        for p in directory.rglob("*")
        if p.is_file() and p.name != "message.txt"
    }


def _submit_overlay(scoring: Served, name: str, base_files: dict[str, str]) -> dict[str, Any]:
    for path, content in base_files.items():
        scoring.ok("write_file", {"path": path, "content": content})
    for path, content in _overlay(name).items():
        scoring.ok("write_file", {"path": path, "content": content})
    scoring.progress.clear()
    result = scoring.call("submit_patch", {"message": f"example patch {name}"})
    assert not result.is_error, _text(result)
    summary = dict(result.structured_content)
    # The scorer's runs reached the client as progress, one notification a finished run,
    # counting the contract's schedule only (parent and patch, each seed).
    runs = [(v, t) for v, t, m in scoring.progress if m and "runs done" in m]
    assert runs[-1] == (summary["runs_total"], summary["runs_total"]) == (6.0, 6.0), runs
    assert [v for v, _ in runs] == sorted(v for v, _ in runs)
    assert {v for v, _ in runs} == {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}
    # The verdict id names a time and a commit, so it may hold any digits; everything
    # else the agent sees must carry no witness, traceback or seed.
    visible = _text(result).replace(summary["verdict_id"], "")
    for leak in LEAKS:
        assert leak not in visible, (leak, visible)
    return summary


def test_nothing_to_submit_on_the_base(scoring: Served) -> None:
    scoring.refused("submit_patch", {"message": "empty"}, "nothing to submit")


@pytest.mark.parametrize("name", list(EXPECTED))
def test_example_patches_get_their_verdicts(scoring: Served, name: str) -> None:
    repo = git.Repo(scoring.dirs["repo"])
    base_files = {
        p: repo.git.show(f"base:{p}", strip_newline_in_stdout=False) for p in _overlay(name)
    }
    summary = _submit_overlay(scoring, name, base_files)
    decision, reasons = EXPECTED[name]
    assert set(summary) == SUMMARY_KEYS
    assert summary["decision"] == decision, summary
    got = {r["prop"]: r["reason"] for r in summary["results"]}
    assert {p: got[p] for p in reasons} == reasons
    assert all(set(r) == {"prop", "decision", "reason"} for r in summary["results"])
    assert all(set(c) == {"check", "outcome"} for c in summary["scorecard"])
    assert {c["check"] for c in summary["scorecard"]} >= {"contract_tampered", "differential"}
    assert summary["counts"]["parent"]["lines"] == summary["counts"]["patch"]["lines"] == 9
    bundle = scoring.dirs["logs"] / "verdicts" / summary["verdict_id"]
    assert (bundle / "decision.json").is_file()


def test_request_freeze_runs_the_procedure_on_the_last_patch(scoring: Served) -> None:
    """After the refactor's propose_freeze, the agent asks to freeze the shared failure."""
    test_id = "tests/properties/test_orders.py::test_bulk_rounding_sampled"
    answer = scoring.ok("request_freeze", {"test_id": test_id, "reason": "shared variant fail"})
    assert answer["status"] in ("proposed_for_review", "rejected")
    assert answer["reason"] and str(scoring.dirs["base"]) not in answer["reason"]
    proposals = list((scoring.dirs["logs"] / "freeze").glob("*/proposal.json"))
    assert len(proposals) == 1
    assert json.loads(proposals[0].read_text())["test_id"] == test_id
    listing = scoring.ok("list_files", {"path": "."})["entries"]
    assert not any(e["path"].startswith(".freeze") for e in listing)  # nothing skipped in the tree


HOOK_PATCH = """\
diff --git a/.githooks/pre-commit b/.githooks/pre-commit
new file mode 100755
--- /dev/null
+++ b/.githooks/pre-commit
@@ -0,0 +1,2 @@
+#!/bin/sh
+touch {marker}
"""

HOOK_TEST = """\
import os, subprocess

def test_point_git_at_our_hooks():
    for args in (["git", "config", "core.hooksPath", ".githooks"],
                 ["git", "config", "--global", "core.hooksPath", ".githooks"]):
        subprocess.run(args, capture_output=True)
    try:
        with open(".git", "w") as f:
            f.write("gitdir: .githooks\\n")
    except OSError:
        pass
    with open(".gitconfig", "w") as f:
        f.write("[core]\\n\\thooksPath = .githooks\\n")
"""


def test_hooks_trick_does_not_run_at_commit(scoring: Served, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    scoring.ok("apply_patch", {"patch": HOOK_PATCH.format(marker=marker)})
    scoring.ok("write_file", {"path": "tests/test_hooks_trick.py", "content": HOOK_TEST})
    scoring.refused("write_file", {"path": ".git/hooks/pre-commit", "content": "x"}, ".git")
    scoring.ok("run_tests", {"tests": ["tests/test_hooks_trick.py"]})
    result = scoring.call("submit_patch", {"message": "hooks"})
    assert not result.is_error, _text(result)
    assert not marker.exists()
    repo = git.Repo(scoring.dirs["repo"])
    base = repo.commit("base").hexsha
    refs = sorted(
        r for r in repo.git.for_each_ref("--format=%(refname)", "refs/patchwarden").splitlines()
    )
    assert len(refs) == 4
    for ref in refs:
        commit = repo.commit(ref)
        assert [p.hexsha for p in commit.parents] == [base]
        assert commit.author.email == "agent@patchwarden.invalid"
    assert ".githooks/pre-commit" in repo.commit(refs[-1]).stats.files
    assert repo.git.status("--porcelain") == ""


def test_submissions_are_capped(scoring: Served) -> None:
    scoring.ok("write_file", {"path": "notes/one-more.txt", "content": "x\n"})
    scoring.refused("submit_patch", {"message": "fifth"}, "submission limit reached")
    assert scoring.ok("get_contract")["submissions_left"] == 0
