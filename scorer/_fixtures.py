"""Pinned fixtures: the manifest, pinning and the drift guard (docs/design/contract-layers.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from patchwarden._documents import parse_document, validate_document

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
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("fixture manifest not found", where=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read fixture manifest: {exc}", where=str(path)) from None
    return parse_manifest(text, str(path))


def parse_manifest(text: str, where: str) -> Manifest:
    """The manifest in ``text`` (JSON); errors name ``where:line``."""
    data = parse_document(text, where, json_only=True)
    return validate_document(Manifest, data, text, where, what="fixture manifest")


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
