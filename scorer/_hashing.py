"""Content hashes that name a spec, a fixture closure and a contract.

All hashes are ``sha256:<hex>`` strings. Paths are POSIX, relative to the
tree root, and sorted, so the same bytes give the same hash on any machine.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PREFIX = "sha256:"


def sha256_bytes(data: bytes) -> str:
    """The bare hex digest of ``data`` (the manifest's format)."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def hash_pairs(pairs: Iterable[tuple[str, bytes]]) -> str:
    """``sha256:`` over sorted (name, payload) pairs, length-prefixed so that
    no two different sets of pairs can collide by concatenation."""
    digest = hashlib.sha256()
    for name, payload in sorted(pairs):
        encoded = name.encode()
        digest.update(len(encoded).to_bytes(8, "big") + encoded)
        digest.update(len(payload).to_bytes(8, "big") + payload)
    return PREFIX + digest.hexdigest()


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def hash_json(value: Any) -> str:
    return PREFIX + hashlib.sha256(canonical_json(value).encode()).hexdigest()


def files_under(tree: Path, rel_paths: Iterable[str]) -> list[str]:
    """Every regular file under the given tree-relative paths, as sorted POSIX
    paths relative to ``tree``. Symlinks are listed but never followed."""
    found: set[str] = set()
    for rel in rel_paths:
        top = tree / rel
        if top.is_symlink() or top.is_file():
            found.add(top.relative_to(tree).as_posix())
        elif top.is_dir():
            for path in top.rglob("*"):
                if "__pycache__" in path.parts:
                    continue
                if path.is_symlink() or path.is_file():
                    found.add(path.relative_to(tree).as_posix())
    return sorted(found)
