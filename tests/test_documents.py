"""Every YAML and JSON input names the file and the line of its error (patchwarden._documents).

One table: each kind of document we read, a broken copy, and the exact ``where`` and message
the one-line error must carry.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from patchwarden import ConfigError, InputError, PatchwardenError
from patchwarden._documents import line_of, parse_document
from patchwarden.scorer import ContractError, parse_contract, parse_rows
from patchwarden.scorer._fixtures import parse_manifest
from patchwarden.scorer.layers._freeze import load_record
from patchwarden.scorer.layers._quarantine import parse_quarantine_list
from patchwarden.scorer.layers._tickets import read_ticket
from patchwarden.server.config import parse_config

SHA = "a" * 64


def _ticket(tmp: Path, text: str) -> Any:
    (tmp / "tickets").mkdir(exist_ok=True)
    (tmp / "tickets" / "t1.json").write_text(text)
    return read_ticket(tmp, "t1")


def _record(tmp: Path, text: str) -> Any:
    (tmp / "record.json").write_text(text)
    return load_record(tmp / "record.json")


CONTRACT_YAML = """\
contract_version: 1
seeds: [11, 29]
properties:
  - id: prop.a
    test: "tests/test_a.py::test_a"
  - id: prop.b
    test: "/abs/test_b.py::test_b"
"""

CONTRACT_JSON = """\
{
  "seeds": [11],
  "properties": [
    {"id": "prop.a", "test": "tests/test_a.py::test_a"},
    {"id": "prop.b",
     "tset": "tests/test_b.py::test_b"}
  ]
}
"""

CONFIG = """\
sandbox:
  backend: bubblewrap
  limits:
    cpu_s: -1
"""

MANIFEST = f"""\
{{
  "fixtures": [
    {{"fixture": "a.json", "sha256": "{SHA}", "frozen_at": "x"}},
    {{"fixture": "b.json", "sha256": "nothex", "frozen_at": "x"}}
  ]
}}
"""

QUARANTINE = """\
{
  "base": "abc", "runs": 3,
  "tests": [
    {"test_id": "t::a", "failures": "many"}
  ]
}
"""

TICKET = """\
{
  "verdict_id": "t1",
  "status": "pending",
  "surprise": 1
}
"""

CASES: list[tuple[str, Callable[[Path, str], Any], str, type[PatchwardenError], str, str]] = [
    (
        "contract-yaml",
        lambda tmp, text: parse_contract(text, "c.yaml"),
        CONTRACT_YAML,
        ContractError,
        "c.yaml:7",
        "properties.1.test:",
    ),
    (
        "contract-json",
        lambda tmp, text: parse_contract(text, "c.json"),
        CONTRACT_JSON,
        ContractError,
        "c.json:5",
        "properties.1.test: required key missing",
    ),
    (
        "contract-duplicate-key",
        lambda tmp, text: parse_contract(text, "c.yaml"),
        "seeds: [1]\nproperties: []\nseeds: [2]\n",
        ContractError,
        "c.yaml:3",
        "duplicate key 'seeds'",
    ),
    (
        "config",
        lambda tmp, text: parse_config(text, "op.yaml"),
        CONFIG,
        ConfigError,
        "op.yaml:4",
        "sandbox.limits.cpu_s:",
    ),
    (
        "config-bad-yaml",
        lambda tmp, text: parse_config(text, "op.yaml"),
        "sandbox:\n  backend: [bubblewrap\nscorer: {}\n",
        ConfigError,
        "op.yaml:3",
        "not valid YAML",
    ),
    (
        "manifest",
        lambda tmp, text: parse_manifest(text, "manifest.json"),
        MANIFEST,
        InputError,
        "manifest.json:4",
        "fixture manifest: fixtures.1.sha256:",
    ),
    (
        "manifest-bad-json",
        lambda tmp, text: parse_manifest(text, "manifest.json"),
        '{\n  "fixtures": [\n    {"fixture": "a.json",}\n  ]\n}\n',
        InputError,
        "manifest.json:3",
        "not valid JSON",
    ),
    (
        "quarantine-list",
        lambda tmp, text: parse_quarantine_list(text, "q.json"),
        QUARANTINE,
        InputError,
        "q.json:4",
        "quarantine list: tests.0.",
    ),
    (
        "rows",
        lambda tmp, text: parse_rows(text.split("\n"), "rows.jsonl"),
        '{"prop": "p", "seed": 1, "status": "pass"}\n{"prop": "p", "seed": "x", "status": 1}\n',
        InputError,
        "rows.jsonl:2",
        "",
    ),
    (
        "ticket",
        lambda tmp, text: _ticket(tmp, text),
        TICKET,
        InputError,
        "tickets/t1.json:",
        "ticket: ",
    ),
    (
        "freeze-record",
        lambda tmp, text: _record(tmp, text),
        '{\n  "test_id": "t",\n  "test_id": "u"\n}\n',
        InputError,
        "record.json:3",
        "duplicate key 'test_id'",
    ),
]


@pytest.mark.parametrize(
    ("read", "text", "error", "where", "needle"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_every_document_error_names_file_and_line(
    tmp_path: Path,
    read: Callable[[Path, str], Any],
    text: str,
    error: type[PatchwardenError],
    where: str,
    needle: str,
) -> None:
    with pytest.raises(error) as info:
        read(tmp_path, text)
    assert info.value.where is not None
    assert info.value.where.endswith(where) or where in info.value.where
    assert info.value.where.rsplit(":", 1)[-1].isdigit(), info.value.where
    assert needle in info.value.message
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("loc", "line"),
    [
        (("seeds",), 2),
        (("properties", 0, "test"), 5),
        (("properties", 1), 6),
        (("properties", 1, "missing"), 6),
        (("nothing",), 1),
    ],
)
def test_line_of_walks_the_node_tree(loc: tuple[str | int, ...], line: int) -> None:
    assert line_of(CONTRACT_YAML, loc) == line


def test_json_documents_compose_for_lines() -> None:
    assert line_of(CONTRACT_JSON, ("properties", 1, "tset")) == 6
    assert parse_document(CONTRACT_JSON, "c.json")["seeds"] == [11]
