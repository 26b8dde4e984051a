"""The reviewer's view without a browser: the index reader, the pages' content, paths that
must be 404s, the token, the headers, nothing written, and the static export.

Bundles are synthetic (tests/_view_data.py: shaped as the scorer writes them); the
browser tests (tests/test_view_browser.py) render real scored verdicts. Requests go
through starlette's TestClient, and, where the client would tidy a path before sending
it (``..``, ``//``), as raw request lines to a real ``patchwarden view`` process.
"""

from __future__ import annotations

import html
import http.client
import json
import logging
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from patchwarden.scorer import InputError, approve_ticket, write_ticket
from patchwarden.server._view import TOKEN_ENV, create_app, export_site
from patchwarden.server._view._index import IndexReader
from patchwarden.server.cli import cli
from tests._view_data import (
    append_index,
    running_view,
    verdict_id,
    write_held_out_reject,
    write_many,
    write_verdict,
)

BASE = "http://127.0.0.1:8766"
TOKEN = "s3cret-token-for-the-view-0123"
HOSTILE = "<script>alert('prop')</script>"


def client(log_dir: Path, **kwargs: object) -> TestClient:
    return TestClient(create_app(log_dir, **kwargs), base_url=BASE)  # type: ignore[arg-type]


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 verdicts, one with held-out rows and hostile text, one with a broken file,
    one with a symlink in its bundle, and freeze tickets in three states."""
    root = tmp_path_factory.mktemp("view") / "logs"
    write_many(root, 120)
    write_verdict(
        root,
        500,
        decision="reject",
        props=("prop.total", HOSTILE),
        held_out=("prop.hidden_rounding",),
        failing={
            ("patch", "prop.total", 29): "fail",
            ("parent", "prop.hidden_rounding", 11): "fail",
            ("patch", "prop.hidden_rounding", 11): "fail",
        },
        evidence=('<img src=x onerror="alert(1)">', "orders/total.py: removed 2"),
    )
    broken = write_verdict(root, 501, decision="accept")
    (root / "verdicts" / broken / "decision.json").write_text('{"decision": "acc', "utf-8")
    linked = write_verdict(root, 502, decision="accept")
    (root / "verdicts" / linked / "runs" / "leak.txt").symlink_to("/etc/passwd")
    # A directory that looks like a verdict but has no index line.
    write_verdict(root, 503, index=False)
    now = datetime.now(UTC)
    for n, state in ((3, "proposed"), (7, "approved"), (11, "expired")):
        vid = verdict_id(n)
        write_ticket(
            root,
            verdict_id=vid,
            patch_sha=f"{n:040x}",
            parent_sha=f"{n:040x}"[::-1],
            contract_hash="sha256:x",
            properties=["prop.c"],
        )
        if state != "proposed":
            then = now - timedelta(days=30) if state == "expired" else now
            approve_ticket(
                root,
                vid,
                expires=then + timedelta(days=1),
                reason_code="known_flake",
                approved_by="reviewer",
                now=then,
            )
    (root / "tickets" / "broken.json").write_text("{not json", "utf-8")
    return root


@pytest.fixture(scope="module")
def view(logs: Path) -> TestClient:
    return client(logs)


# -- the index ------------------------------------------------------------------------


def test_index_is_read_incrementally(tmp_path: Path) -> None:
    write_many(tmp_path, 3)
    reader = IndexReader(tmp_path)
    assert [e.verdict_id for e in reader.snapshot().entries] == [verdict_id(n) for n in (2, 1, 0)]
    index = tmp_path / "verdicts.jsonl"
    # Rewrite the parsed bytes in place (same file, same size): an incremental reader never
    # looks at them again, so the first three verdicts stay as they were.
    size = index.stat().st_size
    with index.open("r+b") as handle:
        handle.write(b"x" * 40)
    assert index.stat().st_size == size
    write_verdict(tmp_path, 3)
    snapshot = reader.snapshot()
    assert [e.verdict_id for e in snapshot.entries] == [verdict_id(n) for n in (3, 2, 1, 0)]
    assert snapshot.warnings == ()
    # A fresh reader parses everything and finds the damage, naming file:line.
    with pytest.raises(InputError) as caught:
        IndexReader(tmp_path).snapshot()
    assert str(caught.value) == f"{index}:1: not a JSON object"


def test_a_torn_last_line_is_a_warning_and_a_repeated_id_keeps_the_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_verdict(tmp_path, 1)
    append_index(tmp_path, "\n")
    write_verdict(tmp_path, 3)
    append_index(tmp_path, json.dumps({"verdict_id": verdict_id(1), "decision": "reject"}) + "\n")
    append_index(tmp_path, '{"verdict_id": "20261130T000009Z-torn-at-the-end", "deci')
    index = tmp_path / "verdicts.jsonl"
    with caplog.at_level(logging.WARNING, logger="patchwarden.view"):
        page = client(tmp_path).get("/")
    assert page.status_code == 200
    expected = [
        f"{index}:4: skipped: verdict {verdict_id(1)} again (first on line 1); kept the first",
        f"{index}:5: skipped a torn last line (an interrupted write)",
    ]
    shown = html.unescape(page.text)
    for warning in expected:
        assert warning in shown
    assert [r.getMessage() for r in caplog.records] == expected
    assert page.text.count('class="vid"') == 2
    # The last line finished (as no writer does: the next one cuts a torn line off): it
    # appears, and its warning goes.
    append_index(tmp_path, 'sion": "accept"}\n')
    snapshot = IndexReader(tmp_path).snapshot()
    assert snapshot.entries[0].verdict_id == "20261130T000009Z-torn-at-the-end"
    assert snapshot.warnings == tuple(expected[:1])


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"verdict_id": "20261130T000002Z-00000000', "not a JSON object"),
        ('["a list"]', "not a JSON object"),
        ('{"decision": "accept"}', "index line without a verdict_id"),
        (
            '{"verdict_id": "../../etc", "decision": "accept"}',
            "verdict_id '../../etc' is not a usable id",
        ),
        ('{"verdict_id": "v1", "decision": 3}', "decision: Input should be a valid string"),
    ],
)
def test_any_other_bad_line_is_an_error_page_naming_file_and_line(
    tmp_path: Path, line: str, problem: str
) -> None:
    write_verdict(tmp_path, 1)
    append_index(tmp_path, line + "\n")
    write_verdict(tmp_path, 3)
    for path in ("/", f"/verdicts/{verdict_id(1)}", "/tickets"):
        page = client(tmp_path).get(path)
        assert page.status_code == 500
        assert f"{tmp_path / 'verdicts.jsonl'}:2: {problem}" in html.unescape(page.text)
        assert 'class="vid"' not in page.text


def test_a_replaced_index_is_read_again(tmp_path: Path) -> None:
    write_many(tmp_path, 2)
    reader = IndexReader(tmp_path)
    assert len(reader.snapshot().entries) == 2
    index = tmp_path / "verdicts.jsonl"
    first = index.read_text().splitlines()[0]
    index.write_text(first + "\n")  # truncated: a new index
    assert [e.verdict_id for e in reader.snapshot().entries] == [verdict_id(0)]
    index.unlink()
    assert reader.snapshot().entries == ()


# -- the list -------------------------------------------------------------------------


def test_list_pages_newest_first_with_counts_and_filters(view: TestClient) -> None:
    first = view.get("/")
    assert first.status_code == 200
    ids = re.findall(r'class="vid" href="/verdicts/([^"?]+)"', first.text)
    assert len(ids) == 50
    assert ids[0] == verdict_id(502)
    assert 'rel="next" href="/?page=2"' in first.text
    assert "page 1 of 3" in first.text
    assert re.findall(r"page=3", first.text) == []  # only the next page is linked
    last = view.get("/?page=3")
    assert len(re.findall(r'class="vid"', last.text)) == 123 - 100
    assert view.get("/?page=99").text.count('class="vid"') == 23  # clamped to the last page
    # Counts per side come from each bundle's decision.json; findings from its scorecard.
    row = first.text.split(f'href="/verdicts/{verdict_id(500)}"')[1].split("</tr>")[0]
    assert re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", row)).count("of 9") == 2
    assert "spec_review" in row
    # An accept that carries a review finding never looks like a clean accept.
    marked = (
        '<span class="badge d-accept marked" title="an accept with review findings: '
        'spec_review">accept*</span>'
    )
    top = first.text.split(f'href="/verdicts/{verdict_id(502)}"')[0].rsplit("<tr", 1)[1]
    assert marked in top
    page = view.get(f"/verdicts/{verdict_id(502)}").text
    assert f'<span id="decision" class="decision">{marked}</span>' in page
    rejects = view.get("/?decision=reject")
    listed = re.findall(r'class="vid" href="/verdicts/([^"?]+)\?decision=reject"', rejects.text)
    assert len(listed) == 31  # 30 of the 120 and verdict 500
    assert 'reject <span class="n">31</span>' in rejects.text
    assert 'skipped <span class="n">30</span>' in rejects.text
    assert view.get("/?decision=nothing").text.count('class="vid"') == 0
    for bad in ("x", "0", "-1", "1.5"):
        answer = view.get(f"/?page={bad}")
        assert answer.status_code == 400
        assert "page must be a positive whole number" in answer.text


def test_an_unreadable_bundle_is_named_not_hidden(view: TestClient, logs: Path) -> None:
    broken = verdict_id(501)
    listing = view.get("/")
    assert "bundle unreadable" in listing.text.split(f"/verdicts/{broken}")[1].split("</tr>")[0]
    page = view.get(f"/verdicts/{broken}")
    assert page.status_code == 200
    path = logs / "verdicts" / broken / "decision.json"
    assert f"{path}:1: not valid JSON" in page.text
    assert "This bundle has problems" in page.text


# -- one verdict ----------------------------------------------------------------------


def test_verdict_page_shows_grid_held_out_rows_and_escapes_everything(view: TestClient) -> None:
    page = view.get(f"/verdicts/{verdict_id(500)}")
    assert page.status_code == 200
    text = page.text
    assert "<script" not in text.lower()
    assert "&lt;script&gt;alert(&#39;prop&#39;)&lt;/script&gt;" in text
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in text
    cells = re.findall(
        r'<td class="cell c-(\w+)[^"]*" data-side="(\w+)" data-seed="(\d+)" data-prop="([^"]+)"',
        text,
    )
    assert len(cells) == 3 * 3 * 2
    assert ("fail", "patch", "29", "prop.total") in cells
    assert ("pass", "parent", "29", "prop.total") in cells
    held = re.findall(r'<tr class="held-out">\s*<th class="prop">([^<]+?) <span', text)
    assert held == ["prop.hidden_rounding"]
    assert "AssertionError · tests/properties/test_orders.py:11" in text
    assert 'id="count-patch">18 rows' not in text  # nine per side: three properties x three
    assert 'id="count-patch">9 rows: <span class="pass">7 pass</span>' in text
    assert "tests/test_orders.py: restored from the parent" in text
    assert 'href="/verdicts/' + verdict_id(500) + '/files/runs/patch-seed29.stdout.txt"' in text
    assert '<span class="n">BULK_FACTOR</span>' in text  # the diff, highlighted as Python


def test_a_held_out_reject_shows_as_one_in_the_list_and_its_page(tmp_path: Path) -> None:
    """The list and the page say what decision.json, the index line and the review note say
    (``decided_by``): the gate accepted, the held-out property rejected."""
    vid = write_held_out_reject(tmp_path, 1)
    view = client(tmp_path)
    listing = view.get("/").text
    row = listing.split('<tr class="row-reject">')[1].split("</tr>")[0]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[1] == (
        '<span class="badge d-reject">reject</span><br><small class="decided-by">decided by '
        "held_out</small><br><small>gate: accept</small>"
    )
    page = view.get(f"/verdicts/{vid}").text
    assert '<tr><th>decided by</th><td id="decided-by">held_out</td></tr>' in page
    assert "<tr><th>gate</th><td>accept</td></tr>" in page
    assert re.findall(r'<th class="prop">([^<]+?)[ <]', page) == [
        "held.clamp_above_anywhere",
        "prop.clamp_above",
    ]
    note = (tmp_path / "verdicts" / vid / "review-note.txt").read_text().splitlines()
    assert note[1] == "decision: reject (decided by held_out; gate: accept; spec_review: review)"
    assert html.escape(note[1], quote=False) in page


def test_the_row_that_decided_leads_the_grid_and_the_reasons(tmp_path: Path) -> None:
    props = ("prop.target", *(f"guard.g{i:02}" for i in range(20)), "guard.asserts_the_bug")
    results = {p: ("accept", "both_pass") for p in props}
    results["prop.target"] = ("accept", "parent_fail_cleared")
    results["guard.asserts_the_bug"] = ("reject", "regression")
    vid = write_verdict(tmp_path, 1, decision="reject", props=props, results=results)
    view = client(tmp_path)
    row = view.get("/").text.split('<tr class="row-reject">')[1].split("</tr>")[0]
    assert '<small class="decided-by">decided by regression</small>' in row
    reasons = re.findall(r'<span class="reason r-\w+">([^<]+)</span>', row)
    assert reasons == ["regression", "parent_fail_cleared", "both_pass \u00d720"]
    page = view.get(f"/verdicts/{vid}").text
    assert re.findall(r'<th class="prop">([^<]+?)</th>', page)[:2] == [
        "guard.asserts_the_bug",
        "prop.target",
    ]
    evidence = page.split('id="check-differential"')[1].split("</tr>")[0]
    assert re.findall(r"<li>([^<]+)</li>", evidence)[:2] == [
        "guard.asserts_the_bug: regression",
        "prop.target: parent_fail_cleared",
    ]


def test_prev_and_next_follow_the_list_and_its_filter(view: TestClient) -> None:
    middle = verdict_id(101)  # a reject: decisions cycle, 101 % 4 == 1
    page = view.get(f"/verdicts/{middle}").text
    assert f'href="/verdicts/{verdict_id(102)}" accesskey="p"' in page
    assert f'href="/verdicts/{verdict_id(100)}" accesskey="n"' in page
    assert "22 of 123" in page
    filtered = view.get(f"/verdicts/{middle}?decision=reject").text
    assert f'href="/verdicts/{verdict_id(500)}?decision=reject" accesskey="p"' not in filtered
    assert f'href="/verdicts/{verdict_id(105)}?decision=reject" accesskey="p"' in filtered
    assert f'href="/verdicts/{verdict_id(97)}?decision=reject" accesskey="n"' in filtered
    assert "6 of 31" in filtered
    assert 'href="/?decision=reject">list (reject)' in filtered


def test_run_output_is_plain_text_from_the_bundle(view: TestClient, logs: Path) -> None:
    vid = verdict_id(500)
    answer = view.get(f"/verdicts/{vid}/files/runs/patch-seed29.stdout.txt")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.text == "patch seed 29: 3 passed\n"


# -- paths come from the index only ---------------------------------------------------

ATTACKS = [
    "/verdicts/{vid}/files/../decision.json",
    "/verdicts/{vid}/files/runs/../../{other}/decision.json",
    "/verdicts/{vid}/files/%2e%2e/%2e%2e/verdicts.jsonl",
    "/verdicts/{vid}/files/..%2F..%2Fverdicts.jsonl",
    "/verdicts/{vid}/files/%2Fetc%2Fpasswd",
    "/verdicts/{vid}/files//etc/passwd",
    "/verdicts/{vid}/files/runs/leak.txt",
    "/verdicts/{vid}/files/runs",
    "/verdicts/..%2F..%2Fetc",
    "/verdicts/%2e%2e",
    "/verdicts/{unindexed}",
    "/verdicts/{unindexed}/files/decision.json",
    "/verdicts/20261130T",
    "/verdicts/%2Fetc%2Fpasswd",
    "/verdicts//etc/passwd/files/x",
    "/../../etc/passwd",
    "/static/../verdicts.jsonl",
    "/static/%2e%2e/verdicts.jsonl",
    "/tickets/../verdicts.jsonl",
    "/tickets/broken.json",
]


def _attack_paths() -> list[str]:
    vid, other, unindexed = verdict_id(502), verdict_id(500), verdict_id(503)
    return [a.format(vid=vid, other=other, unindexed=unindexed) for a in ATTACKS]


def test_paths_outside_the_index_are_404_through_a_real_server(logs: Path) -> None:
    with running_view(logs) as (url, _):
        parts = urlsplit(url)
        for path in _attack_paths():
            conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
            conn.request("GET", path)  # sent as written: no client-side tidying
            answer = conn.getresponse()
            body = answer.read().decode()
            conn.close()
            assert answer.status == 404, (path, answer.status)
            assert "root:" not in body
            assert answer.getheader("content-security-policy", "").startswith("default-src 'none'")


def test_paths_outside_the_index_are_404_in_process(view: TestClient) -> None:
    for path in _attack_paths():
        assert view.get(path).status_code == 404, path
    listing = view.get(f"/verdicts/{verdict_id(502)}").text
    assert "leak.txt" not in listing.split('id="files"')[1]


def test_nothing_writes(view: TestClient, logs: Path) -> None:
    before = tree_state(logs)
    for path in ("/", "/?decision=accept", "/tickets", f"/verdicts/{verdict_id(500)}"):
        assert view.get(path).status_code == 200
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        answer = view.request(method, f"/verdicts/{verdict_id(500)}")
        assert answer.status_code == 405
        assert answer.headers["allow"] == "GET, HEAD"
    assert tree_state(logs) == before


# -- tickets --------------------------------------------------------------------------


def test_tickets_page_lists_status_and_expiry(view: TestClient, logs: Path) -> None:
    page = view.get("/tickets").text
    states = re.findall(r'<tr id="t-([^"]+)" class="ticket-(\w+)">', page)
    assert states == [
        (verdict_id(3), "proposed"),
        (verdict_id(7), "approved"),
        (verdict_id(11), "expired"),
    ]
    approved = page.split(f'id="t-{verdict_id(7)}"')[1].split("</tr>")[0]
    assert "known_flake" in approved and "reviewer" in approved
    assert f"{logs / 'tickets' / 'broken.json'}" in page


# -- access ---------------------------------------------------------------------------


def test_loopback_view_answers_only_to_loopback_host_names(logs: Path) -> None:
    app = client(logs)
    for host in ("127.0.0.1:8766", "localhost:8766", "[::1]:8766", "127.0.0.1"):
        assert app.get("/tickets", headers={"host": host}).status_code == 200, host
    for host in ("evil.example", "evil.example:8766", "127.0.0.1.evil.example", ""):
        answer = app.get("/tickets", headers={"host": host})
        assert answer.status_code == 421, host
        assert answer.headers["content-security-policy"].startswith("default-src 'none'")


def test_token_as_bearer_or_once_in_the_query(logs: Path) -> None:
    app = client(logs, token=TOKEN, loopback_only=False)
    refused = app.get("/tickets")
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer")
    assert app.get("/tickets", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert app.get("/tickets", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert app.get("/tickets", headers={"cookie": f"patchwarden_view={TOKEN}"}).status_code == 401
    assert app.get(f"/?token=wrong{TOKEN}").status_code == 401
    once = app.get(f"/?decision=reject&token={TOKEN}", follow_redirects=False)
    assert once.status_code == 303
    assert once.headers["location"] == "/?decision=reject"
    cookie = once.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and TOKEN not in cookie
    after = app.get("/?decision=reject")  # the client keeps the cookie
    assert after.status_code == 200
    assert 'reject <span class="n">31</span>' in after.text
    assert client(logs, token=TOKEN, loopback_only=False).get("/").status_code == 401


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), prog_name="patchwarden", env=env)
    return result.exit_code, result.stdout, result.stderr


def test_view_cli_refuses_an_open_address_without_a_token(logs: Path, tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.write_text("abc\n")
    cases = [
        (["--host", "0.0.0.0"], "--host: 0.0.0.0 is not a loopback address: give a token"),
        (["--host", "::"], "--host: :: is not a loopback address: give a token"),
        (["--token-file", str(short)], f"{short}: the token must be at least 16"),
        (["--token-file", str(tmp_path / "none")], f"{tmp_path / 'none'}: cannot read the token"),
    ]
    for args, message in cases:
        code, _, err = invoke(
            "view", "--log-dir", str(logs), "--port", "0", *args, env={TOKEN_ENV: ""}
        )
        assert code == 2, (args, err)
        assert err.count("\n") == 1
        assert err.startswith(f"patchwarden: error: {message}")
    code, _, err = invoke("view", "--log-dir", str(tmp_path / "nowhere"))
    assert code == 2
    assert err == f"patchwarden: error: {tmp_path / 'nowhere'}: no such log directory\n"


def test_a_token_is_required_on_loopback_too_when_given(logs: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with running_view(logs, "--token-file", str(token_file)) as (url, lines):
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        conn.request("GET", "/")
        assert conn.getresponse().status == 401
        conn.close()
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        conn.request("GET", "/", headers={"Authorization": f"Bearer {TOKEN}"})
        answer = conn.getresponse()
        assert answer.status == 200
        assert "Verdicts" in answer.read().decode()
        conn.close()
    assert "(token required)" in lines[0]
    assert TOKEN not in "".join(lines)


# -- the static export ----------------------------------------------------------------


def test_export_writes_the_same_pages_with_relative_links(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    before = tree_state(logs)
    code, stdout, stderr = invoke("verdicts", "export", "--log-dir", str(logs), "--html", str(out))
    assert code == 0, stderr
    assert stdout == f"exported 123 verdicts (131 pages) to {out / 'index.html'}\n"
    assert tree_state(logs) == before
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == 131
    broken = []
    for page in pages:
        for href in re.findall(r'(?:href)="([^"]+)"', page.read_text()):
            if href.startswith("#"):
                continue
            assert not href.startswith(("/", "http:", "https:")), (page, href)
            target = href.split("#")[0]
            if not (page.parent / unquote(target)).resolve().is_file():
                broken.append((str(page.relative_to(out)), href))
    assert broken == []
    vid = verdict_id(500)
    copied = out / "verdicts" / vid / "files" / "runs" / "patch-seed29.stdout.txt"
    assert copied.read_text() == "patch seed 29: 3 passed\n"
    assert not (out / "verdicts" / verdict_id(502) / "files" / "runs" / "leak.txt").exists()
    assert not (out / "verdicts" / verdict_id(503)).exists()
    live = client(logs).get(f"/verdicts/{vid}").text
    static = (out / "verdicts" / vid / "index.html").read_text()
    grid = re.compile(r'<table class="grid">.*?</table>', re.S)
    assert grid.findall(live) == grid.findall(static)


def test_export_refuses_to_write_into_the_evidence_or_over_other_files(
    logs: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    cases = [
        (logs / "site", f"the export must be apart from the log directory {logs.resolve()}"),
        (logs.parent, "the export must be apart from the log directory"),
        (other, "not empty and not an earlier export"),
        (other / "keep.txt", "keep.txt' is a file"),
    ]
    for out, message in cases:
        code, _, err = invoke("verdicts", "export", "--log-dir", str(logs), "--html", str(out))
        assert code == 2, out
        assert message in err
        assert err.count("\n") == 1
    assert (other / "keep.txt").read_text() == "mine"
    assert not (logs / "site").exists()
    # An earlier export is replaced whole.
    small, out = tmp_path / "small", tmp_path / "out"
    write_many(small, 1)
    export_site(small, out)
    (out / "stale.html").write_text("from an older export")
    write_verdict(small, 1)
    assert export_site(small, out).verdicts == 2
    assert not (out / "stale.html").exists()
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [".patchwarden-export"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_held_out_rows_from_files_of_their_own_are_marked(tmp_path: Path) -> None:
    vid = write_verdict(tmp_path, 1, props=("prop.a",), seeds=(11,))
    bundle = tmp_path / "verdicts" / vid
    witness = "prop.h|KeyError|held/test_h.py:3"
    rows = {
        "patch.held-out.jsonl": {
            "prop": "prop.h",
            "seed": 11,
            "status": "fail",
            "witness": witness,
        },
        "parent.held_out.jsonl": {"prop": "prop.h", "seed": 11, "status": "pass"},
    }
    for name, row in rows.items():
        (bundle / name).write_text(json.dumps(row) + "\n")
    page = client(tmp_path).get(f"/verdicts/{vid}").text
    held = re.findall(r'<tr class="held-out">\s*<th class="prop">([^<]+?) <span', page)
    assert held == ["prop.h"]
    assert 'class="cell c-fail first" data-side="patch" data-seed="11" data-prop="prop.h"' in page
    assert 'class="cell c-pass first" data-side="parent" data-seed="11" data-prop="prop.h"' in page
    assert "KeyError · held/test_h.py:3" in page
