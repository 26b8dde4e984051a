"""Input fuzzing: malformed inputs never end in a traceback (docs/reliability.md).

Hypothesis makes broken versions of every input a user, an operator or an agent hands us: the
contract (YAML and JSON), the operator configuration, rows JSONL, fixture manifests,
quarantine lists, freeze records, tickets, held-out files, batch requests, the scorer
protocol's request lines, and the arguments of every MCP tool (through the SDK's in-process
client against a real server whose scorer is a fake: the scorer's own parsing is fuzzed
through its request lines).

The outcome is always one of: the input is accepted, a PatchwardenError whose message is one
line, or (MCP) a tool error with a message. Anything else (a KeyError, a RecursionError,
the SDK's bare "Error executing tool X" that hides an unexpected exception) fails the test.

Budget: ``PATCHWARDEN_FUZZ_EXAMPLES`` inputs per target (default 60 here in CI;
bench/fuzz.py runs at least 10,000 in all). ``INPUTS`` counts what each target was fed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import string
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import git
import pytest
import yaml
from anyio.from_thread import BlockingPortal, start_blocking_portal
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp import Client

from patchwarden import PatchwardenError
from patchwarden.sandbox import Limits, SandboxConfig
from patchwarden.scorer import (
    HELD_OUT_FILE,
    ScorerConfig,
    load_held_out,
    parse_contract,
    parse_rows,
    read_requests,
)
from patchwarden.scorer._fixtures import read_manifest
from patchwarden.scorer._process import ScorerSession, _serve_requests
from patchwarden.scorer.layers import _freeze
from patchwarden.scorer.layers._quarantine import parse_quarantine_list
from patchwarden.scorer.layers._tickets import read_ticket
from patchwarden.scorer.protocol import (
    Answer,
    Failure,
    FreezeHandled,
    FreezeSummary,
    ProposeFreeze,
    Request,
    Scored,
    ScorePatch,
    VerdictSummary,
)
from patchwarden.server import ScorerUnavailable
from patchwarden.server._app import build_app
from patchwarden.server._audit import AuditLog
from patchwarden.server._paths import PathPolicy
from patchwarden.server._workspace import open_workspace
from patchwarden.server.cli import cli
from patchwarden.server.config import parse_config
from patchwarden.server.tools import TOOLS, Session

EXAMPLES = int(os.environ.get("PATCHWARDEN_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.function_scoped_fixture,
        HealthCheck.filter_too_much,
    ],
)
INPUTS: Counter[str] = Counter()
"""Inputs fed per target (bench/fuzz.py prints them)."""
TOOL_OUTCOMES: Counter[tuple[str, str]] = Counter()
"""(tool, "result" or "tool error") per call: the fuzzing must reach the tools' work too."""


def one_line_or_nothing(target: str, call: Callable[[], object]) -> None:
    """Run ``call``: success, or a PatchwardenError of one line; anything else propagates."""
    INPUTS[target] += 1
    try:
        call()
    except PatchwardenError as exc:
        message = str(exc)
        assert message.strip(), f"{target}: an empty error"
        assert "\n" not in message and "\r" not in message, f"{target}: {message!r}"
        assert "Traceback" not in message


# -- strategies ---------------------------------------------------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=30)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
NASTY_TEXT = [
    "!!python/object/apply:os.system ['true']\n",
    "&a [*a, *a]\n",
    "a: &x [1]\nb: *x\n",
    "%YAML 9.9\n---\n",
    "--- |\n  text\n",
    "\t\tkey: value\n",
    "[" * 5000 + "]" * 5000,
    "{" * 3000,
    "a: " + "9" * 6000 + "\n",
    "\ufeff",
    "\x00\x01\x02",
    "key: value\nkey: other\n",
    "? [complex, key]\n: value\n",
    "- - - - - -\n",
    "seeds: !!binary aGVsbG8=\n",
    "\ud800",
]


@st.composite
def mutated(draw: st.DrawFn, value: Any, depth: int = 0) -> Any:
    """``value`` with a few random changes: keys dropped, added or given other values, items
    replaced, or (rarely) the whole value replaced."""
    if draw(st.integers(0, 11)) == 0:
        return draw(JSON_VALUES)
    if isinstance(value, dict):
        out = dict(value)
        for key in list(out):
            choice = draw(st.integers(0, 9))
            if choice == 0:
                del out[key]
            elif choice == 1:
                out[key] = draw(JSON_VALUES)
            elif choice in (2, 3) and depth < 6:
                out[key] = draw(mutated(out[key], depth + 1))
        if draw(st.integers(0, 5)) == 0:
            out[draw(st.text(max_size=12))] = draw(JSON_VALUES)
        return out
    if isinstance(value, list):
        out_list = list(value)
        if out_list and draw(st.integers(0, 4)) == 0:
            del out_list[draw(st.integers(0, len(out_list) - 1))]
        if draw(st.integers(0, 4)) == 0:
            out_list.append(draw(JSON_VALUES))
        return [draw(mutated(v, depth + 1)) if depth < 6 else v for v in out_list]
    return value


def _dump(value: Any, form: str) -> str:
    if form == "yaml":
        try:
            return str(yaml.safe_dump(value, sort_keys=False, allow_unicode=True))
        except (yaml.YAMLError, ValueError):
            return repr(value)
    return json.dumps(value)


@st.composite
def documents(draw: st.DrawFn, valid: Any, forms: tuple[str, ...] = ("yaml", "json")) -> str:
    """A text that is, or was nearly, ``valid``: mutated, dumped, and maybe damaged."""
    text = _dump(draw(mutated(valid)), draw(st.sampled_from(forms)))
    damage = draw(st.integers(0, 5))
    if damage == 0:
        text = text[: draw(st.integers(0, len(text)))]
    elif damage == 1:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(max_size=12)) + text[at:]
    elif damage == 2:
        text = draw(st.sampled_from(NASTY_TEXT)) + text
    elif damage == 3:
        text = draw(st.text(max_size=200))
    return text


CONTRACT = {
    "contract_version": 1,
    "seeds": [11, 29, 47],
    "spec_paths": ["tests/properties"],
    "fixture_manifest": "tests/fixtures/manifest.json",
    "properties": [
        {
            "id": "prop.order_total_non_negative",
            "oracle": "total >= 0",
            "test": "tests/properties/test_orders.py::test_total_non_negative",
        }
    ],
}
CONFIG = yaml.safe_load((Path(__file__).parents[1] / "configs" / "default.yaml").read_text())
CONFIG["scorer"]["state_dir"] = "/var/lib/patchwarden/scorer"
CONFIG["sandbox"]["uid_range"] = [100000, 100063]
ROW = {"prop": "prop.a", "seed": 11, "status": "pass", "witness": "", "tree": "parent"}
MANIFEST = {
    "fixtures": [
        {
            "fixture": "tests/fixtures/orders.json",
            "sha256": "a" * 64,
            "frozen_at": "2026-01-01T00:00:00Z",
            "covers": ["prop.a"],
        }
    ]
}
QUARANTINE = {
    "base": "a" * 40,
    "runs": 3,
    "tests": [
        {"test_id": "tests/t.py::a", "failures": 1, "runs": 3, "since": "2026-01-01T00:00:00Z"}
    ],
}
RECORD = {
    "test_id": "tests/test_unit.py::test_a",
    "fixture_path": "tests/fixtures/orders.json",
    "fixture_sha256": "b" * 64,
    "disagreement": [{"passed": True, "exit_code": 0}, {"passed": False, "exit_code": 1}],
    "oracle_path": "tests/properties/test_orders.py",
    "oracle_blob": "c" * 40,
    "notes": "flaky on CI",
}
TICKET = {
    "ticket_id": "20260101T000000Z-aaaaaaaaaa-0000",
    "verdict_id": "20260101T000000Z-aaaaaaaaaa-0000",
    "patch_sha": "a" * 40,
    "parent_sha": "b" * 40,
    "contract_hash": "sha256:c",
    "properties": ["prop.a"],
    "status": "approved",
    "created_at": "2026-01-01T00:00:00Z",
    "expires": "2026-02-01T00:00:00Z",
    "reason_code": "known_flake",
    "approved_by": "r",
    "approved_at": "2026-01-02T00:00:00Z",
}
HELD_OUT = {
    "seeds": [5, 7],
    "properties": [
        {
            "id": "held.clamp_wide",
            "oracle": "clamp stays in range",
            "test": "test_held.py::test_clamp_wide",
        }
    ],
}
BATCH_REQUEST = {
    "id": "r1",
    "repo": "orders",
    "parent": "base",
    "patch": "patch-fix",
    "contract": "contract/differential-contract.yaml",
}
REQUESTS = [
    {"op": "score", "id": 1, "parent": "a" * 40, "patch": "b" * 40},
    {"op": "freeze", "id": "x", "patch": "b" * 40, "test_id": "t.py::a", "reason": "r"},
    {"op": "ping", "id": 2},
]


# -- parsers ------------------------------------------------------------------------------


@FUZZ
@given(documents(CONTRACT))
def test_contract(text: str) -> None:
    one_line_or_nothing("contract", lambda: parse_contract(text, "contract.yaml"))
    one_line_or_nothing("contract", lambda: parse_contract(text, "contract.json"))


@FUZZ
@given(documents(CONFIG, forms=("yaml",)))
def test_operator_config(text: str) -> None:
    one_line_or_nothing("operator config", lambda: parse_config(text, "config.yaml"))


@FUZZ
@given(st.lists(documents(ROW, forms=("json",)), max_size=6))
def test_rows_jsonl(lines: list[str]) -> None:
    text = "\n".join(line.replace("\n", " ") for line in lines)
    one_line_or_nothing("rows JSONL", lambda: parse_rows(text.split("\n"), "rows.jsonl"))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-files")


def _file(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


@FUZZ
@given(text=documents(MANIFEST, forms=("json",)))
def test_fixture_manifest(scratch: Path, text: str) -> None:
    path = _file(scratch, "manifest.json", text)
    one_line_or_nothing("fixture manifest", lambda: read_manifest(path))


@FUZZ
@given(text=documents(QUARANTINE, forms=("json",)))
def test_quarantine_list(text: str) -> None:
    one_line_or_nothing("quarantine list", lambda: parse_quarantine_list(text, "q.json"))


@FUZZ
@given(text=documents(TICKET, forms=("json",)))
def test_ticket(scratch: Path, text: str) -> None:
    (scratch / "tickets").mkdir(exist_ok=True)
    _file(scratch / "tickets", "t1.json", text)
    one_line_or_nothing("ticket", lambda: read_ticket(scratch, "t1"))


@pytest.fixture(scope="module")
def held_out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("fuzz-held-out")
    (directory / "test_held.py").write_text("def test_clamp_wide():\n    pass\n")
    return directory


@FUZZ
@given(text=documents(HELD_OUT))
def test_held_out_file(held_out_dir: Path, text: str) -> None:
    _file(held_out_dir, HELD_OUT_FILE, text)
    contract = parse_contract(json.dumps(CONTRACT), "contract.json")
    one_line_or_nothing("held-out file", lambda: load_held_out(held_out_dir, contract))


@pytest.fixture(scope="module")
def record_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A repository with a parent and a head commit, for the oracle fields."""
    repo = tmp_path_factory.mktemp("fuzz-record")
    r = git.Repo.init(repo)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    (repo / "tests" / "properties").mkdir(parents=True)
    (repo / "tests" / "properties" / "test_orders.py").write_text("def test_a(): pass\n")
    r.git.add("--all")
    r.git.commit("-q", "-m", "one", env=env)
    (repo / "x.py").write_text("x = 1\n")
    r.git.add("--all")
    r.git.commit("-q", "-m", "two", env=env)
    return repo, r.head.commit.hexsha


@FUZZ
@given(text=documents(RECORD, forms=("json",)))
def test_freeze_record(
    scratch: Path, record_repo: tuple[Path, str], text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_record, then every field check. The test id's sandboxed collection is replaced
    by its syntax check (not a fault: cost; tests/test_freeze.py runs the real one)."""
    monkeypatch.setattr(
        _freeze, "_check_test_id", lambda value, *args, **kwargs: _freeze.node_id_problem(value)
    )
    repo, head = record_repo
    path = _file(scratch, "record.json", text)

    def check() -> None:
        record = _freeze.load_record(path)
        _freeze.check_freeze_record(
            record,
            repo=repo,
            head=head,
            fixture_root=repo,
            config=ScorerConfig(state_dir=str(scratch / "state"), log_dir=str(scratch)),
            sandbox_config=SandboxConfig(),
        )

    one_line_or_nothing("freeze record", check)


@FUZZ
@given(lines=st.lists(documents(BATCH_REQUEST, forms=("json",)), max_size=6))
def test_batch_request_lines(scratch: Path, lines: list[str]) -> None:
    """score-batch's request file: each line a request or an error result of one line."""
    path = _file(scratch, "requests.jsonl", "\n".join(line.replace("\n", " ") for line in lines))

    def read() -> None:
        requests, errors = read_requests(path)
        for result in errors:
            assert result.error and "\n" not in result.error, result.error
        assert len(requests) + len(errors) <= len(lines)

    one_line_or_nothing("batch request lines", read)


class _NoScoring(ScorerSession):
    """The scorer's request loop with the work itself left out (its parsing is the target)."""

    def score(self, request: ScorePatch) -> VerdictSummary:
        raise PatchwardenError("not scored here")

    def freeze(self, request: ProposeFreeze) -> FreezeSummary:
        raise PatchwardenError("not frozen here")


REQUEST_LINES = st.one_of(
    *(documents(request, forms=("json",)) for request in REQUESTS),
    st.binary(max_size=80).map(lambda b: b.decode("latin-1")),
)


@FUZZ
@given(lines=st.lists(REQUEST_LINES, max_size=5))
def test_scorer_request_lines(scratch: Path, lines: list[str]) -> None:
    """Every line gets exactly one protocol answer; the loop never dies."""
    INPUTS["scorer request lines"] += 1
    session = _NoScoring(scratch, "c.yaml", ScorerConfig(log_dir=str(scratch)), SandboxConfig())
    data = "".join(line.replace("\n", " ") + "\n" for line in lines).encode("utf-8", "replace")
    out = io.BytesIO()
    _serve_requests(session, io.BytesIO(data), out)
    answers = out.getvalue().decode().splitlines()
    assert len(answers) == len(lines)
    for answer in answers:
        parsed = json.loads(answer)
        assert parsed["answer"] in ("error", "pong"), parsed
        assert "\n" not in parsed.get("error", "")


# -- the command line ---------------------------------------------------------------------


@FUZZ
@given(text=documents(CONFIG, forms=("yaml",)))
def test_cli_config_check(scratch: Path, text: str) -> None:
    """Through the CLI's one error handler: exit 0 or 2 with one line, never 70."""
    INPUTS["cli config check"] += 1
    path = _file(scratch, "config.yaml", text)
    result = CliRunner().invoke(cli, ["config", "check", str(path)])
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        assert result.output.count("\n") == 1 and result.output.startswith("patchwarden: error:")


# -- the MCP tools --------------------------------------------------------------------------

PATHS = [
    "",
    ".",
    "..",
    "../x",
    "/etc/passwd",
    ".git",
    ".git/config",
    "a/../../b",
    "pkg/mod.py",
    "pkg",
    "tests/test_unit.py",
    "tests/properties/test_p.py",
    "contract/differential-contract.yaml",
    "x" * 300,
    "a\0b",
    "tests/test_unit.py::test_a",
    "-p evil",
    "*.py",
    "**",
    "new/deep/file.txt",
    "é/ü.py",
    " ",
    "a\nb",
    "pkg/../pkg/mod.py",
    "PKG/MOD.PY",
    ".GIT/config",
]
STRINGS = st.one_of(
    st.sampled_from(PATHS),
    st.text(max_size=40),
    st.text(alphabet=string.printable, max_size=200),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
)
NEW_FILE_DIFFS = st.integers(0, 10**9).map(
    lambda n: f"--- /dev/null\n+++ b/fz/added{n}.txt\n@@ -0,0 +1 @@\n+line\n"
)
DIFFS = NEW_FILE_DIFFS | st.sampled_from(
    [
        "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n",
        "diff --git a/x b/x\nnew file mode 120000\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+/etc\n",
        "--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
        "garbage",
    ]
)


HINTS: dict[str, st.SearchStrategy[Any]] = {
    "path": st.sampled_from(["pkg/mod.py", "tests/test_unit.py", "pkg", ".", "new/f.py", "n.txt"]),
    "pattern": st.sampled_from(["*.py", "tests/*", "*", "[", "**/x", "(a+)+$", "VALUE", "(?=x)"]),
    "content": st.text(max_size=100),
    "old_text": st.sampled_from(["VALUE = 1", "VALUE", "def", "assert True", "\n"]),
    "new_text": st.text(max_size=20),
    "patch": DIFFS,
    "tests": st.lists(
        st.sampled_from(["tests/test_unit.py", "tests/test_unit.py::test_a", "tests"]), max_size=2
    ),
    "start_line": st.integers(min_value=1, max_value=4),
    "end_line": st.integers(min_value=1, max_value=6),
    "keyword": st.sampled_from(["test_a", "not test_a", "(", "a and"]),
    "timeout_s": st.floats(min_value=0.5, max_value=30),
    "detail": st.sampled_from(["short", "long", "full"]),
    "code": st.sampled_from(
        [
            "import pkg.mod\nprint(pkg.mod.VALUE)",
            "raise SystemExit(3)",
            "1/0",
            "def f(:",
            "import sys\nsys.stdout.write('x' * 300_000)",
            "import time\ntime.sleep(0.2)",
        ]
    ),
    "args": st.lists(st.sampled_from(["-v", "a b", "--x=1", ""]), max_size=3),
    "test_id": st.sampled_from(["tests/test_unit.py::test_a", "tests/test_unit.py"]),
    "message": st.text(min_size=1, max_size=30),
    "reason": st.text(min_size=1, max_size=30),
}
"""Values a well-meaning agent would send, so the fuzzing also reaches each tool's work."""


def _value(schema: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
    kinds = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", [])}
    typed: list[st.SearchStrategy[Any]] = []
    if "string" in kinds:
        typed += [STRINGS, DIFFS] if name == "patch" else [STRINGS]
    if "integer" in kinds:
        typed.append(st.integers(min_value=-3, max_value=10**7) | st.integers())
    if "number" in kinds:
        typed.append(st.floats())
    if "array" in kinds:
        typed.append(st.lists(STRINGS, max_size=4))
    if "null" in kinds:
        typed.append(st.none())
    other = st.one_of(*typed, JSON_VALUES)
    hint = HINTS.get(name)
    if hint is None:
        return other
    # Mostly the hint, else a value of the declared type or of any type.
    return st.integers(0, 9).flatmap(lambda i: hint if i < 7 else other)


@st.composite
def arguments(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    args: dict[str, Any] = {}
    for name, prop in properties.items():
        if (name in required and draw(st.integers(0, 15)) != 0) or draw(st.booleans()):
            args[name] = draw(_value(prop, name))
    if draw(st.integers(0, 9)) == 0:
        args[draw(st.text(max_size=8))] = draw(JSON_VALUES)
    return args


class FakeScorer:
    """The scorer as the tools see it (server/tools/, ``Scorer``): a fake, since the real
    one is fuzzed through its request lines. ``mode`` picks the answer."""

    mode = "verdict"

    async def request(self, request: Request, on_progress: Any = None) -> Answer:
        if self.mode == "fault":
            raise ScorerUnavailable("the scorer failed (fake)")
        if self.mode == "failure":
            return Failure(id=1, error="could not judge (fake)")
        if isinstance(request, ScorePatch):
            summary = VerdictSummary(
                verdict_id="v", decision="reject", results=[], scorecard=[], counts={}
            )
            return Scored(id=1, summary=summary)
        return FreezeHandled(id=1, freeze=FreezeSummary(status="rejected", reason="fake"))


ToolSession = tuple[BlockingPortal, Client, FakeScorer, dict[str, Any]]
"""The portal, the in-process client, the fake scorer, each tool's input schema."""

TINY_CONTRACT = """\
seeds: [1]
spec_paths: [tests/properties]
properties:
  - id: prop.p
    oracle: "it holds"
    test: "tests/properties/test_p.py::test_p"
"""


@pytest.fixture(scope="module")
def tool_session(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[BlockingPortal, Client, FakeScorer, dict[str, Any]]]:
    """A real server (tools, path policy, workspace, audit) on a tiny repository."""
    base = tmp_path_factory.mktemp("fuzz-tools")
    repo = base / "repo"
    for rel, text in {
        "contract/differential-contract.yaml": TINY_CONTRACT,
        "tests/properties/test_p.py": "def test_p():\n    assert True\n",
        "tests/test_unit.py": "def test_a():\n    assert True\n",
        "pkg/__init__.py": "",
        "pkg/mod.py": "VALUE = 1\n",
    }.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    r = git.Repo(repo)
    r.git.add("--all")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    r.git.commit("-q", "-m", "base", env=env)
    base_sha = r.head.commit.hexsha
    contract = parse_contract(TINY_CONTRACT, "contract.yaml")
    scorer = FakeScorer()
    with contextlib.ExitStack() as stack:
        workspace = stack.enter_context(open_workspace(repo, base_sha, base / "state"))
        read_only = contract.contract_paths("contract/differential-contract.yaml")
        session = Session(
            workspace=workspace,
            policy=PathPolicy(
                workspace.tree, read_only=read_only, protected=[], max_file_bytes=100_000
            ),
            contract=contract,
            contract_file="contract/differential-contract.yaml",
            quarantined=[],
            sandbox=SandboxConfig(limits=Limits(wall_time_s=20, idle_time_s=20)),
            scorer=scorer,
            max_submissions=10**6,
        )
        app = build_app(session, AuditLog(base / "logs", workspace.session_id))
        portal = stack.enter_context(start_blocking_portal())
        client = stack.enter_context(portal.wrap_async_context_manager(Client(app)))
        tools = {t.name: t.input_schema for t in portal.call(client.list_tools).tools}
        yield portal, client, scorer, tools


FUZZED_LAST = ("write_file", "run_tests", "run_python")
"""write_file replaces the files the edit hints expect; run_tests and run_python start a
sandboxed process for most valid calls."""
SANDBOXED = ("run_tests", "run_python")
REACHED_BY = {"run_python": {"code": "import pkg.mod\nprint(pkg.mod.VALUE)", "timeout_s": 5}}
"""A valid call each fuzzing of a tool starts with, where a few random examples may all be
refused (run_python takes exactly one of two optional arguments)."""
TOOL_NAMES = [t.name for t in TOOLS if t.name not in FUZZED_LAST] + list(FUZZED_LAST)


def _call_tool(
    session: ToolSession,
    name: str,
    args: dict[str, Any],
    mode: str,
) -> None:
    portal, client, scorer, _ = session
    INPUTS[f"tool {name}"] += 1
    scorer.mode = mode
    result = portal.call(lambda: client.call_tool(name, args))
    text = " ".join(getattr(c, "text", "") for c in result.content)
    TOOL_OUTCOMES[name, "tool error" if result.is_error else "result"] += 1
    if result.is_error:
        # The SDK's text for an exception it did not expect is the bare prefix.
        assert text.strip() not in ("", f"Error executing tool {name}"), (name, args, text)
        assert "Traceback" not in text
    else:
        assert isinstance(result.structured_content, dict), (name, args)


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_mcp_tool_arguments(tool_session: Any, name: str) -> None:
    schema = tool_session[3][name]
    # A sandboxed process for most valid calls: a smaller share.
    examples = max(2, EXAMPLES // 30) if name in SANDBOXED else EXAMPLES

    def call(args: dict[str, Any], mode: str) -> None:
        _call_tool(tool_session, name, args, mode)

    fuzz = given(args=arguments(schema), mode=st.sampled_from(["verdict", "failure", "fault"]))(
        call
    )
    if name in REACHED_BY:
        fuzz = example(args=REACHED_BY[name], mode="verdict")(fuzz)
    settings(FUZZ, max_examples=examples)(fuzz)()
    # And the server goes on serving.
    _call_tool(tool_session, "get_contract", {}, "verdict")


def test_every_tool_is_fuzzed_and_reached(tool_session: Any) -> None:
    """Every tool the server has is fuzzed, and the fuzzing got past the argument checks of
    each (a fuzzer refused at the door tests only the door)."""
    assert sorted(tool_session[3]) == sorted(TOOL_NAMES)
    print(sorted(TOOL_OUTCOMES.items()))
    reached = {name for (name, outcome), count in TOOL_OUTCOMES.items() if outcome == "result"}
    assert set(TOOL_NAMES) - {"run_tests"} <= reached
