"""`patchwarden decide`: the gate alone on saved rows (docs/design/differential-gate.md).

Runs the real CLI in-process with click's CliRunner, and a few cases as a
real subprocess of the installed console script to prove the exit codes.
Exit codes: 0 accept, 1 reject, 3 propose_freeze, 4 skipped, 2 input error.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from patchwarden.scorer import parse_contract
from patchwarden.server.cli import cli

PROP = "prop.order_total_non_negative"

REGRESSION_PARENT = (
    '{"prop":"prop.order_total_non_negative","seed":11,"status":"pass","witness":""}'
)
REGRESSION_PATCH = (
    '{"prop":"prop.order_total_non_negative","seed":11,"status":"fail",'
    '"witness":"AssertionError:total"}'
)


def _row(seed: int, status: str, witness: str = "", **extra: Any) -> str:
    return json.dumps({"prop": PROP, "seed": seed, "status": status, "witness": witness, **extra})


SHARED_PARENT = [_row(11, "fail", "AssertionError:total"), _row(29, "pass")]
SHARED_PATCH = [_row(11, "fail", "AssertionError:total"), _row(29, "fail", "AssertionError:total")]


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


@dataclass
class Files:
    parent: Path
    patch: Path
    contract: Path


def write_case(
    tmp_path: Path,
    parent: list[str] | str,
    patch: list[str] | str,
    contract: str = '{"seeds": [11]}',
    contract_name: str = "contract.json",
) -> Files:
    def text(lines: list[str] | str) -> str:
        return lines if isinstance(lines, str) else "".join(line + "\n" for line in lines)

    files = Files(tmp_path / "parent.jsonl", tmp_path / "patch.jsonl", tmp_path / contract_name)
    files.parent.write_text(text(parent), encoding="utf-8")
    files.patch.write_text(text(patch), encoding="utf-8")
    files.contract.write_text(contract, encoding="utf-8")
    return files


def args_for(files: Files, *extra: str) -> list[str]:
    return [
        "decide",
        str(files.parent),
        str(files.patch),
        "--contract",
        str(files.contract),
        *extra,
    ]


def run_inproc(args: list[str]) -> Outcome:
    result = CliRunner().invoke(cli, args, prog_name="patchwarden")
    # an exception other than SystemExit means a traceback would have been printed
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return Outcome(result.exit_code, result.stdout, result.stderr)


def _console_script() -> str:
    candidate = Path(sys.executable).parent / "patchwarden"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("patchwarden")
    assert found, "the patchwarden console script is not installed (pip install -e .)"
    return found


def run_subprocess(args: list[str]) -> Outcome:
    proc = subprocess.run(
        [_console_script(), *args], capture_output=True, text=True, timeout=60, check=False
    )
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def assert_one_line_error(out: Outcome, prefix: str) -> str:
    """Exit 2, stdout empty, stderr exactly one line starting with prefix."""
    assert out.code == 2, out
    assert "Traceback" not in out.stderr
    assert out.stdout == ""
    assert out.stderr.endswith("\n")
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(prefix), (lines[0], prefix)
    return lines[0]


def contract_hash(text: str, name: str = "contract.json") -> str:
    return parse_contract(text, name).contract_hash


# ------------------------------------------------------------------ worked examples


def test_worked_example_regression_json(tmp_path: Path) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [REGRESSION_PATCH])
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 1
    assert out.stderr == ""
    assert json.loads(out.stdout) == {
        "decision": "reject",
        "contract_hash": contract_hash('{"seeds": [11]}'),
        "results": [{"prop": PROP, "decision": "reject", "reason": "regression"}],
        "counts": {
            "parent": {"lines": 1, "pass": 1, "fail": 0, "ignored": 0},
            "patch": {"lines": 1, "pass": 0, "fail": 1, "ignored": 0},
        },
    }


def test_worked_example_shared_variant_json(tmp_path: Path) -> None:
    contract = '{"seeds": [11, 29]}'
    files = write_case(tmp_path, SHARED_PARENT, SHARED_PATCH, contract)
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 3
    assert json.loads(out.stdout) == {
        "decision": "propose_freeze",
        "contract_hash": contract_hash(contract),
        "results": [{"prop": PROP, "decision": "propose_freeze", "reason": "shared_variant_fail"}],
        "counts": {
            "parent": {"lines": 2, "pass": 1, "fail": 1, "ignored": 0},
            "patch": {"lines": 2, "pass": 0, "fail": 2, "ignored": 0},
        },
    }


def test_worked_example_regression_review_note(tmp_path: Path) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [REGRESSION_PATCH])
    out = run_inproc(args_for(files))
    assert out.code == 1
    assert out.stdout.splitlines() == [
        f"contract: {contract_hash(files.contract.read_text())}",
        "decision: reject",
        f"properties: {PROP}=regression",
        "rows: parent 1 lines (1 pass, 0 fail); patch 1 lines (0 pass, 1 fail)",
    ]


def test_worked_example_shared_variant_review_note(tmp_path: Path) -> None:
    files = write_case(tmp_path, SHARED_PARENT, SHARED_PATCH, '{"seeds": [11, 29]}')
    out = run_inproc(args_for(files))
    assert out.code == 3
    lines = out.stdout.splitlines()
    assert len(lines) == 4
    assert lines[1] == "decision: propose_freeze"
    assert lines[2] == f"properties: {PROP}=shared_variant_fail"


@pytest.mark.parametrize(
    ("parent", "patch", "contract", "code", "decision"),
    [
        ([REGRESSION_PARENT], [REGRESSION_PATCH], '{"seeds": [11]}', 1, "reject"),
        (SHARED_PARENT, SHARED_PATCH, '{"seeds": [11, 29]}', 3, "propose_freeze"),
        ([REGRESSION_PARENT], [REGRESSION_PARENT], '{"seeds": [11]}', 0, "accept"),
        (
            [_row(11, "pass", spec_hash="sha256:aa")],
            [_row(11, "pass", spec_hash="sha256:bb")],
            '{"seeds": [11]}',
            4,
            "skipped",
        ),
    ],
    ids=["regression", "shared-variant", "accept", "skipped"],
)
def test_exit_codes_in_a_real_subprocess(
    tmp_path: Path, parent: list[str], patch: list[str], contract: str, code: int, decision: str
) -> None:
    files = write_case(tmp_path, parent, patch, contract)
    out = run_subprocess(args_for(files, "--json"))
    assert out.code == code, out
    assert "Traceback" not in out.stderr
    assert json.loads(out.stdout)["decision"] == decision


# ------------------------------------------------------------------ more decisions


def test_accept_both_pass_exit_0(tmp_path: Path) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [REGRESSION_PARENT])
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 0
    assert json.loads(out.stdout)["results"] == [
        {"prop": PROP, "decision": "accept", "reason": "both_pass"}
    ]


def test_parent_fail_cleared_exit_0(tmp_path: Path) -> None:
    files = write_case(tmp_path, [REGRESSION_PATCH], [REGRESSION_PARENT])
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 0
    assert json.loads(out.stdout)["results"] == [
        {"prop": PROP, "decision": "accept", "reason": "parent_fail_cleared"}
    ]


def test_skipped_exit_4_with_reason(tmp_path: Path) -> None:
    files = write_case(
        tmp_path,
        [_row(11, "pass", spec_hash="sha256:aa")],
        [_row(11, "pass", spec_hash="sha256:bb")],
    )
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 4
    data = json.loads(out.stdout)
    assert data["decision"] == "skipped"
    assert data["skip_reason"] == "spec_hash_differs"
    assert data["results"] == []


def test_both_rows_files_empty_reject_missing_seed(tmp_path: Path) -> None:
    files = write_case(tmp_path, "", "")
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 1
    assert out.stderr == ""
    data = json.loads(out.stdout)
    assert data["decision"] == "reject"
    assert data["results"]
    assert {r["reason"] for r in data["results"]} == {"missing_seed"}
    assert data["counts"]["parent"]["lines"] == 0
    assert data["counts"]["patch"]["lines"] == 0


def test_empty_patch_file_reject_missing_seed(tmp_path: Path) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], "")
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 1
    data = json.loads(out.stdout)
    assert data["results"] == [{"prop": PROP, "decision": "reject", "reason": "missing_seed"}]
    assert data["counts"]["patch"] == {"lines": 0, "pass": 0, "fail": 0, "ignored": 0}


def test_blank_lines_only_is_empty(tmp_path: Path) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], "\n\n  \n")
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 1
    assert json.loads(out.stdout)["results"][0]["reason"] == "missing_seed"


def test_foreign_contract_hash_rows_count_as_missing(tmp_path: Path) -> None:
    files = write_case(
        tmp_path, [REGRESSION_PARENT], [_row(11, "pass", contract_hash="sha256:" + "0" * 64)]
    )
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 1
    data = json.loads(out.stdout)
    assert data["results"] == [{"prop": PROP, "decision": "reject", "reason": "missing_seed"}]
    assert data["counts"]["patch"] == {"lines": 1, "pass": 0, "fail": 0, "ignored": 1}


@pytest.mark.parametrize("status", ["PASS", "error", "skipped", ""])
def test_invalid_status_exit_1(tmp_path: Path, status: str) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [_row(11, status)])
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 1
    assert json.loads(out.stdout)["results"] == [
        {"prop": PROP, "decision": "reject", "reason": "invalid_status"}
    ]


def test_yaml_contract_with_properties(tmp_path: Path) -> None:
    contract = (
        "seeds: [11]\n"
        "properties:\n"
        f"  - id: {PROP}\n"
        "    test: tests/properties/test_orders.py::test_total_non_negative\n"
    )
    files = write_case(
        tmp_path, [REGRESSION_PARENT], [REGRESSION_PATCH], contract, "differential-contract.yaml"
    )
    out = run_inproc(args_for(files, "--json"))
    assert out.code == 1
    data = json.loads(out.stdout)
    assert data["contract_hash"] == contract_hash(contract, "c.yaml")
    assert data["results"] == [{"prop": PROP, "decision": "reject", "reason": "regression"}]


# ------------------------------------------------------------------ malformed rows: exit 2


MALFORMED = [
    ("not-json", "this is not json"),
    ("truncated", '{"prop":"p","seed":11,'),
    ("array", '["prop", 11, "pass"]'),
    ("scalar", "42"),
    ("no-prop", '{"seed":11,"status":"pass","witness":""}'),
    ("no-seed", '{"prop":"p","status":"pass","witness":""}'),
    ("no-status", '{"prop":"p","seed":11,"witness":""}'),
    ("seed-string", '{"prop":"p","seed":"11","status":"pass","witness":""}'),
    ("seed-float", '{"prop":"p","seed":11.5,"status":"pass"}'),
    ("status-number", '{"prop":"p","seed":11,"status":1}'),
    ("seed-huge-int", '{"prop":"p","seed":' + "1" * 5000 + ',"status":"pass"}'),
    ("deeply-nested", "[" * 200_000 + "]" * 200_000),
]


@pytest.mark.parametrize("line", [m[1] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
@pytest.mark.parametrize("which", ["parent", "patch"])
def test_malformed_line_exit_2_one_line(tmp_path: Path, line: str, which: str) -> None:
    good = [REGRESSION_PARENT]
    bad = [REGRESSION_PARENT, "", line, REGRESSION_PARENT]  # bad row on physical line 3
    files = write_case(
        tmp_path, bad if which == "parent" else good, bad if which == "patch" else good
    )
    path = files.parent if which == "parent" else files.patch
    assert_one_line_error(run_inproc(args_for(files)), f"patchwarden: error: {path}:3: ")


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('{"seed":11,"status":"pass"}', "prop"),
        ('{"prop":"p","status":"pass"}', "seed"),
        ('{"prop":"p","seed":11}', "status"),
        ('{"prop":"p","seed":"11","status":"pass"}', "seed"),
    ],
)
def test_malformed_line_message_names_the_field(tmp_path: Path, line: str, needle: str) -> None:
    files = write_case(tmp_path, [line], [REGRESSION_PARENT])
    msg = assert_one_line_error(
        run_inproc(args_for(files)), f"patchwarden: error: {files.parent}:1: "
    )
    assert needle in msg.split(f"{files.parent}:1: ", 1)[1]


def test_malformed_line_in_json_mode_prints_no_json(tmp_path: Path) -> None:
    files = write_case(tmp_path, ["[1]"], [REGRESSION_PARENT])
    assert_one_line_error(
        run_inproc(args_for(files, "--json")), f"patchwarden: error: {files.parent}:1: "
    )


@pytest.mark.parametrize(
    "line",
    ["not json at all", '{"prop":"p","seed":' + "9" * 5000 + ',"status":"pass"}'],
    ids=["not-json", "seed-huge-int"],
)
def test_malformed_line_real_subprocess(tmp_path: Path, line: str) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [REGRESSION_PARENT, line])
    out = run_subprocess(args_for(files))
    assert_one_line_error(out, f"patchwarden: error: {files.patch}:2: ")


def test_rows_not_utf8_exit_2(tmp_path: Path) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [REGRESSION_PARENT])
    files.patch.write_bytes(b'{"prop":"p","seed":11,"status":"pass","witness":"\xff"}\n')
    assert_one_line_error(run_inproc(args_for(files)), f"patchwarden: error: {files.patch}")


@pytest.mark.parametrize("which", ["parent", "patch"])
def test_missing_rows_file_exit_2(tmp_path: Path, which: str) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [REGRESSION_PARENT])
    path = files.parent if which == "parent" else files.patch
    path.unlink()
    assert_one_line_error(run_inproc(args_for(files)), f"patchwarden: error: {path}: ")


def test_missing_rows_file_real_subprocess(tmp_path: Path) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [REGRESSION_PARENT])
    files.patch.unlink()
    assert_one_line_error(run_subprocess(args_for(files)), f"patchwarden: error: {files.patch}: ")


# ------------------------------------------------------------------ bad contracts: exit 2


BAD_CONTRACTS = [
    # (id, file name, text, expected line or None when the line is unknown, needle)
    ("yaml-unknown-key", "c.yaml", "seeds: [11]\nseedz_extra: 1\n", 2, "seedz_extra"),
    ("json-unknown-key", "c.json", '{\n  "seeds": [11],\n  "colour": "red"\n}\n', 3, "colour"),
    ("yaml-seeds-string", "c.yaml", 'contract_version: 1\nseeds: "11"\n', 2, "seeds"),
    ("json-seeds-string", "c.json", '{"seeds": "11"}', 1, "seeds"),
    ("yaml-duplicate-seeds", "c.yaml", "contract_version: 1\nseeds: [11, 29, 11]\n", 2, "seeds"),
    ("json-duplicate-seeds", "c.json", '{\n"seeds": [11, 11]\n}', 2, "seeds"),
    ("yaml-missing-seeds", "c.yaml", "contract_version: 1\nspec_paths: []\n", None, "seeds"),
    ("json-missing-seeds", "c.json", "{}", None, "seeds"),
    ("yaml-empty-seeds", "c.yaml", "seeds: []\n", 1, "seeds"),
    ("yaml-invalid", "c.yaml", "seeds: [11, 29\nspec_paths: []\n", 2, "YAML"),
    ("yaml-bad-indent", "c.yaml", "seeds:\n  - 11\n - 29\n", 3, "YAML"),
    ("json-invalid", "c.json", '{"seeds": [11,]}', 1, "JSON"),
    ("yaml-not-mapping", "c.yaml", "- 11\n- 29\n", None, "mapping"),
    ("yaml-empty-file", "c.yaml", "", None, "mapping"),
    ("json-huge-seed", "c.json", '{"seeds": [' + "1" * 5000 + "]}", None, "digits"),
    ("yaml-huge-seed", "c.yaml", "seeds: [" + "1" * 5000 + "]\n", None, "digits"),
]


@pytest.mark.parametrize(
    ("name", "text", "line", "needle"),
    [b[1:] for b in BAD_CONTRACTS],
    ids=[b[0] for b in BAD_CONTRACTS],
)
def test_bad_contract_exit_2_one_line(
    tmp_path: Path, name: str, text: str, line: int | None, needle: str
) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [REGRESSION_PATCH], text, name)
    where = f"{files.contract}:{line}: " if line else f"{files.contract}"
    msg = assert_one_line_error(run_inproc(args_for(files)), f"patchwarden: error: {where}")
    if line is None:
        assert re.match(rf"patchwarden: error: {re.escape(str(files.contract))}(:\d+)?: ", msg), msg
    assert needle in msg


def test_missing_contract_file_exit_2(tmp_path: Path) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [REGRESSION_PATCH])
    files.contract.unlink()
    assert_one_line_error(run_inproc(args_for(files)), f"patchwarden: error: {files.contract}: ")


def test_bad_contract_real_subprocess(tmp_path: Path) -> None:
    files = write_case(
        tmp_path, [REGRESSION_PARENT], [REGRESSION_PATCH], "seeds: [11]\nbogus: 1\n", "c.yaml"
    )
    msg = assert_one_line_error(
        run_subprocess(args_for(files)), f"patchwarden: error: {files.contract}:2: "
    )
    assert "bogus" in msg


def test_missing_contract_option_is_usage_error(tmp_path: Path) -> None:
    files = write_case(tmp_path, [REGRESSION_PARENT], [REGRESSION_PATCH])
    out = run_inproc(["decide", str(files.parent), str(files.patch)])
    assert out.code == 2
    assert "Traceback" not in out.stderr
    assert "--contract" in out.stderr
