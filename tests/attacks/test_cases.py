"""The case table itself (fast, no sandbox): coverage of the attack classes, well-formed
patches, expectations that never accept an attack, and the judge and summary they feed."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import pytest

from . import tally
from .cases import (
    ATTACKS,
    CASES,
    CONTROLS,
    LAYERS,
    AttackCase,
    Binary,
    Delete,
    Expected,
    Symlink,
    Write,
)
from .lab import Observation, judge
from .mcp_cases import MCP_CASES

REQUIRED_CLASSES = {
    "test-edit",
    "isolated-oracle",
    "skip-xfail",
    "conftest",
    "pytest-config",
    "site-hooks",
    "shadowing",
    "in-process",
    "exit",
    "hypothesis",
    "eq",
    "branching",
    "fixtures",
    "contract",
    "symlink",
    "git",
    "network",
    "scorer",
    "resources",
    "forgery",
}
DUMMY_PLACEHOLDERS = {
    "@@OUTSIDE@@": "/nonexistent/outside",
    "@@MARKER@@": "/nonexistent/marker",
    "@@LOG_DIR@@": "/nonexistent/logs",
    "@@STATE_DIR@@": "/nonexistent/state",
    "@@PORT@@": "40000",
    "@@ABSTRACT@@": "patchwarden-attack-0",
    "@@HONEST_CHANNELS_B64@@": "e30=",
}


def _paths() -> set[str]:
    return {path for case in ATTACKS for path in case.files}


def test_there_are_enough_attacks_with_unique_names() -> None:
    assert len(ATTACKS) >= 25
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", name) for name in names)


def test_every_required_attack_class_is_covered() -> None:
    assert {case.attack_class for case in ATTACKS} >= REQUIRED_CLASSES
    assert {case.layer for case in CASES} <= set(LAYERS)
    assert {case.layer for case in MCP_CASES} <= set(LAYERS)
    assert len({case.name for case in MCP_CASES}) == len(MCP_CASES)


def test_conftest_config_and_shadowing_cover_every_place_named_in_the_brief() -> None:
    paths = _paths()
    assert {
        "conftest.py",
        "tests/conftest.py",
        "tests/properties/conftest.py",
        "orders/conftest.py",
    } <= paths
    assert {"pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini"} <= paths
    assert {"sitecustomize.py"} <= paths and any(p.endswith(".pth") for p in paths)
    parts = {part for path in paths for part in PurePosixPath(path).parts}
    assert {"pytest", "_pytest", "hypothesis", "pluggy"} <= parts


def test_the_forgery_family_covers_issue_11() -> None:
    forgeries = {case.name for case in ATTACKS if case.attack_class == "forgery"}
    vehicles = ("thread", "atexit", "signal_handler", "del", "import_hook")
    reaches = ("gc_walk", "frame_walk", "ctypes", "proc_self_fd", "proc_self_mem")
    others = ("child_reads_parent", "write_every_descriptor", "replay_honest_stream")
    variants = ("thread_runner_globals", "no_runner_object")
    for part in (*vehicles, *reaches, *others, *variants):
        assert any(part in name for name in forgeries), part
    assert {case.layer for case in ATTACKS if case.attack_class == "forgery"} >= {
        "authenticated-channel",
        "audit-hook",
        "canaries",
    }


def test_the_isolated_oracle_family_covers_every_way_product_code_reaches_the_oracle() -> None:
    isolated = [case for case in ATTACKS if case.attack_class == "isolated-oracle"]
    names = {case.name for case in isolated}
    for part in (
        "hypothesis_engine",
        "control_flow_exception",
        "property_module_rewritten",
        "builtins_rewritten",
        "name_injected_before_snapshot",
        "reads_the_oracle",
        "payload_in_data_file",
        "test_frame_traceback",
        "test_frame_inspect",
        "test_frame_logging",
        "test_frame_warnings",
        "currently_in_test_context",
        "tell_argv_and_flags",
        "tell_loaded_modules",
        "tell_environment_and_canaries",
    ):
        assert any(part in name for name in names), part
    for case in isolated:  # run isolated, and no property fell back
        assert case.oracle == "isolated", case.name
        assert case.expected.findings.get("isolation") == "pass", case.name
    # Stopped by the boundary, every one: each trick wins (or would) in-process.
    assert all(case.layer == "isolated-oracle" for case in isolated)


def test_attacks_never_expect_accept_and_controls_do() -> None:
    for case in ATTACKS:
        assert case.expected.decision in ("reject", "propose_freeze", None), case.name
        if case.expected.decision is None:  # stopped by a finding a human must clear
            assert case.expected.findings, case.name
        if case.expected.decision == "propose_freeze":
            # the bug left in place keeps its honest verdict: a ticket for a human,
            # never a pass (the attack aimed at accept)
            assert case.expected.reasons == {"shared_variant_fail"}, case.name
    for case in CONTROLS:
        assert case.expected.decision == "accept", case.name


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_patch_files_are_well_formed(case: AttackCase) -> None:
    for path, spec in case.files.items():
        assert not PurePosixPath(path).is_absolute() and ".." not in PurePosixPath(path).parts
        if isinstance(spec, Write) and path.endswith(".py"):
            source = spec.content
            for key, value in DUMMY_PLACEHOLDERS.items():
                source = source.replace(key, value)
            compile(source, path, "exec")
        assert isinstance(spec, Write | Binary | Delete | Symlink)


def _observation(decision: str, reasons: dict[str, str], **findings: str) -> Observation:
    return Observation(0, decision, reasons, {"suspicious": "pass", **findings}, "", 1.0)


@pytest.mark.parametrize(
    ("expected", "observed", "stopped"),
    [
        (
            Expected("reject", frozenset({"regression"})),
            _observation("reject", {"p": "regression"}),
            True,
        ),
        (
            Expected("reject", frozenset({"regression"})),
            _observation("accept", {"p": "both_pass"}),
            False,
        ),
        (
            Expected("reject", frozenset({"regression"})),
            _observation("reject", {"p": "missing_seed"}),
            False,
        ),
        (
            Expected("reject", any_reason=frozenset({"regression", "missing_seed"})),
            _observation("reject", {"p": "missing_seed"}),
            True,
        ),
        (
            Expected(None, findings={"suspicious": "review"}),
            _observation("accept", {"p": "both_pass"}, suspicious="review"),
            True,
        ),
        (
            Expected(None, findings={"suspicious": "review"}),
            _observation("reject", {"p": "regression"}, suspicious="reject"),
            True,
        ),
        (
            Expected(None, findings={"suspicious": "review"}),
            _observation("accept", {"p": "both_pass"}),
            False,
        ),
        (
            Expected("accept", findings={"test_tampering": "pass"}),
            _observation("accept", {"p": "both_pass"}, test_tampering="review"),
            False,
        ),
        (
            Expected("reject", findings={"spec_review": "review"}),
            _observation("reject", {"p": "regression"}),
            False,
        ),  # check absent
    ],
)
def test_judge(expected: Expected, observed: Observation, stopped: bool) -> None:
    assert (judge(expected, observed) == []) is stopped


def test_summary_line_is_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tally, "ENTRIES", [])
    for name, problems in (("a", []), ("b", ["decision accept"]), ("c", [])):
        tally.record(
            "score", name, honest=False, expected="", observed="", problems=problems, duration_s=0.0
        )
    tally.record(
        "score", "control", honest=True, expected="", observed="", problems=[], duration_s=0.0
    )
    assert tally.summary_line() == "3 attacks, 2 stopped, 1 through"
