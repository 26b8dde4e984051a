"""``patchwarden score-batch`` on the orders example: decisions, one line per request, resume.

One batch (three requests scored, four bad lines) through the command line, run twice; the
second run must score nothing. A small Ray batch runs on a local Ray started by the command.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BUNDLE_FILES, EXAMPLE

pytestmark = pytest.mark.bwrap

EXPECTED = {c["patch"]: c for c in json.loads((EXAMPLE / "expected.json").read_text())}
SCORED = {"fix": "patch-fix", "regression": "patch-regression", "refactor": "patch-refactor"}


def _requests(repo: Path) -> str:
    lines = [
        json.dumps({"id": name, "repo": str(repo), "parent": "base", "patch": patch})
        for name, patch in SCORED.items()
    ]
    lines += [
        "{not json",
        json.dumps({"id": "fix", "repo": str(repo), "parent": "base", "patch": "patch-fix"}),
        json.dumps({"id": "lost", "repo": "no-such-repo", "parent": "base", "patch": "x"}),
        json.dumps({"id": "extra", "repo": str(repo), "parent": "base", "patch": "p", "x": 1}),
    ]
    return "\n".join(lines) + "\n"


def _batch(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["patchwarden", "score-batch", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )


@pytest.fixture(scope="module")
def batch(
    example_repo: Path, tmp_path_factory: pytest.TempPathFactory, scorer_env: dict[str, str]
) -> dict:
    work = tmp_path_factory.mktemp("batch")
    requests = work / "requests.jsonl"
    requests.write_text(_requests(example_repo))
    logs = work / "logs"
    first = _batch(str(requests), "--log-dir", str(logs), "--json", env=scorer_env)
    bundles = sorted((logs / "verdicts").iterdir())
    index = (logs / "verdicts.jsonl").read_text()
    second = _batch(str(requests), "--log-dir", str(logs), "--json", env=scorer_env)
    return {
        "requests": requests,
        "logs": logs,
        "first": first,
        "second": second,
        "bundles_after_first": bundles,
        "index_after_first": index,
    }


def _lines(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_every_request_gets_one_line_and_the_batch_exits_0(batch: dict) -> None:
    first = batch["first"]
    assert first.returncode == 0, first.stderr
    lines = _lines(first)
    assert len(lines) == 7
    where = str(batch["requests"])
    errors = {(line["id"], line.get("line")): line["error"] for line in lines if "error" in line}
    assert errors == {
        (None, 4): f"{where}:4: not a JSON object",
        ("fix", None): f"{where}:5: duplicate id 'fix' (first on line 1)",
        ("lost", None): f"{where}:6: {Path(where).parent / 'no-such-repo'}: not a git repository",
        ("extra", None): f"{where}:7: x: unknown key",
    }
    assert first.stderr.splitlines()[-1] == (
        "patchwarden: score-batch: 7 of 7 requests: 3 scored, 0 resumed, 4 errors"
    )


def test_batch_gives_the_decisions_score_gives(batch: dict) -> None:
    verdicts = {line["id"]: line for line in _lines(batch["first"]) if "verdict_id" in line}
    assert set(verdicts) == set(SCORED)
    for name, patch in SCORED.items():
        expected = EXPECTED[patch]
        got = verdicts[name]
        assert got["decision"] == expected["decision"]
        assert {r["prop"]: r["reason"] for r in got["results"]} == expected["results"]
        decision = json.loads((Path(got["bundle"]) / "decision.json").read_text())
        assert decision["verdict_id"] == got["verdict_id"]
        assert decision["request_id"] == name
        assert decision["counts"]["parent"]["lines"] == decision["counts"]["patch"]["lines"] == 9


def test_each_verdict_is_a_whole_bundle_with_one_index_line(batch: dict) -> None:
    index = [json.loads(line) for line in batch["index_after_first"].splitlines()]
    assert sorted(e["request_id"] for e in index) == sorted(SCORED)
    for entry in index:
        bundle = Path(entry["bundle"])
        assert bundle.parent.parent == batch["logs"]
        assert {p.name for p in bundle.iterdir()} == BUNDLE_FILES
        assert len(list((bundle / "runs").iterdir())) == 2 * 3 * 4  # json, stdout, stderr, channel
    assert [p.name for p in batch["bundles_after_first"] if p.name.startswith(".")] == []


def test_a_second_run_resumes_without_scoring_again(batch: dict) -> None:
    second = batch["second"]
    assert second.returncode == 0, second.stderr
    assert sorted(map(json.dumps, _lines(second))) == sorted(
        map(json.dumps, _lines(batch["first"]))
    )
    assert sorted((batch["logs"] / "verdicts").iterdir()) == batch["bundles_after_first"]
    assert (batch["logs"] / "verdicts.jsonl").read_text() == batch["index_after_first"]
    assert second.stderr.splitlines()[-1] == (
        "patchwarden: score-batch: 7 of 7 requests: 0 scored, 3 resumed, 4 errors"
    )


def test_progress_is_drawn_on_a_terminal_only(batch: dict, scorer_env: dict[str, str]) -> None:
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.run(
            ["patchwarden", "score-batch", str(batch["requests"]), "--log-dir", str(batch["logs"])],
            stdout=subprocess.PIPE,
            stderr=secondary,
            text=True,
            env={**scorer_env, "COLUMNS": "120"},
            timeout=300,
            check=False,
        )
        os.close(secondary)
        drawn = b""
        while select.select([primary], [], [], 0.5)[0]:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal is gone once the child has closed it
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(primary)
    assert proc.returncode == 0
    text = drawn.decode("utf-8", "replace")
    assert "scoring" in text and "7/7" in text, text
    assert "resumed" in text  # the summary line
    assert "scoring" not in batch["second"].stderr  # not a terminal: no progress line


def test_an_id_reused_for_other_commits_is_an_error_not_the_old_verdict(
    batch: dict, example_repo: Path, scorer_env: dict[str, str], tmp_path: Path
) -> None:
    requests = tmp_path / "reused.jsonl"
    line = {"id": "fix", "repo": str(example_repo), "parent": "base", "patch": "patch-refactor"}
    requests.write_text(json.dumps(line) + "\n")
    proc = _batch(str(requests), "--log-dir", str(batch["logs"]), "--json", env=scorer_env)
    assert proc.returncode == 0, proc.stderr
    [result] = _lines(proc)
    assert result["id"] == "fix"
    assert result["error"].startswith(f"{requests}:1: id 'fix' already names verdict ")
    assert " of other commits (" in result["error"]
    assert "verdict_id" not in result


def test_a_requests_file_that_cannot_be_read_is_one_line_exit_2(
    tmp_path: Path, scorer_env: dict[str, str]
) -> None:
    missing = tmp_path / "missing.jsonl"
    proc = _batch(str(missing), "--log-dir", str(tmp_path / "logs"), env=scorer_env)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"patchwarden: error: {missing}: cannot read the requests: No such file or directory\n"
    )
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"id": "a"}\n\xff\xfe\n')
    proc = _batch(str(binary), "--log-dir", str(tmp_path / "logs"), env=scorer_env)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"patchwarden: error: {binary}:2: not UTF-8 text\n"
    assert not (tmp_path / "logs").exists()


def test_ray_executor_gives_the_same_decision_on_a_local_ray(
    example_repo: Path, tmp_path: Path, scorer_env: dict[str, str]
) -> None:
    if not os.environ.get("CI"):
        pytest.importorskip("ray", reason="the ray extra is not installed (scripts/pw adds it)")
    requests = tmp_path / "ray.jsonl"
    line = {"id": "fix-on-ray", "repo": str(example_repo), "parent": "base", "patch": "patch-fix"}
    requests.write_text(json.dumps(line) + "\n")
    logs = tmp_path / "logs"
    proc = _batch(
        str(requests), "--log-dir", str(logs), "--json", "--executor", "ray", env=scorer_env
    )
    assert proc.returncode == 0, proc.stderr
    [result] = _lines(proc)
    assert result["decision"] == "accept", result
    assert {r["prop"]: r["reason"] for r in result["results"]} == EXPECTED["patch-fix"]["results"]
    runs = [json.loads(p.read_text()) for p in (Path(result["bundle"]) / "runs").glob("*.json")]
    assert len(runs) == 6
    assert all(run["where"] != "local" and run["complete"] for run in runs)
