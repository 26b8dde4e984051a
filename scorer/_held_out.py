"""Held-out properties: the operator's, never the agent's (docs/design/held-out.md).

A directory outside the repository holds ``held-out.yaml`` in the contract's format
(``properties`` with ``id``, ``oracle``, ``test``; ``test`` is ``FILE::NAME`` relative to
the directory; ``seeds`` optional, default the contract's) and the test files it names.
Loading is strict, like the contract's: every problem is one line naming the file and, where
there is one, the line (an unknown key, a missing test file or test, an id the contract also
uses, a directory inside the repository). See docs/design/held-out.md.
"""

from __future__ import annotations

import ast
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from patchwarden._documents import line_of, parse_document, validate_document
from patchwarden._hostpaths import is_within
from patchwarden.sandbox import parse_python

from ._contract import Contract, Property, check_property_tests
from ._errors import HeldOutError
from ._hashing import files_under, hash_pairs

HELD_OUT_FILE = "held-out.yaml"


class HeldOutFile(BaseModel):
    """What ``held-out.yaml`` may say: a contract without paths of its own."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    contract_version: int = 1
    seeds: list[int] | None = Field(default=None, min_length=1)
    """The held-out schedule; None: the contract's."""
    properties: list[Property] = Field(min_length=1)

    @field_validator("properties")
    @classmethod
    def _pytest_node_ids(cls, props: list[Property]) -> list[Property]:
        check_property_tests("pytest", props)  # held-out properties are pytest tests
        return props

    @field_validator("seeds")
    @classmethod
    def _unique_seeds(cls, seeds: list[int] | None) -> list[int] | None:
        if seeds is not None and len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must not repeat, got {seeds}")
        return seeds


@dataclass(frozen=True)
class HeldOut:
    """Loaded held-out properties, ready to run."""

    directory: Path
    """Resolved; mounted read-only in the scorer's own runs, apart from the tree."""
    contract: Contract
    """Seeds (its own or the contract's), the properties, and ``spec_hash`` pinned to the
    bytes of every file in the directory."""

    @property
    def where(self) -> str:
        return str(self.directory / HELD_OUT_FILE)


def _at(where: str, line: int | None) -> str:
    return f"{where}:{line}" if line else where


def _test_defined(source: Path, name: str) -> bool:
    """Whether the first part of a node id's NAME is a top-level test function or class."""
    head = re.split(r"::|\[", name, maxsplit=1)[0]
    try:
        tree = parse_python(source.read_bytes(), filename=str(source))
    except SyntaxError as exc:
        raise HeldOutError(
            f"held-out test file does not parse: {exc.msg}", where=_at(str(source), exc.lineno)
        ) from None
    defined = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    return any(isinstance(node, defined) and node.name == head for node in tree.body)


def _readable_by_others(directory: Path, file: Path) -> bool:
    """Every directory from ``directory`` down to ``file`` searchable, ``file`` readable."""
    path = directory
    for part in (None, *file.relative_to(directory).parts[:-1]):
        path = path if part is None else path / part
        if path.stat().st_mode & (stat.S_IROTH | stat.S_IXOTH) != stat.S_IROTH | stat.S_IXOTH:
            return False
    return bool(file.stat().st_mode & stat.S_IROTH)


def _check_test(
    directory: Path, index: int, prop: Property, text: str, where: str, *, other_uid: bool
) -> None:
    rel, _, name = prop.test.partition("::")
    at = _at(where, line_of(text, ("properties", index, "test")))
    path = directory / rel
    if any(p.is_symlink() for p in (path, *path.parents) if is_within(p, directory)):
        raise HeldOutError(f"held-out test file {rel} is a symbolic link", where=at)
    if not path.is_file():
        raise HeldOutError(f"held-out test file {rel} not found in {directory}", where=at)
    if not _test_defined(path, name):
        raise HeldOutError(f"held-out test {name} is not defined in {rel}", where=at)
    if other_uid and not _readable_by_others(directory, path):
        raise HeldOutError(
            f"held-out test file {rel} is not readable by the sandbox uid (needs o+r, "
            "and o+x on the directories above it)",
            where=at,
        )


def held_out_hash(directory: Path) -> str:
    """``sha256:`` over the sorted (path, bytes) of every file in the directory."""
    pairs = []
    for rel in files_under(directory, ["."]):
        path = directory / rel
        payload = path.readlink().as_posix().encode() if path.is_symlink() else path.read_bytes()
        pairs.append((rel, payload))
    return hash_pairs(pairs)


def load_held_out(
    directory: Path, contract: Contract, *, repo: Path | None = None, other_uid: bool = False
) -> HeldOut:
    """Read and check ``directory/held-out.yaml`` against ``contract``.

    ``repo``: the repository scored; the directory must lie outside it. ``other_uid``: the
    sandbox runs as another uid (patchwarden runs as root), so the files must be readable by
    others.
    """
    if not directory.is_dir():
        raise HeldOutError("held-out directory not found", where=str(directory))
    directory = directory.resolve()
    if repo is not None:
        top = repo.resolve()
        if is_within(directory, top) or is_within(top, directory):
            raise HeldOutError(
                f"the held-out directory must be outside the repository {top}",
                where=str(directory),
            )
    where = str(directory / HELD_OUT_FILE)
    try:
        text = (directory / HELD_OUT_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HeldOutError(f"{HELD_OUT_FILE} not found", where=where) from None
    except OSError as exc:
        raise HeldOutError(f"cannot read {HELD_OUT_FILE}: {exc.strerror}", where=where) from None
    except UnicodeDecodeError:
        raise HeldOutError(f"{HELD_OUT_FILE} is not UTF-8 text", where=where) from None
    data = parse_document(text, where, error=HeldOutError)
    if not isinstance(data, dict):
        raise HeldOutError(f"{HELD_OUT_FILE} must be a mapping of keys to values", where=where)
    spec = validate_document(HeldOutFile, data, text, where, error=HeldOutError)
    try:
        held = Contract(seeds=spec.seeds or list(contract.seeds), properties=spec.properties)
    except ValidationError as exc:  # repeated ids or tests
        problem = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise HeldOutError(problem, where=_at(where, line_of(text, ("properties",)))) from None
    visible = set(contract.property_ids())
    for index, prop in enumerate(spec.properties):
        if prop.id in visible:
            raise HeldOutError(
                f"held-out property id {prop.id} is also a property of the contract",
                where=_at(where, line_of(text, ("properties", index, "id"))),
            )
        _check_test(directory, index, prop, text, where, other_uid=other_uid)
    pinned = held.model_copy(update={"spec_hash": held_out_hash(directory)})
    return HeldOut(directory=directory, contract=pinned)
