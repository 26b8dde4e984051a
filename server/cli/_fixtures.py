"""``patchwarden fixtures pin|guard``: the fixture manifest (docs/design/contract-layers.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from patchwarden._hostpaths import is_within
from patchwarden.scorer import (
    DEFAULT_CONTRACT_PATH,
    InputError,
    Manifest,
    guard_fixtures,
    load_contract,
    pin_fixtures,
    read_manifest,
    working_tree,
    write_json_atomic,
)

from ._base import (
    EXIT_FAILS,
    OneLineGroup,
    repo_option,
)

DEFAULT_MANIFEST = "tests/fixtures/manifest.json"


def _manifest_path(tree: Path, manifest: str | None) -> Path:
    if manifest is not None:
        return (tree / manifest) if not Path(manifest).is_absolute() else Path(manifest)
    contract = tree / DEFAULT_CONTRACT_PATH
    if contract.is_file():
        named = load_contract(contract).fixture_manifest
        if named:
            return tree / named
    return tree / DEFAULT_MANIFEST


def _in_repo(tree: Path, value: str) -> str:
    path = Path(value)
    absolute = (path if path.is_absolute() else tree / path).resolve()
    if not is_within(absolute, tree):
        raise InputError("fixture is outside the repository", where=value)
    return absolute.relative_to(tree).as_posix()


@click.group("fixtures", cls=OneLineGroup)
def fixtures_group() -> None:
    """Pin fixtures in the manifest, or check them against it (docs/design/contract-layers.md)."""


@fixtures_group.command("pin")
@repo_option
@click.option(
    "--manifest",
    help="Manifest path in the repository (default: the contract's fixture_manifest, "
    f"else {DEFAULT_MANIFEST}).",
)
@click.option(
    "--covers", "covers", multiple=True, help="Property id the fixtures feed (repeatable)."
)
@click.argument("fixtures", nargs=-1, required=True)
def pin_cmd(
    repo: Path, manifest: str | None, covers: tuple[str, ...], fixtures: tuple[str, ...]
) -> None:
    """Write FIXTURE... into the manifest with their SHA-256 and the time; other
    entries stay. The manifest is a contract path: commit it for review."""
    tree = working_tree(repo)
    path = _manifest_path(tree, manifest)
    existing = read_manifest(path) if path.exists() else Manifest()
    rels = [_in_repo(tree, f) for f in fixtures]
    previous = {e.fixture: e for e in existing.fixtures}
    cover_map = {
        rel: list(covers) if covers else list(previous[rel].covers if rel in previous else [])
        for rel in rels
    }
    pinned = pin_fixtures(tree, rels, cover_map)
    merged = {**previous, **{e.fixture: e for e in pinned.fixtures}}
    result = Manifest(fixtures=[merged[k] for k in sorted(merged)])
    write_json_atomic(path, result.model_dump(mode="json"))
    for entry in pinned.fixtures:
        feeds = f" covers {', '.join(entry.covers)}" if entry.covers else ""
        click.echo(f"pinned {entry.fixture} sha256 {entry.sha256}{feeds}")
    click.echo(f"manifest: {path} ({len(result.fixtures)} fixtures)")


@fixtures_group.command("guard")
@repo_option
@click.option("--manifest", help="Manifest path in the repository.")
def guard_cmd(repo: Path, manifest: str | None) -> None:
    """Exit 0 when every manifest fixture matches its SHA-256, else 1 with one
    ``fixture drifted`` line per fixture."""
    tree = working_tree(repo)
    path = _manifest_path(tree, manifest)
    loaded = read_manifest(path)
    drifts = guard_fixtures(tree, loaded)
    for drift in drifts:
        click.echo(drift.message())
    if drifts:
        sys.exit(EXIT_FAILS)
    click.echo(f"ok: {len(loaded.fixtures)} fixtures match {path}")
