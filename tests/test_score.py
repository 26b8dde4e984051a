"""``patchwarden score`` on the orders example: the four verdicts and the bundle.

One real scorer run per patch (two trees x three seeds, sandboxed), through
the command line as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests._runs import expected_run_files
from tests.conftest import BUNDLE_FILES, CONTRACT, EXAMPLE

pytestmark = pytest.mark.bwrap

EXPECTED = json.loads((EXAMPLE / "expected.json").read_text())
EXIT = {"accept": 0, "reject": 1, "propose_freeze": 3}


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("logs")


@pytest.fixture(scope="module")
def verdicts(example_repo: Path, log_dir: Path, scorer_env: dict[str, str]) -> list[dict]:
    """Score every expected pair once; keep exit code, decision object, stdout."""
    out = []
    for case in EXPECTED:
        proc = subprocess.run(
            [
                "patchwarden",
                "score",
                "--repo",
                str(example_repo),
                "--contract",
                CONTRACT,
                "--parent",
                case["parent"],
                "--patch",
                case["patch"],
                "--log-dir",
                str(log_dir),
                "--json",
            ],
            capture_output=True,
            text=True,
            env=scorer_env,
            timeout=600,
        )
        out.append(
            {
                "case": case,
                "code": proc.returncode,
                "stderr": proc.stderr,
                "decision": json.loads(proc.stdout) if proc.stdout else None,
            }
        )
    return out


@pytest.mark.parametrize("index", range(len(EXPECTED)), ids=[c["patch"] for c in EXPECTED])
def test_score_gives_the_expected_verdict(verdicts: list[dict], index: int) -> None:
    got = verdicts[index]
    case = got["case"]
    assert got["stderr"] == ""
    assert got["code"] == EXIT[case["decision"]]
    decision = got["decision"]
    assert decision["decision"] == case["decision"]
    assert {r["prop"]: r["reason"] for r in decision["results"]} == case["results"]
    assert decision["counts"]["parent"]["lines"] == 9
    assert decision["counts"]["patch"]["lines"] == 9
    checks = {c["check"]: c["outcome"] for c in decision["scorecard"]}
    assert checks["contract_tampered"] == "pass"
    assert checks["shadowing"] == "pass"
    assert checks["fixture_drifted"] == "pass"


def test_each_verdict_has_a_complete_bundle_and_index_line(
    verdicts: list[dict], log_dir: Path
) -> None:
    index = [json.loads(line) for line in (log_dir / "verdicts.jsonl").read_text().splitlines()]
    assert [e["verdict_id"] for e in index] == [v["decision"]["verdict_id"] for v in verdicts]
    for entry, got in zip(index, verdicts, strict=True):
        bundle = Path(entry["bundle"])
        assert {p.name for p in bundle.iterdir()} == BUNDLE_FILES
        assert json.loads((bundle / "decision.json").read_text()) == got["decision"]
        note = (bundle / "review-note.txt").read_text().splitlines()
        assert len(note) == 5
        assert note[0] == f"contract: {got['decision']['contract_hash']}"
        assert note[1].startswith(f"decision: {got['case']['decision']}")
        assert note[3].startswith("rows: parent 9 lines")
        # The default extra seed: what it changed (nothing, for the example's patches).
        extra = got["decision"]["extra_seeds"]
        assert note[4].startswith(f"extra seeds {extra['seeds']}: accept: -; rows: parent 3 lines")
        assert len((bundle / "parent.jsonl").read_text().splitlines()) == 12
        runs = sorted(p.name for p in (bundle / "runs").iterdir())
        assert runs == expected_run_files(bundle / "runs")
    assert not [p for p in (log_dir / "verdicts").iterdir() if p.name.startswith(".staging")]


def test_bad_inputs_are_one_line_errors(example_repo: Path, scorer_env: dict[str, str]) -> None:
    cases = [
        (
            ["--parent", "no-such-ref", "--patch", "patch-fix", "--contract", CONTRACT],
            f"patchwarden: error: {example_repo}: unknown revision 'no-such-ref'\n",
        ),
        (
            ["--parent", "base", "--patch", "patch-fix", "--contract", "nope.yaml"],
            "patchwarden: error: nope.yaml: contract not found in the parent commit nor on disk\n",
        ),
    ]
    for args, message in cases:
        proc = subprocess.run(
            ["patchwarden", "score", "--repo", str(example_repo), *args],
            capture_output=True,
            text=True,
            env=scorer_env,
            timeout=120,
        )
        assert (proc.returncode, proc.stderr, proc.stdout) == (2, message, "")
