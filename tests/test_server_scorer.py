"""The scorer child and its channel (scorer/_process.py, server/_scorer_client.py), and the
audit log's argument elision (server/_audit.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import git
import pytest

from patchwarden.sandbox import SandboxConfig
from patchwarden.scorer import (
    Check,
    GateResult,
    InputError,
    PropertyResult,
    ScorerConfig,
    SideCounts,
    Verdict,
    read_contract_at,
    read_only_paths_at,
    read_quarantine_at,
    verdict_summary,
)
from patchwarden.scorer._process import FREEZE_PROPOSED, freeze_summary
from patchwarden.scorer.protocol import Ping, Pong, ScorePatch, Start, encode
from patchwarden.server import ScorerUnavailable
from patchwarden.server._audit import elide_arguments
from patchwarden.server._scorer_client import (
    UNNUMBERED,
    ScorerGone,
    scorer_argv,
    start_scorer,
)

CONTRACT = "contract/differential-contract.yaml"


def test_verdict_summary_carries_no_witness_seed_or_path(tmp_path: Path) -> None:
    gate = GateResult(
        decision="reject",
        contract_hash="sha256:abc",
        results=[PropertyResult(prop="prop.a", decision="reject", reason="regression")],
        counts={
            "parent": SideCounts(lines=3, pass_=3, fail=0),
            "patch": SideCounts(lines=3, pass_=2, fail=1),
        },
    )
    verdict = Verdict(
        verdict_id="v1",
        decision="reject",
        gate=gate,
        resolved_contract_hash="sha256:def",
        scorecard=[
            Check(
                check="test_tampering",
                outcome="review",
                evidence=["M tests/test_x.py", "prop.a|AssertionError|t.py:12"],
            )
        ],
        parent_sha="a" * 40,
        patch_sha="b" * 40,
        bundle=tmp_path / "bundle",
        review_note="prop.a|AssertionError seeds 11 29 47\n",
    )
    summary = verdict_summary(verdict).model_dump(mode="json", by_alias=True)
    assert summary == {
        "verdict_id": "v1",
        "decision": "reject",
        "results": [{"prop": "prop.a", "decision": "reject", "reason": "regression"}],
        "scorecard": [{"check": "test_tampering", "outcome": "review"}],
        "counts": {
            "parent": {"lines": 3, "pass": 3, "fail": 0},
            "patch": {"lines": 3, "pass": 2, "fail": 1},
        },
    }
    text = json.dumps(summary)
    for leak in ("AssertionError", "|", "11", "29", "47", str(tmp_path), "a" * 40):
        assert leak not in text


def _commit_quarantine(repo: Path, tmp_path: Path, text: str | None) -> tuple[Path, str]:
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "clone", "-q", str(repo), str(clone)], check=True
    )
    contract = clone / CONTRACT
    contract.write_text(contract.read_text() + "quarantine_list: tests/quarantine.json\n")
    if text is not None:
        (clone / "tests" / "quarantine.json").write_text(text)
    r = git.Repo(clone)
    r.git.add("--all")
    r.git.commit(
        "-q",
        "-m",
        "quarantine",
        "--no-verify",
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )
    return clone, r.head.commit.hexsha


QUARANTINE_ENTRY = {
    "test_id": "tests/test_unit.py::test_a",
    "failures": 1,
    "runs": 3,
    "since": "2026-11-05T10:00:00Z",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, []),
        (json.dumps({"base": "a" * 40, "runs": 3, "tests": []}), []),
        (
            json.dumps({"base": "a" * 40, "runs": 3, "tests": [QUARANTINE_ENTRY]}),
            ["tests/test_unit.py::test_a"],
        ),
    ],
)
def test_quarantine_list_is_read_from_the_commit(
    example_repo: Path, tmp_path: Path, text: str | None, expected: list[str]
) -> None:
    clone, sha = _commit_quarantine(example_repo, tmp_path, text)
    contract, contract_file = read_contract_at(clone, sha, CONTRACT)
    assert contract_file == CONTRACT
    assert read_quarantine_at(clone, sha, contract) == expected
    assert "tests/quarantine.json" in read_only_paths_at(clone, sha, contract, contract_file)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '["a"]',
        '{"tests": [{"test_id": "x"}]}',
        json.dumps({"base": "a" * 40, "runs": 3, "tests": [{**QUARANTINE_ENTRY, "extra": 1}]}),
    ],
)
def test_malformed_quarantine_list_is_an_input_error(
    example_repo: Path, tmp_path: Path, text: str
) -> None:
    clone, sha = _commit_quarantine(example_repo, tmp_path, text)
    contract, _ = read_contract_at(clone, sha, CONTRACT)
    with pytest.raises(InputError, match=r"quarantine\.json"):
        read_quarantine_at(clone, sha, contract)


def test_contract_without_quarantine_list(example_repo: Path) -> None:
    sha = git.Repo(example_repo).commit("base").hexsha
    contract, contract_file = read_contract_at(example_repo, sha, CONTRACT)
    assert read_quarantine_at(example_repo, sha, contract) == []
    assert read_only_paths_at(example_repo, sha, contract, contract_file) == [
        CONTRACT,
        "tests/properties",
        ".freeze",
        "contract/quarantine.json",
        "tests/fixtures/manifest.json",
        "tests/fixtures/orders.json",
    ]


# -- the child process --------------------------------------------------------------


def _start(example_repo: Path, tmp_path: Path, state: Path | None = None) -> Start:
    return Start(
        repo=str(example_repo),
        contract=CONTRACT,
        scorer=ScorerConfig(
            state_dir=str(state or tmp_path / "scorer"), log_dir=str(tmp_path / "logs")
        ),
        sandbox=SandboxConfig(),
    )


def _scorer(example_repo: Path, tmp_path: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(scorer_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None
    process.stdin.write(encode(_start(example_repo, tmp_path)))
    process.stdin.flush()
    return process


def _exchange(process: subprocess.Popen[bytes], line: bytes) -> dict[str, Any]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(line)
    process.stdin.flush()
    return dict(json.loads(process.stdout.readline()))


def _error(error: str, request_id: object = None) -> dict[str, Any]:
    return {"answer": "error", "id": request_id, "error": error}


@pytest.mark.bwrap
def test_scorer_protocol_fails_closed_and_keeps_serving(example_repo: Path, tmp_path: Path) -> None:
    with _scorer(example_repo, tmp_path) as process:
        assert process.stdout is not None and process.stdin is not None
        assert json.loads(process.stdout.readline()) == {"answer": "ready"}
        assert (tmp_path / "scorer").stat().st_mode & 0o777 == 0o700
        hex_error = "String should match pattern '^[0-9a-f]{40}$'"
        cases: list[tuple[bytes, dict[str, Any]]] = [
            (
                b"not json\n",
                _error("malformed request: not one JSON object per line"),
            ),
            (b"[1, 2]\n", _error("malformed request: request: Input should be an object")),
            (b'{"op": "ping"}\n', _error("malformed request: ping.id: Field required")),
            (b'{"id": 1, "op": "ping"}\n', {"answer": "pong", "id": 1}),
            (
                b'{"id": 2, "op": "rm -rf"}\n',
                _error(
                    "malformed request: request: Input tag 'rm -rf' found using 'op' does not "
                    "match any of the expected tags: 'score', 'freeze', 'ping'"
                ),
            ),
            (
                b'{"id": 3, "op": "freeze", "test_id": "tests/test_unit.py::test_a", '
                b'"reason": "r"}\n',
                _error("malformed request: freeze.patch: Field required"),
            ),
            (
                b'{"id": 4, "op": "freeze", "patch": "' + b"a" * 40 + b'", "test_id": 5, '
                b'"reason": "r"}\n',
                _error("malformed request: freeze.test_id: Input should be a valid string"),
            ),
            (
                b'{"id": 5, "op": "ping", "extra": 1}\n',
                _error("malformed request: ping.extra: Extra inputs are not permitted"),
            ),
        ]
        for line, expected in cases:
            assert _exchange(process, line) == expected
        for parent, patch, bad in [
            ("HEAD", "a" * 40, "parent"),
            ("a" * 40, "../../etc/passwd", "patch"),
            ("A" * 40, "b" * 40, "parent"),
            ("a" * 39, "b" * 40, "parent"),
        ]:
            request = json.dumps({"id": 6, "op": "score", "parent": parent, "patch": patch})
            answer = _exchange(process, request.encode() + b"\n")
            assert answer == _error(f"malformed request: score.{bad}: {hex_error}")
        answer = _exchange(process, b"x" * (70 * 1024) + b"\n")
        assert answer == _error("request longer than 65536 bytes")
        assert _exchange(process, b'{"id": "last", "op": "ping"}\n') == {
            "answer": "pong",
            "id": "last",
        }
        process.stdin.close()
        assert process.wait(timeout=30) == 0


@pytest.mark.bwrap
def test_scorer_refuses_to_start_without_its_state_dir(example_repo: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    start = _start(example_repo, tmp_path, state=blocker / "scorer")
    done = subprocess.run(scorer_argv(), input=encode(start), capture_output=True, timeout=60)
    assert done.returncode == 2
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["answer"] == "error" and str(blocker) in answer["error"]


def test_scorer_refuses_a_malformed_start_line() -> None:
    done = subprocess.run(
        scorer_argv(), input=b'{"op": "start"}\n', capture_output=True, timeout=60
    )
    assert done.returncode == 2
    assert json.loads(done.stdout) == _error("malformed request: repo: Field required")


@pytest.mark.bwrap
def test_client_matches_answers_and_reports_a_dead_scorer(
    example_repo: Path, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with start_scorer(scorer_argv(), _start(example_repo, tmp_path)) as client:
            # The channel numbers its requests: the id a caller gives is replaced.
            assert await client.request(Ping(id=99)) == Pong(id=1)
            scored = ScorePatch(id=UNNUMBERED, parent="a" * 40, patch="b" * 40)
            answer = await client.request(scored)
            assert answer.answer == "error" and answer.id == 2
            os.kill(client.pid, signal.SIGKILL)
            with pytest.raises(ScorerGone):
                await client.request(Ping(id=UNNUMBERED))

    anyio.run(scenario)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"path": "a.py", "content": "secret"}, {"path": "a.py", "content": {"elided_chars": 6}}),
        ({"patch": "diff"}, {"patch": {"elided_chars": 4}}),
        (
            {"path": "a", "old_text": "x", "new_text": "yz"},
            {"path": "a", "old_text": {"elided_chars": 1}, "new_text": {"elided_chars": 2}},
        ),
        ({"content": 3}, {"content": {"elided": True}}),
        ({"message": "m" * 5000}, {"message": "m" * 1000 + "..."}),
        ({"tests": ["a", "b"]}, {"tests": ["a", "b"]}),
        (None, None),
        ("text", {"invalid_arguments_type": "str"}),
    ],
)
def test_audit_elides_contents(arguments: Any, expected: Any) -> None:
    assert elide_arguments(arguments) == expected


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            'print(\'{"answer": "error", "error": "no bubblewrap"}\')',
            "the scorer did not start: no bubblewrap",
        ),
        ("print('hello')", "the scorer did not start: the scorer sent a line outside the protocol"),
        ('print(\'{"answer": "pong", "id": 1}\')', "the scorer did not start: it answered out"),
        ("pass", "the scorer did not start: the scorer process has exited"),
    ],
)
def test_server_refuses_a_scorer_that_does_not_say_ready(script: str, message: str) -> None:
    async def scenario() -> None:
        start = Start(repo=".", contract=CONTRACT, scorer=ScorerConfig(), sandbox=SandboxConfig())
        async with start_scorer([sys.executable, "-c", script], start):
            raise AssertionError("started")

    with pytest.raises(ScorerUnavailable, match=message):
        anyio.run(scenario)


def test_freeze_summary_hides_host_paths(tmp_path: Path) -> None:
    config = ScorerConfig(log_dir=str(tmp_path / "logs"), state_dir=str(tmp_path / "state"))
    proposed = freeze_summary("proposed_for_review", f"record at {tmp_path}/logs/freeze/x", config)
    assert proposed.model_dump() == {"status": "proposed_for_review", "reason": FREEZE_PROPOSED}
    rejected = freeze_summary("rejected", f"copy failed: {tmp_path}/state/x\nmore", config)
    assert rejected.model_dump() == {
        "status": "rejected",
        "reason": "copy failed: <scorer state>/x",
    }
