"""End to end on the orders example: ``score`` prints the note and one line per check, writes
a ticket for a propose_freeze, and ``verdicts list|show`` read it all back.

Two real scorer runs (two trees x three seeds each, sandboxed), shared by the module.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import git
import pytest
from click.testing import CliRunner

from patchwarden.scorer.checks import SCORECARD
from patchwarden.server.cli import cli
from tests._git_repos import GIT_ENV, commit
from tests.conftest import CONTRACT

pytestmark = pytest.mark.bwrap

CHECKS = [check.name for check in SCORECARD]
NOTE_KEYS = ["contract", "decision", "properties", "rows"]
PROBE = '\n\nimport os\n\nUNDER_TEST = "PYTEST_CURRENT_TEST" in os.environ\n'


@dataclass
class Scored:
    repo: Path
    logs: Path
    probe: subprocess.CompletedProcess[str]
    refactor: subprocess.CompletedProcess[str]
    refactor_sha: str


def _score(
    repo: Path, patch: str, logs: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "patchwarden",
            "score",
            "--repo",
            str(repo),
            "--contract",
            CONTRACT,
            "--parent",
            "base",
            "--patch",
            patch,
            "--log-dir",
            str(logs),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def scored(
    example_repo: Path, scorer_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Scored:
    root = tmp_path_factory.mktemp("verdicts")
    repo_path = root / "orders"
    # A clone: the session's example repository is shared and stays as built.
    subprocess.run(
        ["git", "clone", "--quiet", str(example_repo), str(repo_path)],
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    repo = git.Repo(repo_path)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Review Tests")
        config.set_value("user", "email", "review-tests@patchwarden.invalid")
    repo.git.checkout("--quiet", "--detach", "patch-fix")
    fixed = (repo_path / "orders" / "total.py").read_text()
    commit(repo, {"orders/total.py": fixed + PROBE}, "the fix, and a peek at pytest")
    repo.create_tag("patch-probe")
    logs = root / "logs"
    probe = _score(repo_path, "patch-probe", logs, scorer_env)
    refactor = _score(repo_path, "patch-refactor", logs, scorer_env)
    return Scored(repo_path, logs, probe, refactor, repo.commit("patch-refactor").hexsha)


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="patchwarden")
    return result.exit_code, result.stdout, result.stderr


def test_score_prints_the_note_then_one_line_per_check(scored: Scored) -> None:
    assert (scored.probe.returncode, scored.probe.stderr) == (0, "")
    lines = scored.probe.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:4]] == [
        "contract",
        "decision",
        "properties",
        "rows",
    ]
    assert lines[1] == "decision: accept (suspicious: review)"
    checks = lines[4 : 4 + len(CHECKS)]
    assert [line.split()[1] for line in checks] == CHECKS
    by_name = {line.split()[1]: line.split(None, 3)[2:] for line in checks}
    assert by_name["spec_review"] == ["pass"]
    assert by_name["suspicious"][0] == "review"
    assert "uses the string 'PYTEST_CURRENT_TEST'" in by_name["suspicious"][1]
    assert by_name["contract_tampered"] == ["pass"]
    assert by_name["forged"] == ["pass"]
    end = 4 + len(CHECKS)
    assert lines[end].startswith("evidence: ") and len(lines) == end + 1


def test_bundle_keeps_every_check_with_evidence_and_a_four_line_note(scored: Scored) -> None:
    bundle = Path(scored.probe.stdout.splitlines()[-1].removeprefix("evidence: "))
    scorecard = json.loads((bundle / "scorecard.json").read_text())
    assert [c["check"] for c in scorecard] == CHECKS
    assert all(set(c) == {"check", "outcome", "evidence"} for c in scorecard)
    suspicious = next(c for c in scorecard if c["check"] == "suspicious")
    assert suspicious["outcome"] == "review"
    assert suspicious["evidence"] == [
        f"orders/total.py:{len(scored_fix_lines(scored)) + 5}: "
        "uses the string 'PYTEST_CURRENT_TEST'"
    ]
    assert len((bundle / "review-note.txt").read_text().splitlines()) == 4
    assert "ticket" not in json.loads((bundle / "decision.json").read_text())


def scored_fix_lines(scored: Scored) -> list[str]:
    return git.Repo(scored.repo).git.show("patch-fix:orders/total.py").splitlines()


def test_a_propose_freeze_verdict_writes_a_ticket_bound_to_its_patch(scored: Scored) -> None:
    assert scored.refactor.returncode == 3
    bundle = Path(scored.refactor.stdout.splitlines()[-1].removeprefix("evidence: "))
    decision = json.loads((bundle / "decision.json").read_text())
    ticket = json.loads((scored.logs / "tickets" / f"{decision['ticket']}.json").read_text())
    assert ticket["ticket_id"] == ticket["verdict_id"] == decision["verdict_id"]
    assert ticket["patch_sha"] == scored.refactor_sha == decision["patch_sha"]
    assert ticket["parent_sha"] == decision["parent_sha"]
    assert ticket["contract_hash"] == decision["contract_hash"]
    assert ticket["properties"] == ["prop.bulk_rounding"]
    assert ticket["status"] == "proposed"


def test_verdicts_list_is_a_table_and_json(scored: Scored) -> None:
    code, out, err = _cli("verdicts", "list", "--log-dir", str(scored.logs))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["VERDICT", "DECISION", "GATE", "PATCH", "PARENT", "REASONS"]
    assert [line.split()[1] for line in lines[1:3]] == ["accept", "propose_freeze"]
    assert "2 both_pass, 1 parent_fail_cleared" in lines[1]
    assert lines[3].startswith("2 verdicts; bundles under ")
    code, out, _ = _cli("verdicts", "list", "--log-dir", str(scored.logs), "--json")
    entries = json.loads(out)
    assert [e["decision"] for e in entries] == ["accept", "propose_freeze"]


def test_verdicts_show_reads_a_verdict_by_prefix(scored: Scored) -> None:
    entries = json.loads(_cli("verdicts", "list", "--log-dir", str(scored.logs), "--json")[1])
    verdict_id = entries[1]["verdict_id"]
    code, out, err = _cli("verdicts", "show", verdict_id[:-2], "--log-dir", str(scored.logs))
    assert (code, err) == (0, "")
    assert f"verdict   {verdict_id}" in out
    assert "decision  propose_freeze (gate: propose_freeze)" in out
    assert f"ticket    {verdict_id} (proposed)" in out
    assert "prop.bulk_rounding                propose_freeze  shared_variant_fail" in out
    assert "parent  9      7     2     0" in out and "patch   9      7     2     0" in out
    assert "CHECK              OUTCOME  EVIDENCE" in out
    assert "review note (review-note.txt):" in out and "  decision: propose_freeze" in out
    assert f"files: {scored.logs / 'verdicts' / verdict_id}" in out and "  patch.diff" in out
    code, out, _ = _cli("verdicts", "show", verdict_id, "--log-dir", str(scored.logs), "--json")
    shown = json.loads(out)
    assert set(shown) == {
        "verdict_id",
        "bundle",
        "decision",
        "scorecard",
        "review_note",
        "files",
        "ticket",
    }
    assert shown["ticket"]["status"] == "proposed"
    # A reviewer approves the ticket; show says so.
    code, _, _ = _cli(
        "freeze",
        "approve",
        verdict_id,
        "--expires",
        "2999-12-31",
        "--reason-code",
        "known_flake",
        "--log-dir",
        str(scored.logs),
    )
    assert code == 0
    out = _cli("verdicts", "show", verdict_id, "--log-dir", str(scored.logs))[1]
    assert "(approved, expires 2999-12-31T23:59:59Z, known_flake)" in out


def test_verdicts_errors_are_one_line(scored: Scored, tmp_path: Path) -> None:
    (tmp_path / "verdicts.jsonl").write_text('{"verdict_id": "a"}\nnot json\n')
    cases = [
        (["show", "nope", "--log-dir", str(scored.logs)], "no verdict 'nope'"),
        (["show", "2", "--log-dir", str(scored.logs)], "names 2 verdicts; give more of the id"),
        (["show", "../x", "--log-dir", str(scored.logs)], "not a verdict id"),
        (["list", "--log-dir", str(tmp_path)], f"{tmp_path / 'verdicts.jsonl'}:2: not a JSON"),
        (["show"], "Missing argument 'VERDICT_ID'"),
    ]
    for args, message in cases:
        code, out, err = _cli("verdicts", *args)
        assert (code, out) == (2, "")
        assert err.startswith("patchwarden: error: ") and message in err, err
        assert len(err.splitlines()) == 1
    assert _cli("verdicts", "list", "--log-dir", str(tmp_path / "empty"))[1].startswith(
        "no verdicts in "
    )
