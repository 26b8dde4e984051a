"""End to end on the orders example: ``score`` prints the note and one line per check, writes
a ticket for a propose_freeze, and ``verdicts list|show`` read it all back, from the log
directory ``score`` wrote to without being told one (the README's example).

Two real scorer runs (two trees x three seeds each, sandboxed), shared by the module. What
decided a verdict, and which rows lead, on synthetic bundles (tests/_view_data.py) shaped as
the scorer writes them: a reject decided by one guard among 59 rows, and a held-out reject.
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

from patchwarden.scorer import decided_by
from patchwarden.scorer.checks import SCORECARD
from patchwarden.server.cli import cli
from tests._git_repos import GIT_ENV, commit
from tests._view_data import write_held_out_reject, write_verdict
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


def _score(repo: Path, patch: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``score`` as the README runs it: no ``--log-dir``, from the directory above ``repo``."""
    return subprocess.run(
        [
            *("patchwarden", "score", "--repo", repo.name, "--contract", CONTRACT),
            *("--parent", "base", "--patch", patch),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=repo.parent,
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
    probe = _score(repo_path, "patch-probe", scorer_env)
    refactor = _score(repo_path, "patch-refactor", scorer_env)
    logs = root / "patchwarden-logs"  # the config's default scorer.log_dir, in the cwd
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
    # It reads the environment at import: the probes check sees that too.
    assert lines[1] == "decision: accept (suspicious: review; probes: review)"
    assert lines[4].startswith("extra seeds [")  # the default extra seed's line
    checks = lines[5 : 5 + len(CHECKS)]
    assert [line.split()[1] for line in checks] == CHECKS
    by_name = {line.split()[1]: line.split(None, 3)[2:] for line in checks}
    assert by_name["spec_review"] == ["pass"]
    assert by_name["suspicious"][0] == "review"
    assert "uses the string 'PYTEST_CURRENT_TEST'" in by_name["suspicious"][1]
    assert by_name["contract_tampered"] == ["pass"]
    assert by_name["forged"] == ["pass"]
    end = 5 + len(CHECKS)
    assert lines[end].startswith("evidence: ") and len(lines) == end + 1


def test_bundle_keeps_every_check_with_evidence_and_its_note(scored: Scored) -> None:
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
    assert len((bundle / "review-note.txt").read_text().splitlines()) == 5  # the extra seed's
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


def test_verdicts_list_reads_where_score_wrote_as_a_table_and_json(
    scored: Scored, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(scored.logs.parent)  # where score ran; neither was given --log-dir
    code, out, _ = _cli("verdicts", "list", "--json")
    entries = json.loads(out)
    assert [e["decision"] for e in entries] == ["accept", "propose_freeze"]
    assert [e["decided_by"] for e in entries] == [[], ["shared_variant_fail"]]
    accept, proposal = entries
    code, out, err = _cli("verdicts", "list")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"VERDICT{' ' * 27}DECISION        DECIDED BY           GATE            PATCH"
        "         PARENT        FINDINGS            REASONS",
        # The fix that peeks at pytest is an accept a person must look at, never clean.
        f"{accept['verdict_id']}  accept*         -                    accept          "
        f"{accept['patch_sha'][:12]}  {accept['parent_sha'][:12]}  suspicious, probes  "
        "2 both_pass, 1 parent_fail_cleared",
        f"{proposal['verdict_id']}  propose_freeze  shared_variant_fail  propose_freeze  "
        f"{proposal['patch_sha'][:12]}  {proposal['parent_sha'][:12]}  -                   "
        "1 shared_variant_fail, 2 both_pass",
        f"2 verdicts; bundles under {scored.logs / 'verdicts'}",
        "accept*: an accept with review findings, for a person to look at",
    ], out
    assert [e["findings"] for e in entries] == [["suspicious", "probes"], []]


def test_verdicts_show_reads_a_verdict_by_prefix(scored: Scored) -> None:
    entries = json.loads(_cli("verdicts", "list", "--log-dir", str(scored.logs), "--json")[1])
    verdict_id = entries[1]["verdict_id"]
    code, out, err = _cli("verdicts", "show", verdict_id[:-2], "--log-dir", str(scored.logs))
    assert (code, err) == (0, "")
    assert f"verdict   {verdict_id}" in out
    assert "decision  propose_freeze (decided by shared_variant_fail)" in out
    assert f"ticket    {verdict_id} (proposed)" in out
    assert "prop.bulk_rounding                propose_freeze  shared_variant_fail" in out
    assert "parent  9      7     2     0" in out and "patch   9      7     2     0" in out
    assert "CHECK              OUTCOME  EVIDENCE" in out
    assert "review note (review-note.txt):" in out
    assert "  decision: propose_freeze (decided by shared_variant_fail)" in out
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
    # The accept that carries a review finding says so in its header.
    out = _cli("verdicts", "show", entries[0]["verdict_id"], "--log-dir", str(scored.logs))[1]
    assert out.splitlines()[1] == "decision  accept* (review findings: suspicious, probes)"


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


# -- what decided, from the one record (synthetic bundles, nothing runs) -------------------

GUARDS = [f"guard.g{i:02}" for i in range(57)]
TRIAL_PROPS = ("prop.reversed_range", *GUARDS[:40], "guard.asserts_the_bug", *GUARDS[40:])
"""The trial that found it: the target, then 57 guards, one of which regresses (59 rows)."""


@pytest.fixture
def synthetic(tmp_path: Path) -> tuple[Path, str, str]:
    """A reject decided by the 42nd of 59 rows, and a held-out reject the gate accepted."""
    regression = write_verdict(
        tmp_path,
        1,
        decision="reject",
        props=TRIAL_PROPS,
        results={
            p: ("accept", "both_pass" if p.startswith("guard.g") else "parent_fail_cleared")
            for p in TRIAL_PROPS
        }
        | {"guard.asserts_the_bug": ("reject", "regression")},
    )
    held_out = write_held_out_reject(tmp_path, 2)
    return tmp_path, regression, held_out


def test_verdicts_list_names_what_decided(synthetic: tuple[Path, str, str]) -> None:
    logs, regression, held_out = synthetic
    code, out, err = _cli("verdicts", "list", "--log-dir", str(logs))
    assert (code, err) == (0, "")
    sha = {
        vid: (f"{n:040x}"[:12], f"{n:040x}"[::-1][:12])
        for n, vid in ((1, regression), (2, held_out))
    }
    assert out.splitlines() == [
        f"VERDICT{' ' * 27}DECISION  DECIDED BY  GATE    PATCH         PARENT        FINDINGS"
        "     REASONS",
        f"{regression}  reject    regression  reject  {sha[regression][0]}  "
        f"{sha[regression][1]}  spec_review  1 regression, 1 parent_fail_cleared, 57 both_pass",
        f"{held_out}  reject    held_out    accept  {sha[held_out][0]}  {sha[held_out][1]}  "
        "spec_review  1 parent_fail_cleared",
        f"2 verdicts; bundles under {logs / 'verdicts'}",
    ], out


def _section(out: str, heading: str) -> list[str]:
    """The lines of ``verdicts show``'s block that starts with ``heading``."""
    block = next(b for b in out.split("\n\n") if b.startswith(heading))
    return block.splitlines()


def test_verdicts_show_leads_with_the_row_that_decided(synthetic: tuple[Path, str, str]) -> None:
    logs, regression, _ = synthetic
    code, out, err = _cli("verdicts", "show", regression, "--log-dir", str(logs))
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == "decision  reject (decided by regression)"
    properties = _section(out, "PROPERTY")
    assert len(properties) == 1 + 59
    assert properties[1:3] == [
        "guard.asserts_the_bug  reject    regression",
        "prop.reversed_range    accept    parent_fail_cleared",
    ]
    checks = _section(out, "CHECK")
    differential = checks[2:16]
    assert differential[0] == "differential       reject   guard.asserts_the_bug: regression"
    assert differential[1].split() == ["prop.reversed_range:", "parent_fail_cleared"]
    assert differential[12].split() == ["(+47", "more", "in", "scorecard.json)"]
    note = _section(out, "review note")
    assert note[2] == "  decision: reject (decided by regression; spec_review: review)"
    assert note[3].startswith("  properties: guard.asserts_the_bug=regression, prop.reversed")


def test_verdicts_show_a_held_out_reject_says_so(synthetic: tuple[Path, str, str]) -> None:
    logs, _, held_out = synthetic
    code, out, err = _cli("verdicts", "show", held_out, "--log-dir", str(logs))
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == "decision  reject (decided by held_out; gate: accept)"
    assert _section(out, "PROPERTY") == [
        "PROPERTY                              DECISION  REASON",
        "held.clamp_above_anywhere (held out)  reject    uniform_fail",
        "prop.clamp_above                      accept    parent_fail_cleared",
    ]
    assert _section(out, "CHECK")[2:4] == [
        "differential       reject   held_out: held.clamp_above_anywhere: uniform_fail",
        "                            prop.clamp_above: parent_fail_cleared",
    ]
    assert _section(out, "review note")[2] == (
        "  decision: reject (decided by held_out; gate: accept; spec_review: review)"
    )


def test_every_deciding_row_is_shown_however_many(tmp_path: Path) -> None:
    props = [f"guard.g{i:02}" for i in range(30)]
    vid = write_verdict(
        tmp_path,
        3,
        decision="reject",
        props=props,
        results={
            p: ("reject" if i % 2 else "accept", "regression" if i % 2 else "both_pass")
            for i, p in enumerate(props)
        },
    )
    out = _cli("verdicts", "show", vid, "--log-dir", str(tmp_path))[1]
    shown = _section(out, "CHECK")[2:18]
    # All 15 regressions, past the twelve lines a check shows; then the rest counted.
    assert [line.split()[-1] for line in shown[:15]] == ["regression"] * 15
    assert shown[15].split() == ["(+15", "more", "in", "scorecard.json)"]


@pytest.mark.parametrize(
    ("record", "decided"),
    [
        ({"decision": "accept", "gate_decision": "accept", "scorecard": []}, []),
        (
            {
                "decision": "reject",
                "gate_decision": "reject",
                "results": [
                    {"prop": "a", "decision": "accept", "reason": "both_pass"},
                    {"prop": "b", "decision": "reject", "reason": "regression"},
                    {"prop": "c", "decision": "propose_freeze", "reason": "shared_variant_fail"},
                    {"prop": "d", "decision": "reject", "reason": "regression"},
                ],
                "scorecard": [
                    {"check": "contract_tampered", "outcome": "reject"},
                    {"check": "differential", "outcome": "reject"},
                    {"check": "spec_review", "outcome": "review"},
                ],
            },
            ["regression", "contract_tampered"],
        ),
        (
            {
                "decision": "reject",
                "gate_decision": "accept",
                "results": [{"prop": "a", "decision": "accept", "reason": "parent_fail_cleared"}],
                "extra_seeds": {"decision": "accept", "results": []},
                "held_out": {"decision": "reject", "results": []},
            },
            ["held_out"],
        ),
        (
            {"decision": "reject", "gate_decision": "accept", "hidden": {"extra_seeds": "reject"}},
            ["extra_seeds"],
        ),
        (
            {
                "decision": "skipped",
                "gate_decision": "skipped",
                "skip_reason": "no_parent",
                "results": [],
                "held_out": {"decision": "skipped", "skip_reason": "no_parent", "results": []},
            },
            ["no_parent"],
        ),
        (
            {
                "decision": "propose_freeze",
                "results": [
                    {"prop": "a", "decision": "propose_freeze", "reason": "shared_variant_fail"}
                ],
            },
            ["shared_variant_fail"],
        ),
        ({"decision": "reject", "decided_by": ["as stored"], "results": []}, ["as stored"]),
    ],
    ids=[
        "accept",
        "regression-and-tampered",
        "held-out",
        "old-index-line",
        "skipped",
        "gate-alone",
        "stored",
    ],
)
def test_what_decided_is_one_rule_over_the_record(
    record: dict[str, object], decided: list[str]
) -> None:
    assert decided_by(record) == decided
