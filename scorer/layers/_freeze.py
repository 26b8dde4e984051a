"""Freeze records: the evidence needed to skip one test (docs/design/contract-layers.md), and their
check.

``.freeze/record.json`` holds six required fields; ``notes`` may exist but
never fills a gap. :func:`check_freeze_record` checks each field and returns
one :class:`FieldReject` per field that does not hold (empty: the record
holds). HEAD is the patch and HEAD^ its parent; without HEAD^ (a root
commit, a shallow clone) the oracle fields fail closed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from patchwarden._documents import parse_document
from patchwarden._treepaths import tree_path_problem
from patchwarden.sandbox import (
    SandboxConfig,
    blob_id_at,
    changed_paths,
    file_at,
    first_parent,
    list_ctest_tests,
    resolve_commit,
)

from .._checkout import clean_checkout, contract_at, scorer_clone, working_tree
from .._config import ScorerConfig
from .._contract import DEFAULT_CONTRACT_PATH, FREEZE_DIR
from .._errors import InputError, PatchwardenError
from .._hashing import sha256_file
from ._collector import collect_node_id

RECORD_NAME = "record.json"
DEFAULT_RECORD = f"{FREEZE_DIR}/{RECORD_NAME}"
FIELDS = (
    "test_id",
    "fixture_path",
    "fixture_sha256",
    "disagreement",
    "oracle_path",
    "oracle_blob",
)
SELECTION_ERROR_EXIT = 5
"""pytest's "no tests collected": the id selected nothing, which is not a flake."""
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_BLOB = re.compile(r"^[0-9a-f]{40}$")


class RunEvidence(BaseModel):
    """One run of the test id in its own process."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    passed: bool
    exit_code: int


class FreezeRecord(BaseModel):
    """What ``freeze propose`` writes; ``check_freeze_record`` reads any JSON object."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    test_id: str = Field(min_length=1)
    fixture_path: str
    """The snapshot under .freeze/, relative to the directory that holds .freeze/."""
    fixture_sha256: str
    disagreement: list[RunEvidence]
    oracle_path: str
    oracle_blob: str
    notes: dict[str, str] = {}


@dataclass(frozen=True)
class FieldReject:
    """One field of a freeze record that does not hold."""

    field: str
    why: str

    def line(self) -> str:
        return f"{self.field}: {self.why}"


def load_record(path: Path) -> dict[str, Any]:
    """The record at ``path`` as a JSON object (an input error otherwise)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("freeze record not found", where=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the freeze record: {exc}", where=str(path)) from None
    data = parse_document(text, str(path), json_only=True)
    if not isinstance(data, dict):
        raise InputError("a freeze record must be a JSON object", where=str(path))
    return data


def _relative(value: str) -> bool:
    return not tree_path_problem(value)


def node_id_problem(value: object) -> str:
    """Why ``value`` is not one pytest node id (empty when it is). A leading dash would be
    read by pytest as an option (``-p plugin``), so it is refused."""
    if not isinstance(value, str) or not value.strip() or "\n" in value or "\0" in value:
        return "must be one pytest node id"
    if value.startswith("-"):
        return "must be a pytest node id, not an option"
    return ""


def _check_test_id(
    value: Any,
    repo: Path,
    head: str,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    contract_paths: Sequence[str],
    runner: str = "pytest",
) -> str:
    problem = node_id_problem(value)
    if problem:
        return problem
    clone = scorer_clone(repo, [head], config)
    if runner == "ctest":
        return _check_ctest_id(str(value), clone, head, config, sandbox_config)
    with clean_checkout(clone, head, config) as tree:
        found = collect_node_id(tree, value, sandbox_config, contract_paths=contract_paths)
    code = found.process.exit_code
    if found.node_ids is None:
        return f"pytest --collect-only did not report (exit code {code}); failing closed"
    if found.count != 1 or code != 0:
        noun = "test" if found.count == 1 else "tests"
        return f"collects {found.count} {noun} (pytest exit code {code}); exactly one is required"
    return ""


def _check_ctest_id(
    name: str, clone: Any, head: str, config: ScorerConfig, sandbox_config: SandboxConfig
) -> str:
    """A ctest test id: exactly one test of that name in ``ctest -N`` of ``head``'s build."""
    with clean_checkout(clone, head, config) as tree:
        try:
            names = list_ctest_tests(tree, sandbox_config, config.run_limits)
        except PatchwardenError as exc:
            return f"ctest -N did not list the tests ({exc}); failing closed"
    count = names.count(name)
    if count != 1:
        return f"names {count} ctest tests of {head[:12]}; exactly one is required"
    return ""


def _check_fixture(path_value: Any, digest_value: Any, fixture_root: Path) -> tuple[str, str]:
    """(fixture_path problem, fixture_sha256 problem)."""
    path_problem = digest_problem = ""
    fixture: Path | None = None
    if not isinstance(path_value, str) or not _relative(path_value):
        path_problem = "must be a relative path inside the repository"
    else:
        candidate = fixture_root / path_value
        if candidate.is_symlink() or not candidate.is_file():
            path_problem = f"does not exist: {path_value}"
        else:
            fixture = candidate
    if not isinstance(digest_value, str) or not _SHA256.match(digest_value):
        digest_problem = "must be the SHA-256 hex digest of the fixture's bytes"
    elif fixture is None:
        digest_problem = "cannot be checked: the fixture does not exist"
    else:
        actual = sha256_file(fixture)
        if actual != digest_value:
            digest_problem = f"digest changed: recorded {digest_value}, now {actual}"
    return path_problem, digest_problem


def check_disagreement(value: Any) -> str:
    """Two run objects with opposite ``passed``; each ``passed`` agrees with its exit code."""
    if not isinstance(value, list) or len(value) != 2:
        return "must hold exactly two run objects"
    runs = []
    for number, run in enumerate(value, start=1):
        if not isinstance(run, dict):
            return f"run {number} is not an object"
        passed, code = run.get("passed"), run.get("exit_code")
        if not isinstance(passed, bool):
            return f"run {number} has no boolean 'passed'"
        if not isinstance(code, int) or isinstance(code, bool):
            return f"run {number} has no integer 'exit_code'"
        runs.append((passed, code))
    for number, (_, code) in enumerate(runs, start=1):
        if code == SELECTION_ERROR_EXIT:
            return f"run {number} exit code 5 is a selection error (no test collected), not a flake"
    for number, (passed, code) in enumerate(runs, start=1):
        if passed != (code == 0):
            return f"run {number} says passed={str(passed).lower()} but its exit code is {code}"
    if runs[0][0] == runs[1][0]:
        both = "passed" if runs[0][0] else "failed"
        return f"both runs {both} (exit codes {runs[0][1]}, {runs[1][1]}): no disagreement"
    return ""


def _check_oracle(path_value: Any, blob_value: Any, repo: Path, head: str) -> tuple[str, str]:
    """(oracle_path problem, oracle_blob problem)."""
    if not isinstance(path_value, str) or not _relative(path_value):
        return "must be a relative path inside the repository", "cannot be checked without a path"
    parent = first_parent(repo, head)
    if parent is None:
        why = "HEAD^ is not available (root commit or shallow clone); failing closed"
        return why, "cannot be checked without HEAD^"
    actual = blob_id_at(repo, parent, path_value)
    if actual is None:
        return f"missing at HEAD^: {path_value}", "cannot be checked: the path is missing at HEAD^"
    if not isinstance(blob_value, str) or not _BLOB.match(blob_value):
        return "", "must be a git blob id (40 hex digits)"
    if blob_value != actual:
        return "", f"differs from HEAD^: recorded {blob_value}, HEAD^ has {actual}"
    if path_value in changed_paths(repo, parent, head):
        return "", f"{path_value} is in the patch's diff (git diff --name-only HEAD^ HEAD)"
    return "", ""


def check_freeze_record(
    record: dict[str, Any],
    *,
    repo: Path,
    head: str,
    fixture_root: Path,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    contract_paths: Sequence[str] = (),
    runner: str = "pytest",
) -> list[FieldReject]:
    """Every field of ``record`` that does not hold, in the order of docs/design/contract-layers.md.

    ``head`` is the patch commit (HEAD^ its parent); ``fixture_path`` is read
    under ``fixture_root``. The test id is collected in a sandbox on a clean
    checkout of ``head``.
    """
    problems: dict[str, str] = {}
    for name in FIELDS:
        if name not in record:
            problems[name] = "missing (notes never fill a gap)"
    if "test_id" not in problems:
        problems["test_id"] = _check_test_id(
            record["test_id"], repo, head, config, sandbox_config, contract_paths, runner
        )
    fixture_path, fixture_digest = _check_fixture(
        record.get("fixture_path"), record.get("fixture_sha256"), fixture_root
    )
    problems.setdefault("fixture_path", fixture_path)
    problems.setdefault("fixture_sha256", fixture_digest)
    if "disagreement" not in problems:
        problems["disagreement"] = check_disagreement(record["disagreement"])
    oracle_path, oracle_blob = _check_oracle(
        record.get("oracle_path"), record.get("oracle_blob"), repo, head
    )
    problems.setdefault("oracle_path", oracle_path)
    problems.setdefault("oracle_blob", oracle_blob)
    return [FieldReject(name, problems[name]) for name in FIELDS if problems[name]]


def freeze_check(
    repo: Path,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    record_path: Path | None = None,
    contract: str = DEFAULT_CONTRACT_PATH,
) -> list[FieldReject]:
    """``patchwarden freeze check``: the record in ``repo``'s working tree against its HEAD.
    The test id is one of the runner's that the contract committed at HEAD names (pytest
    when there is none; docs/design/runners.md)."""
    tree = working_tree(repo)
    path = record_path if record_path is not None else tree / DEFAULT_RECORD
    record = load_record(path)
    head = resolve_commit(tree, "HEAD")
    # Without a committed contract the record is a pytest project's, as before runners were
    # named; a contract that does not load is an error, never a guess.
    has_contract = file_at(tree, head, contract) is not None
    runner = contract_at(tree, head, contract)[0].runner if has_contract else "pytest"
    return check_freeze_record(
        record,
        repo=tree,
        head=head,
        fixture_root=tree,
        config=config,
        sandbox_config=sandbox_config,
        contract_paths=[FREEZE_DIR],
        runner=runner,
    )
