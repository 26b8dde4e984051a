"""Run rows: one JSONL line per (property, seed) and side (docs/design/runner.md).

Reading is strict about shape (a line that is not a JSON object, or lacks
``prop``, ``seed`` or ``status``, is an input error naming file and line) and
lenient about content: a ``status`` other than pass/fail is kept so the gate
can reject it as ``invalid_status``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from .._errors import InputError

STATUSES = ("pass", "fail")


class RunRow(BaseModel):
    """One property's result for one seed on one tree."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    prop: str
    seed: int
    status: str
    witness: str = ""
    tree: str | None = None
    sha: str | None = None
    contract_hash: str | None = None
    spec_hash: str | None = None
    fixture_closure_hash: str | None = None
    duration_s: float | None = None
    held_out: bool | None = None
    """True on a row of a held-out property (docs/design/held-out.md): reviewers see it marked."""
    extra_seed: bool | None = None
    """True on a row of a seed drawn for this submission only, besides the schedule."""


def _field_error(obj: dict[str, Any]) -> str | None:
    for key in ("prop", "seed", "status"):
        if key not in obj:
            return f"row lacks {key!r}"
    if not isinstance(obj["prop"], str) or not obj["prop"]:
        return "'prop' must be a non-empty string"
    if isinstance(obj["seed"], bool) or not isinstance(obj["seed"], int):
        return "'seed' must be an integer"
    if not isinstance(obj["status"], str):
        return "'status' must be a string"
    if "witness" in obj and not isinstance(obj["witness"], str):
        return "'witness' must be a string"
    for key in ("tree", "sha", "contract_hash", "spec_hash", "fixture_closure_hash"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            return f"{key!r} must be a string"
    for key in ("held_out", "extra_seed"):
        if obj.get(key) is not None and not isinstance(obj[key], bool):
            return f"{key!r} must be true or false"
    duration = obj.get("duration_s")
    if duration is not None and (
        isinstance(duration, bool) or not isinstance(duration, int | float)
    ):
        return "'duration_s' must be a number"
    return None


def parse_rows(lines: Iterable[str], where: str) -> list[RunRow]:
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not a JSON object: {exc.msg}", where=f"{where}:{number}") from None
        except (ValueError, RecursionError) as exc:  # huge integers, absurd nesting
            raise InputError(
                f"not a usable JSON object: {exc}", where=f"{where}:{number}"
            ) from None
        if not isinstance(obj, dict):
            raise InputError("not a JSON object", where=f"{where}:{number}")
        problem = _field_error(obj)
        if problem:
            raise InputError(problem, where=f"{where}:{number}")
        rows.append(RunRow.model_validate(obj))
    return rows


def read_rows(path: Path) -> list[RunRow]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("rows file not found", where=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("rows file is not UTF-8 text", where=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read rows file: {exc.strerror}", where=str(path)) from None
    # Only "\n" ends a JSONL line: str.splitlines() would also split on
    # U+2028 and friends, which JSON strings may hold unescaped.
    return parse_rows((line.removesuffix("\r") for line in text.split("\n")), str(path))


def dump_rows(rows: Iterable[RunRow]) -> str:
    return "".join(row.model_dump_json(exclude_none=True) + "\n" for row in rows)
