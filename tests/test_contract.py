"""The contract: loading, validation, hashes and contract paths (docs/design/contract.md)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from patchwarden.scorer import (
    DEFAULT_CONTRACT_PATH,
    Contract,
    ContractError,
    compute_fixture_closure_hash,
    compute_spec_hash,
    load_contract,
    parse_contract,
)

SPEC_EXAMPLE = """\
contract_version: 1
parent_sha: "abc123"          # optional in a template; set in a resolved contract
patch_sha: "def456"           # likewise
spec_hash: "spec-9f2c"        # optional pin; if given, both trees must compute it
fixture_closure_hash: "fix-44ab"   # likewise
seeds: [11, 29, 47]           # the schedule: order and count are part of the contract
spec_paths: [tests/properties]     # files whose bytes define spec_hash
fixture_manifest: tests/fixtures/manifest.json   # defines fixture_closure_hash
properties:
  - id: prop.order_total_non_negative
    oracle: "total >= 0"
    test: "tests/properties/test_orders.py::test_total_non_negative"
"""

WITHOUT_TEST = "".join(
    line for line in SPEC_EXAMPLE.splitlines(keepends=True) if not line.lstrip().startswith("test:")
)


def test_default_contract_path() -> None:
    assert DEFAULT_CONTRACT_PATH == "contract/differential-contract.yaml"


def test_spec_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "differential-contract.yaml"
    path.write_text(SPEC_EXAMPLE)
    contract = load_contract(path)
    assert contract.contract_version == 1
    assert contract.parent_sha == "abc123"
    assert contract.patch_sha == "def456"
    assert contract.spec_hash == "spec-9f2c"
    assert contract.fixture_closure_hash == "fix-44ab"
    assert contract.seeds == [11, 29, 47]
    assert contract.spec_paths == ["tests/properties"]
    assert contract.fixture_manifest == "tests/fixtures/manifest.json"
    assert contract.property_ids() == ["prop.order_total_non_negative"]
    (prop,) = contract.properties
    assert prop.oracle == "total >= 0"
    assert prop.test == "tests/properties/test_orders.py::test_total_non_negative"


def test_spec_example_without_test_fails() -> None:
    assert "test:" not in WITHOUT_TEST
    with pytest.raises(ContractError) as info:
        parse_contract(WITHOUT_TEST, "c.yaml")
    assert info.value.message.startswith("properties.0.test: ")
    assert info.value.where is not None
    assert info.value.where.startswith("c.yaml")
    assert "\n" not in str(info.value)


def test_spec_example_as_json_loads() -> None:
    import yaml

    data = yaml.safe_load(SPEC_EXAMPLE)
    contract = parse_contract(json.dumps(data, indent=2), "c.json")
    assert contract == parse_contract(SPEC_EXAMPLE, "c.yaml")


def test_seeds_only_json_contract() -> None:
    contract = parse_contract('{"seeds": [11, 29]}', "c.json")
    assert contract.seeds == [11, 29]
    assert contract.properties == []
    assert contract.spec_paths == []


@pytest.mark.parametrize(
    ("text", "where", "needle"),
    [
        ("seeds: [11]\nsedes: [1]\n", "c.yaml:2", "sedes: unknown key"),
        ('seeds: "11"\n', "c.yaml:1", "seeds: "),
        ("contract_version: 1\nseeds: [11, 29, 11]\n", "c.yaml:2", "seeds: "),
        ("contract_version: 1\n", "c.yaml:1", "seeds: required key missing"),
        ("seeds: []\n", "c.yaml:1", "seeds: "),
        ("seeds: [11, 29\nspec_paths: []\n", "c.yaml:2", "not valid YAML"),
        ("seeds: [1]\nspec_paths: [/etc]\n", "c.yaml:2", "spec_paths"),
        ("seeds: [1]\nspec_paths: [../up]\n", "c.yaml:2", "spec_paths"),
        ("- 11\n- 29\n", "c.yaml", "mapping"),
        ("", "c.yaml", "mapping"),
    ],
    ids=[
        "unknown-key",
        "seeds-str",
        "dup-seeds",
        "no-seeds",
        "empty-seeds",
        "bad-yaml",
        "abs-spec-path",
        "dotdot-spec-path",
        "list",
        "empty",
    ],
)
def test_bad_contract_names_file_and_line(text: str, where: str, needle: str) -> None:
    with pytest.raises(ContractError) as info:
        parse_contract(text, "c.yaml")
    assert info.value.where == where
    assert needle in info.value.message
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "test_id",
    ["/abs/test_x.py::test_a", "../test_x.py::test_a", "tests/test_x.py", ""],
)
def test_property_test_must_be_relative_node_id(test_id: str) -> None:
    text = json.dumps({"seeds": [1], "properties": [{"id": "p", "test": test_id}]})
    with pytest.raises(ContractError):
        parse_contract(text, "c.json")


def test_duplicate_property_ids_rejected() -> None:
    props = [{"id": "p", "test": "t.py::a"}, {"id": "p", "test": "t.py::b"}]
    with pytest.raises(ContractError) as info:
        parse_contract(json.dumps({"seeds": [1], "properties": props}), "c.json")
    assert "p" in info.value.message


def test_load_contract_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ContractError) as info:
        load_contract(path)
    assert info.value.where == str(path)


# --------------------------------------------------------------- contract hash


def test_contract_hash_stable_across_key_order() -> None:
    lines = SPEC_EXAMPLE.split("properties:")[0].splitlines(keepends=True)
    props = "properties:" + SPEC_EXAMPLE.split("properties:")[1]
    reordered = "".join(reversed(lines)) + props
    a = parse_contract(SPEC_EXAMPLE, "c.yaml")
    b = parse_contract(reordered, "c.yaml")
    assert reordered != SPEC_EXAMPLE
    assert a.contract_hash == b.contract_hash
    assert a.contract_hash.startswith("sha256:")
    assert len(a.contract_hash) == len("sha256:") + 64


def test_contract_hash_same_for_yaml_and_json() -> None:
    a = parse_contract("seeds: [11, 29]\n", "c.yaml")
    b = parse_contract('{"seeds": [11, 29]}', "c.json")
    assert a.contract_hash == b.contract_hash


def test_contract_hash_stable_across_property_key_order() -> None:
    a = '{"seeds":[1],"properties":[{"id":"p","oracle":"o","test":"t.py::x"}]}'
    b = '{"properties":[{"test":"t.py::x","id":"p","oracle":"o"}],"seeds":[1]}'
    assert parse_contract(a, "c.json").contract_hash == parse_contract(b, "c.json").contract_hash


@pytest.mark.parametrize(
    "other",
    [
        '{"seeds": [29, 11]}',
        '{"seeds": [11]}',
        '{"seeds": [11, 29, 47]}',
        '{"seeds": [11, 29], "spec_paths": ["tests"]}',
        '{"seeds": [11, 29], "properties": [{"id": "p", "test": "t.py::t"}]}',
    ],
)
def test_contract_hash_changes_with_content(other: str) -> None:
    base = parse_contract('{"seeds": [11, 29]}', "c.json")
    assert parse_contract(other, "c.json").contract_hash != base.contract_hash


@pytest.mark.parametrize(
    "resolution",
    [
        {"parent_sha": "a" * 40},
        {"patch_sha": "b" * 40},
        {"spec_hash": "sha256:x"},
        {"fixture_closure_hash": "sha256:y"},
    ],
)
def test_one_contract_hash_for_every_resolution(resolution: dict[str, str]) -> None:
    """Same contract file, same hash in every verdict; the hash that covers the commits and
    the tree hashes has its own name."""
    written = parse_contract('{"seeds": [11, 29]}', "c.json")
    resolved = written.model_copy(update=resolution)
    assert resolved.contract_hash == written.contract_hash
    assert resolved.resolved_contract_hash != written.resolved_contract_hash
    again = parse_contract(json.dumps(resolved.model_dump(mode="json")), "resolved.json")
    assert again.contract_hash == written.contract_hash


# --------------------------------------------------------------- spec hash


def _spec_contract(*spec_paths: str, manifest: str | None = None) -> Contract:
    data: dict[str, object] = {"seeds": [1], "spec_paths": list(spec_paths)}
    if manifest:
        data["fixture_manifest"] = manifest
    return parse_contract(json.dumps(data), "c.json")


SPEC_FILES = {
    "tests/properties/test_orders.py": b"def test_total():\n    assert total >= 0\n",
    "tests/properties/helpers/gen.py": b"ORDERS = [1, 2, 3]\n",
    "tests/properties/data.bin": bytes(range(256)),
}


def _write_tree(root: Path, files: dict[str, bytes], order: list[str] | None = None) -> None:
    for rel in order or list(files):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[rel])


def test_spec_hash_is_sha256_prefixed(tmp_path: Path) -> None:
    _write_tree(tmp_path, SPEC_FILES)
    value = compute_spec_hash(tmp_path, _spec_contract("tests/properties"))
    assert value.startswith("sha256:")
    assert len(value) == len("sha256:") + 64


def test_spec_hash_independent_of_creation_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    names = list(SPEC_FILES)
    _write_tree(a, SPEC_FILES, names)
    _write_tree(b, SPEC_FILES, list(reversed(names)))
    # different mtimes too
    os.utime(b / names[0], (1, 1))
    contract = _spec_contract("tests/properties")
    assert compute_spec_hash(a, contract) == compute_spec_hash(b, contract)


@pytest.mark.parametrize("rel", list(SPEC_FILES))
@pytest.mark.parametrize("where", ["first", "last", "append"])
def test_spec_hash_changes_with_any_byte(tmp_path: Path, rel: str, where: str) -> None:
    _write_tree(tmp_path, SPEC_FILES)
    contract = _spec_contract("tests/properties")
    before = compute_spec_hash(tmp_path, contract)
    data = bytearray(SPEC_FILES[rel])
    if where == "append":
        data += b"\0"
    else:
        index = 0 if where == "first" else len(data) - 1
        data[index] ^= 0x01
    (tmp_path / rel).write_bytes(bytes(data))
    assert compute_spec_hash(tmp_path, contract) != before


def test_spec_hash_changes_when_file_added_removed_or_renamed(tmp_path: Path) -> None:
    _write_tree(tmp_path, SPEC_FILES)
    contract = _spec_contract("tests/properties")
    base = compute_spec_hash(tmp_path, contract)
    extra = tmp_path / "tests/properties/conftest.py"
    extra.write_bytes(b"")
    added = compute_spec_hash(tmp_path, contract)
    assert added != base
    extra.unlink()
    assert compute_spec_hash(tmp_path, contract) == base
    src = tmp_path / "tests/properties/helpers/gen.py"
    src.rename(tmp_path / "tests/properties/helpers/gen2.py")
    assert compute_spec_hash(tmp_path, contract) != base


def test_spec_hash_ignores_files_outside_spec_paths(tmp_path: Path) -> None:
    _write_tree(tmp_path, SPEC_FILES)
    contract = _spec_contract("tests/properties")
    base = compute_spec_hash(tmp_path, contract)
    (tmp_path / "src").mkdir()
    (tmp_path / "src/orders.py").write_text("x = 1\n")
    assert compute_spec_hash(tmp_path, contract) == base


def test_spec_hash_over_single_file_path(tmp_path: Path) -> None:
    _write_tree(tmp_path, SPEC_FILES)
    contract = _spec_contract("tests/properties/test_orders.py")
    base = compute_spec_hash(tmp_path, contract)
    (tmp_path / "tests/properties/test_orders.py").write_bytes(b"changed")
    assert compute_spec_hash(tmp_path, contract) != base


# --------------------------------------------------------------- fixture closure hash

FIXTURES = {
    "tests/fixtures/orders.json": b'[{"total": 3}]\n',
    "tests/fixtures/refunds.csv": b"id,total\n1,-2\n",
}


def _write_manifest(root: Path) -> str:
    _write_tree(root, FIXTURES)
    manifest = {
        "fixtures": [
            {
                "fixture": rel,
                "sha256": hashlib.sha256(data).hexdigest(),
                "frozen_at": "2025-01-01T00:00:00Z",
                "covers": ["prop.a"],
            }
            for rel, data in FIXTURES.items()
        ]
    }
    rel = "tests/fixtures/manifest.json"
    (root / rel).write_text(json.dumps(manifest))
    return rel


def test_fixture_hash_stable(tmp_path: Path) -> None:
    contract = _spec_contract(manifest=_write_manifest(tmp_path))
    a = compute_fixture_closure_hash(tmp_path, contract)
    b = compute_fixture_closure_hash(tmp_path, contract)
    assert a == b
    assert a.startswith("sha256:")


@pytest.mark.parametrize("rel", list(FIXTURES))
def test_fixture_hash_changes_when_bytes_change(tmp_path: Path, rel: str) -> None:
    contract = _spec_contract(manifest=_write_manifest(tmp_path))
    before = compute_fixture_closure_hash(tmp_path, contract)
    (tmp_path / rel).write_bytes(FIXTURES[rel] + b" ")
    assert compute_fixture_closure_hash(tmp_path, contract) != before


@pytest.mark.parametrize("rel", list(FIXTURES))
def test_fixture_hash_changes_when_fixture_missing(tmp_path: Path, rel: str) -> None:
    contract = _spec_contract(manifest=_write_manifest(tmp_path))
    before = compute_fixture_closure_hash(tmp_path, contract)
    (tmp_path / rel).unlink()
    after = compute_fixture_closure_hash(tmp_path, contract)
    assert after != before
    (tmp_path / rel).write_bytes(b"")
    assert compute_fixture_closure_hash(tmp_path, contract) not in {before, after}


def test_fixture_hash_ignores_unlisted_files(tmp_path: Path) -> None:
    contract = _spec_contract(manifest=_write_manifest(tmp_path))
    before = compute_fixture_closure_hash(tmp_path, contract)
    (tmp_path / "tests/fixtures/unlisted.txt").write_text("x")
    assert compute_fixture_closure_hash(tmp_path, contract) == before


# --------------------------------------------------------------- contract paths


def test_contract_paths_lists_every_protected_path() -> None:
    text = SPEC_EXAMPLE + "quarantine_list: .patchwarden/quarantine.json\n"
    contract = parse_contract(text, "c.yaml")
    paths = contract.contract_paths(DEFAULT_CONTRACT_PATH)
    assert set(paths) == {
        DEFAULT_CONTRACT_PATH,
        "tests/properties",
        "tests/fixtures/manifest.json",
        ".patchwarden/quarantine.json",
        ".freeze",
    }
    assert len(paths) == len(set(paths))
    assert paths[0] == DEFAULT_CONTRACT_PATH


def test_contract_paths_minimal() -> None:
    contract = parse_contract('{"seeds": [1]}', "c.json")
    # the quarantine list is a contract path even when the contract names none
    assert contract.contract_paths(None) == [".freeze", "contract/quarantine.json"]
    assert set(contract.contract_paths("contract/c.json")) == {
        "contract/c.json",
        ".freeze",
        "contract/quarantine.json",
    }


def test_contract_paths_include_the_manifest_fixtures() -> None:
    contract = parse_contract(SPEC_EXAMPLE, "c.yaml")
    paths = contract.contract_paths(DEFAULT_CONTRACT_PATH, fixtures=["tests/fixtures/a.json"])
    assert paths[-1] == "tests/fixtures/a.json"
    assert "tests/fixtures/manifest.json" in paths


def test_contract_paths_no_duplicates() -> None:
    contract = parse_contract(
        json.dumps(
            {
                "seeds": [1],
                "spec_paths": ["tests/properties", ".freeze"],
                "fixture_manifest": "tests/properties",
            }
        ),
        "c.json",
    )
    paths = contract.contract_paths("c.json")
    assert len(paths) == len(set(paths))
    assert set(paths) == {"c.json", "tests/properties", ".freeze", "contract/quarantine.json"}


def test_two_properties_cannot_share_one_test() -> None:
    text = (
        "seeds: [1]\nproperties:\n"
        "  - {id: a, test: 't.py::test_x'}\n"
        "  - {id: b, test: 't.py::test_x'}\n"
    )
    with pytest.raises(ContractError) as err:
        parse_contract(text, "c.yaml")
    assert str(err.value) == (
        "c.yaml:2: properties: property tests must be unique, repeated: t.py::test_x"
    )
