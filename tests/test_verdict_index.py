"""The verdict index has one reader (scorer/_index.py) and one policy, so the three places
that read it answer alike: ``verdicts list``, ``score-batch`` resume and the reviewer's view.

A torn last line (no newline: a writer died mid-write) is skipped with a warning naming
file:line; a torn line in the middle and a line without an id are errors naming file:line
(docs/reliability.md, "The verdict index"). Real commands on a real repository; score-batch
finds its verdict in the index and runs nothing.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from patchwarden.scorer import IndexLine
from patchwarden.scorer._index import append_index
from patchwarden.server._view import create_app
from patchwarden.server.cli import cli
from tests._git_repos import commit, init_repo
from tests._view_data import verdict_id, write_verdict

pytestmark = pytest.mark.bwrap  # score-batch refuses to start on a machine without isolation

TORN = "skipped a torn last line (an interrupted write)"
TORN_LINE = '{"verdict_id": "20261201T000000Z-torn", "deci'
CASES = {
    # name: (the index's second line, then one more verdict?, the outcome every reader gives)
    "a torn last line": (TORN_LINE, False, ("ok", TORN)),
    "a torn middle line": (TORN_LINE + "\n", True, ("error", "not a JSON object")),
    "a line without an id": (
        '{"decision": "accept"}\n',
        True,
        ("error", "index line without a verdict_id"),
    ),
}


def _line(vid: str, request_id: str, shas: tuple[str, str]) -> IndexLine:
    return IndexLine(
        verdict_id=vid,
        request_id=request_id,
        decision="accept",
        gate_decision="accept",
        parent_sha=shas[0],
        patch_sha=shas[1],
        results=[{"prop": "prop.a", "reason": "both_pass"}],
    )


@pytest.fixture
def logs(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """A repository and a log directory whose index holds a verdict for request ``r1``,
    then the case's line (and, for a line in the middle, one more verdict)."""
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, {"m.py": "X = 1\n"}, "base")
    patch = commit(repo, {"m.py": "X = 2\n"}, "patch")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    second, more, _ = CASES[request.param]
    write_verdict(log_dir, 1, index=False)
    append_index(log_dir, _line(verdict_id(1), "r1", (base, patch)))
    with (log_dir / "verdicts.jsonl").open("a") as handle:
        handle.write(second)
    if more:
        write_verdict(log_dir, 2, index=False)
        append_index(log_dir, _line(verdict_id(2), "r2", (base, patch)))
    return Path(repo.working_dir), log_dir


def _outcome(text: str, index: Path, ok: bool) -> tuple[str, str]:
    """``("ok", warning)`` or ``("error", problem)``: what follows the file:line named."""
    where = f"{index}:2: "
    assert where in text, text
    return ("ok" if ok else "error", text.split(where, 1)[1].splitlines()[0])


def _verdicts_list(repo: Path, log_dir: Path) -> tuple[str, str]:
    result = CliRunner().invoke(cli, ["verdicts", "list", "--json", "--log-dir", str(log_dir)])
    if result.exit_code == 0:
        assert [e["verdict_id"] for e in json.loads(result.stdout)][:1] == [verdict_id(1)]
    else:
        assert (result.exit_code, result.stdout) == (2, "")
        assert (
            result.stderr.startswith("patchwarden: error: ")
            and len(result.stderr.splitlines()) == 1
        )
    return _outcome(result.stderr, log_dir / "verdicts.jsonl", result.exit_code == 0)


def _score_batch_resume(repo: Path, log_dir: Path) -> tuple[str, str]:
    requests = log_dir.parent / "requests.jsonl"
    requests.write_text(
        json.dumps({"id": "r1", "repo": str(repo), "parent": "HEAD~1", "patch": "HEAD"}) + "\n"
    )
    result = CliRunner().invoke(
        cli, ["score-batch", str(requests), "--log-dir", str(log_dir), "--json"]
    )
    if result.exit_code == 0:
        (answer,) = [json.loads(line) for line in result.stdout.splitlines()]
        assert (answer["id"], answer["verdict_id"]) == ("r1", verdict_id(1))
    else:
        assert result.exit_code == 2, result.output
    return _outcome(result.stderr, log_dir / "verdicts.jsonl", result.exit_code == 0)


def _view(repo: Path, log_dir: Path) -> tuple[str, str]:
    page = TestClient(create_app(log_dir), base_url="http://127.0.0.1").get("/")
    if page.status_code == 200:
        assert verdict_id(1) in page.text
    else:
        assert page.status_code == 500
        assert verdict_id(1) not in page.text
    text = html.unescape(re.sub(r"<[^>]+>", "\n", page.text))
    return _outcome(text, log_dir / "verdicts.jsonl", page.status_code == 200)


@pytest.mark.parametrize("logs", list(CASES), indirect=True)
def test_every_reader_of_the_index_answers_the_same(
    logs: tuple[Path, Path], request: pytest.FixtureRequest
) -> None:
    repo, log_dir = logs
    expected = CASES[request.node.callspec.params["logs"]][2]
    answers = {
        reader.__name__: reader(repo, log_dir)
        for reader in (_verdicts_list, _score_batch_resume, _view)
    }
    assert answers == {name: expected for name in answers}
