"""The contract: which properties, which seeds, which paths define the spec.

Operator-written YAML or JSON in the target repository (docs/design/contract.md).
Loading is strict: unknown keys, wrong types and duplicate seeds or ids are
errors that name the file and, where the parser knows it, the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from patchwarden._treepaths import tree_path_problem

from ._errors import ContractError
from ._fixtures import read_manifest
from ._hashing import files_under, hash_json, hash_pairs, sha256_bytes

DEFAULT_CONTRACT_PATH = "contract/differential-contract.yaml"
FREEZE_DIR = ".freeze"
DEFAULT_QUARANTINE_LIST = "contract/quarantine.json"


class Property(BaseModel):
    """One property check: an id, its oracle in words, and its pytest node id."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str = Field(min_length=1)
    oracle: str = ""
    test: str = Field(min_length=1)
    """pytest node id, relative to the repository root (``path::name``)."""

    @field_validator("test")
    @classmethod
    def _node_id_is_relative(cls, value: str) -> str:
        path = value.split("::", 1)[0]
        if tree_path_problem(path) or "::" not in value:
            raise ValueError(f"test must be a relative pytest node id 'path::name', got {value!r}")
        return value


class Contract(BaseModel):
    """A differential contract; ``parent_sha``/``patch_sha`` set once resolved."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    contract_version: int = 1
    parent_sha: str | None = None
    patch_sha: str | None = None
    spec_hash: str | None = None
    fixture_closure_hash: str | None = None
    seeds: list[int] = Field(min_length=1)
    """The schedule: order and count are part of the contract."""
    spec_paths: list[str] = []
    fixture_manifest: str | None = None
    quarantine_list: str | None = None
    """Path of the flake quarantine list, a contract path when set."""
    properties: list[Property] = []

    @field_validator("seeds")
    @classmethod
    def _unique_seeds(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must not repeat, got {seeds}")
        return seeds

    @field_validator("properties")
    @classmethod
    def _unique_ids(cls, props: list[Property]) -> list[Property]:
        for attr in ("id", "test"):
            values = [getattr(p, attr) for p in props]
            dupes = sorted({v for v in values if values.count(v) > 1})
            if dupes:
                # One test per property: the runner maps each node id to one property.
                raise ValueError(f"property {attr}s must be unique, repeated: {', '.join(dupes)}")
        return props

    @field_validator("spec_paths")
    @classmethod
    def _relative_paths(cls, paths: list[str]) -> list[str]:
        for path in paths:
            if tree_path_problem(path.rstrip("/")):
                raise ValueError(f"spec_paths must be relative to the repository, got {path!r}")
        return paths

    @property
    def contract_hash(self) -> str:
        """``sha256:`` of the canonical JSON of this contract."""
        return hash_json(self.model_dump(mode="json"))

    def property_ids(self) -> list[str]:
        return [p.id for p in self.properties]

    def quarantine_list_path(self) -> str:
        """Tree-relative path of the quarantine list (a contract path even when unset)."""
        return self.quarantine_list or DEFAULT_QUARANTINE_LIST

    def contract_paths(self, contract_file: str | None, fixtures: Sequence[str] = ()) -> list[str]:
        """Every path an agent may not change (docs/design/contract.md), tree-relative.

        ``fixtures`` are the files the manifest names (read from a tree by
        :func:`manifest_fixtures`): they are contract paths too.
        """
        paths = [*self.spec_paths, FREEZE_DIR, self.quarantine_list_path()]
        if contract_file:
            paths.insert(0, contract_file)
        if self.fixture_manifest:
            paths.append(self.fixture_manifest)
        return list(dict.fromkeys([*paths, *fixtures]))


def _parse_text(text: str, where: str) -> Any:
    if where.endswith(".json"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ContractError(
                f"not valid JSON: {exc.msg}", where=f"{where}:{exc.lineno}"
            ) from None
        except (ValueError, RecursionError) as exc:
            raise ContractError(f"not usable JSON: {exc}", where=where) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ContractError(f"not valid YAML: {problem}", where=f"{where}{line}") from None
    except (ValueError, RecursionError) as exc:
        raise ContractError(f"not usable YAML: {exc}", where=where) from None


def _key_line(text: str, key: str) -> int | None:
    """Line of the first occurrence of ``key`` as a YAML or JSON key."""
    pattern = re.compile(rf'(^|[\s{{,\-]){re.escape(key)}\s*:|"{re.escape(key)}"\s*:')
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.search(line):
            return number
    return None


def validation_message(exc: ValidationError, text: str, where: str) -> tuple[str, str]:
    """First pydantic error as (one-line message, file:line)."""
    error = exc.errors()[0]
    loc = ".".join(str(part) for part in error["loc"])
    key = next((str(p) for p in reversed(error["loc"]) if isinstance(p, str)), "")
    line = _key_line(text, key) if key else None
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    return f"{loc}: {message}", f"{where}:{line}" if line else where


def parse_contract(text: str, where: str) -> Contract:
    data = _parse_text(text, where)
    if not isinstance(data, dict):
        raise ContractError("the contract must be a mapping of keys to values", where=where)
    try:
        return Contract.model_validate(data)
    except ValidationError as exc:
        message, at = validation_message(exc, text, where)
        raise ContractError(message, where=at) from None


def load_contract(path: Path) -> Contract:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ContractError(f"cannot read contract: {exc.strerror}", where=str(path)) from None
    except UnicodeDecodeError:
        raise ContractError("contract is not UTF-8 text", where=str(path)) from None
    return parse_contract(text, str(path))


def compute_spec_hash(tree: Path, contract: Contract) -> str:
    """``sha256:`` over the sorted (path, bytes) of every file under spec_paths."""
    pairs = []
    for rel in files_under(tree, contract.spec_paths):
        path = tree / rel
        payload = path.readlink().as_posix().encode() if path.is_symlink() else path.read_bytes()
        pairs.append((rel, payload))
    return hash_pairs(pairs)


def compute_fixture_closure_hash(tree: Path, contract: Contract) -> str:
    """``sha256:`` over the sorted (path, sha256) of every manifest fixture.

    A fixture that is missing hashes as ``missing``, so its absence changes
    the hash instead of being skipped.
    """
    if not contract.fixture_manifest:
        return hash_pairs([])
    manifest = read_manifest(tree / contract.fixture_manifest)
    pairs = []
    for entry in manifest.fixtures:
        path = tree / entry.fixture
        actual = sha256_bytes(path.read_bytes()) if path.is_file() else "missing"
        pairs.append((entry.fixture, actual.encode()))
    return hash_pairs(pairs)


def manifest_fixtures(tree: Path, contract: Contract) -> list[str]:
    """The fixture paths the contract's manifest names in ``tree`` (none if no manifest)."""
    if not contract.fixture_manifest or not (tree / contract.fixture_manifest).is_file():
        return []
    return [entry.fixture for entry in read_manifest(tree / contract.fixture_manifest).fixtures]
