"""``score --replay BUNDLE``: the score a bundle records, run again exactly.

A bundle records the score's secret (``seeds.json``: every run's hash seed and random seed
derive from it, and so do the extra seeds), the request (repository, contract path,
held-out directory) and both commits (``decision.json``). Scoring the same commits with the
same secret and the same number of extra seeds runs every process as it ran, so the rows
come out the same: a reviewer can check a verdict, or watch a run fail again
(docs/reviewer-guide.md). Durations differ and are not compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import InputError
from ._score import ScoreRequest
from ._seeds import SEEDS_FILE, ScoreSecret
from .gate import RunRow, read_rows

SIDES = ("parent", "patch")
COMPARED = ("prop", "seed", "status", "witness", "tree", "sha", "held_out", "extra_seed")
"""What a replay must reproduce of each row (durations are the machine's)."""


@dataclass(frozen=True)
class Replay:
    """What a bundle says about the score it came from."""

    bundle: Path
    request: ScoreRequest
    secret: ScoreSecret
    extra_seeds: list[int]
    rows: dict[str, list[RunRow]]


def _json(bundle: Path, name: str) -> dict[str, Any]:
    path = bundle / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("missing: not a bundle this scorer can replay", where=str(path)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"cannot read {name}: {exc}", where=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(f"{name} is not a JSON object", where=str(path))
    return data


def _text(data: dict[str, Any], key: str, where: Path) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(f"'{key}' is missing or not a string", where=str(where))
    return value


def read_replay(bundle: Path, *, repo: Path | None = None, contract: str | None = None) -> Replay:
    """The bundle's score, ready to run again; ``repo`` and ``contract`` replace the ones it
    records (a repository moved since). InputError naming the file for a bundle that does
    not hold what a replay needs."""
    seeds = _json(bundle, SEEDS_FILE)
    decision = _json(bundle, "decision.json")
    where = bundle / SEEDS_FILE
    try:
        secret = ScoreSecret.from_hex(_text(seeds, "secret", where))
    except ValueError:
        raise InputError("'secret' is not 64 hex digits", where=str(where)) from None
    extra = seeds.get("extra_seeds")
    if not isinstance(extra, list) or not all(type(s) is int for s in extra):
        raise InputError("'extra_seeds' is not a list of integers", where=str(where))
    request = seeds.get("request")
    if not isinstance(request, dict):
        raise InputError("'request' is missing", where=str(where))
    held_out = request.get("held_out")
    return Replay(
        bundle=bundle,
        request=ScoreRequest(
            repo=repo if repo is not None else Path(_text(request, "repo", where)),
            contract=contract if contract is not None else _text(request, "contract", where),
            parent=_text(decision, "parent_sha", bundle / "decision.json"),
            patch=_text(decision, "patch_sha", bundle / "decision.json"),
            held_out=Path(held_out) if isinstance(held_out, str) else None,
        ),
        secret=secret,
        extra_seeds=list(extra),
        rows={side: read_rows(bundle / f"{side}.jsonl") for side in SIDES},
    )


def row_differences(
    recorded: dict[str, list[RunRow]], replayed: dict[str, list[RunRow]]
) -> list[str]:
    """One line per row that differs (side, position, the fields), and per count."""
    lines = []
    for side in SIDES:
        before, after = recorded[side], replayed[side]
        if len(before) != len(after):
            lines.append(f"{side}: {len(before)} rows recorded, {len(after)} replayed")
        for number, (old, new) in enumerate(zip(before, after, strict=False), start=1):
            was = {key: getattr(old, key) for key in COMPARED}
            now = {key: getattr(new, key) for key in COMPARED}
            if was != now:
                changed = ", ".join(
                    f"{key} {was[key]!r} -> {now[key]!r}"
                    for key in COMPARED
                    if was[key] != now[key]
                )
                lines.append(f"{side} row {number} ({old.prop} seed {old.seed}): {changed}")
    return lines
