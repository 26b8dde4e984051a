"""The contract: which properties, which seeds, which paths define the spec.

Operator-written YAML or JSON in the target repository (docs/design/contract.md).
Loading is strict: unknown keys, wrong types and duplicate seeds or ids are
errors that name the file and, where the parser knows it, the line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from patchwarden._documents import parse_document, validate_document
from patchwarden._runner_names import (
    DEFAULT_RUNNER,
    DEFAULT_SEED_ENV,
    RUNNER_NAMES,
    env_name_problem,
)
from patchwarden._treepaths import tree_path_problem

from ._errors import ContractError
from ._fixtures import read_manifest
from ._hashing import files_under, hash_json, hash_pairs, sha256_bytes

DEFAULT_CONTRACT_PATH = "contract/differential-contract.yaml"
FREEZE_DIR = ".freeze"
DEFAULT_QUARANTINE_LIST = "contract/quarantine.json"
RESOLUTION_FIELDS = ("parent_sha", "patch_sha", "spec_hash", "fixture_closure_hash")
"""What ``score`` fills in when it resolves a contract (a pinned hash stays the pin)."""


class Property(BaseModel):
    """One property check: an id, its oracle in words, and its pytest node id."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str = Field(min_length=1)
    oracle: str = ""
    test: str = Field(min_length=1)
    """What the contract's runner runs: a pytest node id relative to the repository root
    (``path::name``), or a ctest test name (checked against the runner by ``Contract``)."""

    @field_validator("test")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if any(ch in value for ch in "\n\r\0"):
            raise ValueError(f"test must be one line, got {value!r}")
        return value


def runner_test_problem(runner: str, test: str) -> str | None:
    """Why ``test`` cannot name a test of ``runner`` (None: it can)."""
    if runner != "pytest":
        return None  # a ctest name is any line (docs/design/runners.md)
    if tree_path_problem(test.split("::", 1)[0]) or "::" not in test:
        return f"test must be a relative pytest node id 'path::name', got {test!r}"
    return None


def check_property_tests(runner: str, props: Sequence[Property]) -> None:
    """Each property's ``test`` names a test of ``runner``; otherwise a validation error at
    that property's own test line (``properties.N.test``), as a field error is: the runner is
    known only where the whole list is (a contract, a held-out file)."""
    for index, prop in enumerate(props):
        problem = runner_test_problem(runner, prop.test)
        if problem:
            detail = InitErrorDetails(
                type=PydanticCustomError("value_error", "{problem}", {"problem": problem}),
                loc=(index, "test"),
                input=prop.test,
            )
            raise ValidationError.from_exception_data("Contract", [detail])


class Contract(BaseModel):
    """A differential contract; ``parent_sha``/``patch_sha`` set once resolved."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    contract_version: int = 1
    runner: str = DEFAULT_RUNNER
    """Which runner runs the properties (docs/design/runners.md): ``pytest`` or ``ctest``."""
    seed_env: str = DEFAULT_SEED_ENV
    """ctest: the environment variable each seed reaches the tests in."""
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

    @field_validator("runner")
    @classmethod
    def _known_runner(cls, value: str) -> str:
        if value not in RUNNER_NAMES:
            raise ValueError(f"runner must be one of {', '.join(RUNNER_NAMES)}, got {value!r}")
        return value

    @field_validator("seed_env")
    @classmethod
    def _seed_env_name(cls, value: str) -> str:
        problem = env_name_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("properties")
    @classmethod
    def _unique_ids(cls, props: list[Property], info: ValidationInfo) -> list[Property]:
        check_property_tests(info.data.get("runner", DEFAULT_RUNNER), props)
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
        """``sha256:`` of the canonical JSON of the contract's content: what it asks
        (version, seeds, properties, paths, manifest, quarantine list), without the values a
        resolution fills in (both commits, the two tree hashes). The same contract file has
        the same hash in every verdict, and so does every resolution of it."""
        return hash_json(self._content(exclude=set(RESOLUTION_FIELDS)))

    def _content(self, exclude: set[str] | None = None) -> dict[str, object]:
        """What the hashes cover: the runner fields only when they are not the defaults, so
        every pytest contract written before runners were named keeps its hash."""
        data = self.model_dump(mode="json", exclude=exclude)
        for name, default in (("runner", DEFAULT_RUNNER), ("seed_env", DEFAULT_SEED_ENV)):
            if data.get(name) == default:
                data.pop(name)
        return data

    @property
    def resolved_contract_hash(self) -> str:
        """``sha256:`` of the canonical JSON of everything, resolution included: names one
        contract applied to one pair of commits."""
        return hash_json(self._content())

    def tests_dir(self) -> str:
        """The deepest directory holding every property file (where pytest would look for
        its configuration first); "." without properties."""
        dirs = [PurePosixPath(p.test.split("::", 1)[0]).parent for p in self.properties]
        common = dirs[0] if dirs else PurePosixPath(".")
        for directory in dirs[1:]:
            while common != PurePosixPath(".") and common not in (directory, *directory.parents):
                common = common.parent
        return common.as_posix()

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


TODO_ORACLE = "TODO: what must hold, in one sentence, for a reviewer"
DEFAULT_SEEDS = (11, 29, 47)
"""The schedule a new contract starts with (three seeds: enough to see a split result)."""


def ctest_skeleton(
    tests: Sequence[str], spec_paths: Sequence[str], seeds: Sequence[int] = DEFAULT_SEEDS
) -> str:
    """A commented contract for a CMake project: ``runner: ctest``, one property per ctest
    test name in ``tests`` (from ``ctest -N``); it loads as it is."""
    props = [Property(id=property_id(f"t::{test}", i), test=test) for i, test in enumerate(tests)]
    lines = [
        "# The differential contract (written by `patchwarden contract init`).",
        "# Review every line, commit it, then run `patchwarden contract check`.",
        "contract_version: 1",
        "",
        "# The properties are ctest tests (docs/design/runners.md): score configures and builds",
        "# each tree with CMake in the sandbox, then runs them with ctest --output-junit,",
        "# each seed in the environment variable below (read it in the tests, with a frozen",
        "# default for runs by hand). The assertions share the product's process: the",
        "# runner_trust check names it on every verdict (docs/threat-model.md).",
        "runner: ctest",
        f"seed_env: {DEFAULT_SEED_ENV}",
        f"seeds: [{', '.join(str(s) for s in seeds)}]",
        "",
        "# The test sources and the CMake file that defines the tests: read-only to the agent,",
        "# and a patch that changes them is rejected (contract_tampered).",
        "spec_paths:" + ("" if spec_paths else f" []  # TODO: {TODO_SPEC_PATHS}"),
        *[f"  - {json.dumps(p)}" for p in spec_paths],
        "",
        "properties:",
    ]
    for prop in props:
        lines += [
            f"  - id: {json.dumps(prop.id)}",
            f'    oracle: ""  # {TODO_ORACLE}',
            f"    test: {json.dumps(prop.test)}",
        ]
    return "\n".join(lines) + "\n"


TODO_SPEC_PATHS = "the directory of the test sources and of the CMakeLists.txt that adds them"


def contract_skeleton(
    tests: Sequence[str],
    seeds: Sequence[int] = DEFAULT_SEEDS,
    guards: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """A commented contract naming one property per pytest node id in ``tests``, and one
    regression guard per test of ``guards`` (function name -> its tests, from
    ``guards_for``); it loads as it is (``parse_contract``) and says what to review before
    it is committed."""
    props = [Property(id=property_id(test, i), test=test) for i, test in enumerate(tests)]
    guarded = [(name, test) for name, found in (guards or {}).items() for test in found]
    props += [
        Property(
            id=property_id(test, len(props) + i, prefix="guard"),
            oracle=f"the project's test of {name} still passes",
            test=test,
        )
        for i, (name, test) in enumerate(guarded)
    ]
    ids = [p.id for p in props]
    props = [
        p if ids.count(p.id) == 1 else p.model_copy(update={"id": f"{p.id}_{i + 1}"})
        for i, p in enumerate(props)
    ]
    files = sorted({p.test.split("::", 1)[0] for p in props})
    lines = [
        "# The differential contract (written by `patchwarden contract init`).",
        "# Review every line, commit it together with the property tests, then run",
        "# `patchwarden contract check`: it collects each test on the base and shows which",
        "# properties fail there (the bug a patch must fix) and which pass on every seed.",
        "contract_version: 1",
        "",
        "# The schedule: each property runs once per seed, in this order, on the parent and",
        "# on the patch (as --hypothesis-seed, PYTHONHASHSEED, random.seed and the",
        "# contract_seed fixture). Order and count are part of the contract.",
        f"seeds: [{', '.join(str(s) for s in seeds)}]",
        "",
        "# Files (or directories) whose bytes define spec_hash: the property tests. They are",
        "# read-only to the agent, and a patch that changes them is rejected.",
        "spec_paths:",
        *[f"  - {json.dumps(f)}" for f in files],
        "",
        "# Fixtures the properties read, pinned with `patchwarden fixtures pin` (optional):",
        "# fixture_manifest: tests/fixtures/manifest.json",
        "",
        "properties:",
    ]
    for number, prop in enumerate(props):
        if number == len(tests):
            lines += [
                "",
                "  # Regression guards: the project's own tests of the functions named with",
                "  # --guards-for. They pass on the base (`contract check` shows it), so a patch",
                "  # that fixes the bug by breaking what they try is a regression reject.",
            ]
        oracle = json.dumps(prop.oracle) if prop.oracle else f'""  # {TODO_ORACLE}'
        lines += [
            f"  - id: {json.dumps(prop.id)}",
            f"    oracle: {oracle}",
            f"    test: {json.dumps(prop.test)}",
        ]
    return "\n".join(lines) + "\n"


def property_id(test: str, index: int, prefix: str = "prop") -> str:
    parts = test.split("::")[1:] or [test]
    name, _, case = parts[-1].partition("[")  # a parametrized case: its id joins the name
    parts[-1] = "_".join(filter(None, (name.removeprefix("test_"), case.removesuffix("]"))))
    name = "_".join(parts) if prefix != "prop" else parts[-1]
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name).strip("_")
    return f"{prefix}.{name or index + 1}"


def parse_contract(text: str, where: str) -> Contract:
    """The contract in ``text`` (YAML, or JSON when ``where`` ends .json); every error is one
    line naming ``where:line`` (patchwarden._documents)."""
    data = parse_document(text, where, error=ContractError)
    if not isinstance(data, dict):
        raise ContractError("the contract must be a mapping of keys to values", where=where)
    return validate_document(Contract, data, text, where, error=ContractError)


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
