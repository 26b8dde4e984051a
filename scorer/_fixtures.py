"""Pinned fixtures: the manifest, pinning and the drift guard (docs/design/contract-layers.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._errors import InputError
from ._hashing import sha256_file


class FixtureEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    fixture: str = Field(min_length=1)
    """Path of the fixture, relative to the repository root."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    frozen_at: str
    covers: list[str] = []
    """Property ids the fixture feeds."""


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    fixtures: list[FixtureEntry] = []


class FixtureDrift(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    fixture: str
    expected: str
    actual: str

    def message(self) -> str:
        return f"fixture drifted: {self.fixture} expected {self.expected}, got {self.actual}"


def read_manifest(path: Path) -> Manifest:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("fixture manifest not found", where=str(path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", where=f"{path}:{exc.lineno}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read fixture manifest: {exc}", where=str(path)) from None
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = ".".join(str(p) for p in error["loc"])
        raise InputError(f"{loc}: {error['msg']}", where=str(path)) from None


def guard_fixtures(tree: Path, manifest: Manifest) -> list[FixtureDrift]:
    """Every fixture whose bytes differ from the manifest (missing = drifted)."""
    drifts = []
    for entry in manifest.fixtures:
        path = tree / entry.fixture
        usable = path.is_file() and not path.is_symlink()
        actual = sha256_file(path) if usable else "missing"
        if actual != entry.sha256:
            drifts.append(FixtureDrift(fixture=entry.fixture, expected=entry.sha256, actual=actual))
    return drifts


def pin_fixtures(tree: Path, fixtures: list[str], covers: dict[str, list[str]]) -> Manifest:
    """A manifest for ``fixtures`` (tree-relative) with their current digests."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    entries = []
    for rel in sorted(set(fixtures)):
        path = tree / rel
        if not path.is_file():
            raise InputError("fixture not found", where=str(path))
        entries.append(
            FixtureEntry(
                fixture=rel, sha256=sha256_file(path), frozen_at=now, covers=covers.get(rel, [])
            )
        )
    return Manifest(fixtures=entries)
