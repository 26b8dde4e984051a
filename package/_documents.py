"""YAML and JSON documents we are given, read so that every error names its file and line.

Every operator or reviewer input that is a document goes through here: the contract, the
operator configuration, the fixture manifest, the quarantine list, freeze records and
tickets, the held-out file. Two steps, each raising one line with ``where`` = ``FILE:LINE``:

    parse_document(text, where)              -> the data (YAML, or JSON when where ends .json)
    validate_document(Model, data, text, where) -> a model instance

The line of a validation error is found by walking the document's node tree (PyYAML's
``compose``, which reads JSON as well) along the error's location, so ``properties.1.test``
points at that property's ``test`` line, not at the first ``test:`` in the file. A key that
is missing points at the mapping that lacks it. Duplicate keys, which both parsers would
otherwise settle silently by keeping the last, are errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ._errors import InputError, PatchwardenError

M = TypeVar("M", bound=BaseModel)


def is_json(where: str) -> bool:
    """Whether ``where`` (a path, maybe ``sha:path``) names a JSON document."""
    return where.lower().endswith(".json")


def parse_document(
    text: str, where: str, *, error: type[PatchwardenError] = InputError, json_only: bool = False
) -> Any:
    """The data in ``text``: JSON when ``where`` ends in .json (or ``json_only``), else YAML."""
    if json_only or is_json(where):
        return _parse_json(text, where, error)
    return _parse_yaml(text, where, error)


def _parse_json(text: str, where: str, error: type[PatchwardenError]) -> Any:
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                duplicates.append(key)
            seen[key] = value
        return seen

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise error(f"not valid JSON: {exc.msg}", where=f"{where}:{exc.lineno}") from None
    except (ValueError, RecursionError) as exc:  # huge integers, absurd nesting
        raise error(f"not usable JSON: {exc}", where=where) from None
    if duplicates:
        line = _line_of_key(text, duplicates[0], occurrence=2)
        raise error(f"duplicate key {duplicates[0]!r}", where=_at(where, line))
    return data


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with the same key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: the base class says so
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _parse_yaml(text: str, where: str, error: type[PatchwardenError]) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"not valid YAML: {problem}", where=_at(where, line)) from None
    except (ValueError, RecursionError) as exc:
        raise error(f"not usable YAML: {exc}", where=where) from None


def validate_document(
    model: type[M],
    data: Any,
    text: str,
    where: str,
    *,
    error: type[PatchwardenError] = InputError,
    what: str = "",
) -> M:
    """``model`` validated from ``data``; the first error names its key and line.

    ``what`` prefixes the message (e.g. ``quarantine list``) where the file name alone does
    not say what the document is.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        message, at = describe_error(exc, text, where)
        raise error(f"{what}: {message}" if what else message, where=at) from None


def describe_error(exc: ValidationError, text: str, where: str) -> tuple[str, str]:
    """The first pydantic error as (one-line message naming the key, ``where:line``)."""
    first = exc.errors()[0]
    loc = tuple(first["loc"])
    key = ".".join(str(part) for part in loc) or "(top level)"
    if first["type"] == "extra_forbidden":
        message = "unknown key"
    elif first["type"] == "missing":
        message = "required key missing"
    else:
        message = str(first["msg"]).removeprefix("Value error, ")
    return f"{key}: {message}", _at(where, line_of(text, loc))


def line_of(text: str, loc: Sequence[str | int]) -> int | None:
    """1-based line of the node at ``loc`` (keys and list indices) in a YAML or JSON text;
    the deepest node that exists when the path stops early; None if the text does not
    compose."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, ValueError, RecursionError):
        keys = [part for part in loc if isinstance(part, str)]
        return _line_of_key(text, keys[-1]) if keys else None
    if node is None:
        return None
    line: int = node.start_mark.line + 1
    for part in loc:
        found = _child(node, part)
        if found is None:
            break
        line, node = found
    return line


def _child(node: yaml.Node, part: str | int) -> tuple[int, yaml.Node] | None:
    """The line that names ``part`` under ``node`` (a key's line, an item's first line) and
    the node to walk on from."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return key.start_mark.line + 1, value
        return None
    if (
        isinstance(node, yaml.SequenceNode)
        and isinstance(part, int)
        and 0 <= part < len(node.value)
    ):
        item = node.value[part]
        return item.start_mark.line + 1, item
    return None


def _line_of_key(text: str, key: str, *, occurrence: int = 1) -> int | None:
    """Line of the n-th ``key:`` or ``"key":`` (for texts that do not compose)."""
    pattern = re.compile(
        rf"""(?:^|[\s{{,\-])(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*:"""
    )
    seen = 0
    for number, line in enumerate(text.splitlines(), start=1):
        seen += len(pattern.findall(line))
        if seen >= occurrence:
            return number
    return None


def _at(where: str, line: int | None) -> str:
    return f"{where}:{line}" if line else where


__all__ = [
    "describe_error",
    "is_json",
    "line_of",
    "parse_document",
    "validate_document",
]
