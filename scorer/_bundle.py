"""Evidence bundles: one directory per verdict, written atomically (docs/reviewer-guide.md).

Files are written into a hidden staging directory beside the final one and
renamed into place in one step, so a reader never sees half a bundle. The
``verdicts.jsonl`` index is append-only, one line per verdict, under a lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

VERDICTS_DIR = "verdicts"
INDEX = "verdicts.jsonl"


def new_verdict_id(patch_sha: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{patch_sha[:10]}-{secrets.token_hex(2)}"


class BundleWriter:
    """Stage files for one verdict, then publish them in one rename."""

    def __init__(self, log_dir: Path, verdict_id: str) -> None:
        self.log_dir = log_dir
        self.verdict_id = verdict_id
        self.final = log_dir / VERDICTS_DIR / verdict_id
        self.staging = log_dir / VERDICTS_DIR / f".staging-{verdict_id}"
        self.staging.mkdir(parents=True, exist_ok=False)

    def write_text(self, name: str, text: str) -> Path:
        path = self.staging / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        return path

    def write_json(self, name: str, value: Any) -> Path:
        return self.write_text(name, json.dumps(value, indent=2, sort_keys=False) + "\n")

    def publish(self, index_entry: dict[str, Any]) -> Path:
        os.rename(self.staging, self.final)
        append_index(self.log_dir, {**index_entry, "bundle": str(self.final)})
        return self.final

    def discard(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def append_index(log_dir: Path, entry: dict[str, Any]) -> None:
    line = json.dumps(entry, sort_keys=True) + "\n"
    with (log_dir / INDEX).open("a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
