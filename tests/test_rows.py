"""Run rows: JSONL parsing (docs/design/runner.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchwarden.scorer import InputError, RunRow, dump_rows, parse_rows, read_rows

MINIMAL = '{"prop":"prop.a","seed":11,"status":"pass","witness":""}'
FULL = RunRow(
    prop="prop.order_total_non_negative",
    seed=11,
    status="fail",
    witness="prop.order_total_non_negative|AssertionError|tests/properties/test_orders.py:12",
    tree="patch",
    sha="def456" + "0" * 34,
    contract_hash="sha256:" + "1" * 64,
    spec_hash="sha256:" + "2" * 64,
    fixture_closure_hash="sha256:" + "3" * 64,
    duration_s=0.04,
)


def _error(lines: list[str], where: str = "rows.jsonl") -> InputError:
    with pytest.raises(InputError) as info:
        parse_rows(lines, where)
    return info.value


BAD_LINES = [
    ("not-json", "this is not json", "not a JSON object"),
    ("truncated", '{"prop":"prop.a","seed":11', "not a JSON object"),
    ("array", "[1, 2, 3]", "not a JSON object"),
    ("string", '"prop.a"', "not a JSON object"),
    ("number", "11", "not a JSON object"),
    ("null", "null", "not a JSON object"),
    ("no-prop", '{"seed":11,"status":"pass"}', "'prop'"),
    ("no-seed", '{"prop":"prop.a","status":"pass"}', "'seed'"),
    ("no-status", '{"prop":"prop.a","seed":11}', "'status'"),
    ("seed-string", '{"prop":"prop.a","seed":"11","status":"pass"}', "'seed'"),
    ("seed-float", '{"prop":"prop.a","seed":11.0,"status":"pass"}', "'seed'"),
    ("seed-bool", '{"prop":"prop.a","seed":true,"status":"pass"}', "'seed'"),
    ("seed-null", '{"prop":"prop.a","seed":null,"status":"pass"}', "'seed'"),
    ("prop-empty", '{"prop":"","seed":11,"status":"pass"}', "'prop'"),
    ("prop-number", '{"prop":7,"seed":11,"status":"pass"}', "'prop'"),
    ("status-null", '{"prop":"prop.a","seed":11,"status":null}', "'status'"),
    ("status-bool", '{"prop":"prop.a","seed":11,"status":true}', "'status'"),
    ("witness-number", '{"prop":"prop.a","seed":11,"status":"fail","witness":3}', "'witness'"),
    ("hash-number", '{"prop":"prop.a","seed":11,"status":"fail","spec_hash":3}', "'spec_hash'"),
    (
        "duration-string",
        '{"prop":"prop.a","seed":11,"status":"pass","duration_s":"1"}',
        "'duration_s'",
    ),
]


@pytest.mark.parametrize(
    ("line", "needle"), [b[1:] for b in BAD_LINES], ids=[b[0] for b in BAD_LINES]
)
@pytest.mark.parametrize("position", [1, 3])
def test_bad_line_names_file_and_line(line: str, needle: str, position: int) -> None:
    lines = [MINIMAL, "", line] if position == 3 else [line, MINIMAL]
    error = _error(lines, "runs/patch.jsonl")
    assert error.where == f"runs/patch.jsonl:{position}"
    assert needle in error.message
    text = str(error)
    assert text.startswith(f"runs/patch.jsonl:{position}: ")
    assert "\n" not in text


def test_first_bad_line_is_reported() -> None:
    error = _error([MINIMAL, "nope", "[1]"], "x.jsonl")
    assert error.where == "x.jsonl:2"


@pytest.mark.parametrize("blank", ["", "   ", "\t", " \t "])
def test_blank_lines_are_skipped(blank: str) -> None:
    rows = parse_rows([blank, MINIMAL, blank, blank], "x.jsonl")
    assert rows == [RunRow(prop="prop.a", seed=11, status="pass", witness="")]


def test_no_lines_is_no_rows() -> None:
    assert parse_rows([], "x.jsonl") == []


def test_minimal_row_defaults() -> None:
    (row,) = parse_rows(['{"prop":"prop.a","seed":11,"status":"fail"}'], "x")
    assert row == RunRow(prop="prop.a", seed=11, status="fail")
    assert row.witness == ""
    assert row.contract_hash is None
    assert row.spec_hash is None
    assert row.fixture_closure_hash is None


def test_extra_keys_are_ignored() -> None:
    line = json.dumps(
        {
            "prop": "prop.a",
            "seed": 11,
            "status": "pass",
            "witness": "",
            "host": "ci-7",
            "nested": {"x": [1, 2]},
            "attempt": 2,
        }
    )
    (row,) = parse_rows([line], "x")
    assert row == RunRow(prop="prop.a", seed=11, status="pass")
    assert "host" not in row.model_dump()


def test_odd_status_is_kept_for_the_gate() -> None:
    lines = [
        json.dumps({"prop": "p", "seed": 1, "status": s}) for s in ("PASS", "error", "skipped", "")
    ]
    assert [r.status for r in parse_rows(lines, "x")] == ["PASS", "error", "skipped", ""]


def test_negative_and_large_seeds() -> None:
    lines = [json.dumps({"prop": "p", "seed": s, "status": "pass"}) for s in (-1, 0, 2**63)]
    assert [r.seed for r in parse_rows(lines, "x")] == [-1, 0, 2**63]


def test_spec_example_row_parses() -> None:
    line = (
        '{"prop":"prop.order_total_non_negative","seed":11,"status":"fail",'
        '"witness":"prop.order_total_non_negative|AssertionError|tests/properties/test_orders.py:12",'
        '"tree":"patch","sha":"def456","contract_hash":"sha256:x",'
        '"spec_hash":"sha256:y","fixture_closure_hash":"sha256:z","duration_s":0.04}'
    )
    (row,) = parse_rows([line], "x")
    assert row.tree == "patch"
    assert row.sha == "def456"
    assert row.duration_s == 0.04
    assert row.fixture_closure_hash == "sha256:z"


# ----------------------------------------------------------------- files


def test_read_rows_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.jsonl"
    with pytest.raises(InputError) as info:
        read_rows(path)
    assert info.value.where == str(path)
    assert "\n" not in str(info.value)


def test_read_rows_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bin.jsonl"
    path.write_bytes(b'{"prop":"p","seed":1,"status":"pass","witness":"\xff\xfe"}\n')
    with pytest.raises(InputError) as info:
        read_rows(path)
    assert info.value.where == str(path)


def test_read_rows_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        read_rows(tmp_path)
    assert info.value.where == str(tmp_path)


def test_read_rows_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert read_rows(path) == []


def test_read_rows_crlf(tmp_path: Path) -> None:
    path = tmp_path / "crlf.jsonl"
    path.write_bytes((MINIMAL + "\r\n" + MINIMAL.replace("11", "29") + "\r\n").encode())
    assert [r.seed for r in read_rows(path)] == [11, 29]


def test_read_rows_error_line_counts_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(f"{MINIMAL}\n\n\n{{bad\n")
    with pytest.raises(InputError) as info:
        read_rows(path)
    assert info.value.where == f"{path}:4"


ROUND_TRIP = [
    ("full", [FULL]),
    ("minimal", [RunRow(prop="p", seed=0, status="pass")]),
    ("mixed", [FULL, RunRow(prop="q", seed=-3, status="error", witness="boom")]),
    (
        "unicode",
        [RunRow(prop="prop.ü", seed=1, status="fail", witness='Ünïcode ✓ "quoted" \\ \t tab')],
    ),
    ("newline-in-witness", [RunRow(prop="p", seed=1, status="fail", witness="line1\nline2\r\n")]),
    (
        "unicode-line-separators",
        [
            RunRow(prop="p", seed=1, status="fail", witness="a\u2028b\u2029c\x85d"),
            RunRow(prop="p", seed=2, status="pass"),
        ],
    ),
    ("empty", []),
]


@pytest.mark.parametrize("rows", [r[1] for r in ROUND_TRIP], ids=[r[0] for r in ROUND_TRIP])
def test_dump_read_round_trip(rows: list[RunRow], tmp_path: Path) -> None:
    text = dump_rows(rows)
    assert text.count("\n") == len(rows)
    path = tmp_path / "rows.jsonl"
    path.write_text(text, encoding="utf-8")
    assert read_rows(path) == rows
    assert parse_rows(text.split("\n"), "x") == rows


def test_dump_rows_one_object_per_line_without_nulls() -> None:
    text = dump_rows([RunRow(prop="p", seed=1, status="pass")])
    assert json.loads(text) == {"prop": "p", "seed": 1, "status": "pass", "witness": ""}
