"""What a bundle's ``runs/`` folder holds, run by run (docs/reviewer-guide.md)."""

from __future__ import annotations

import json
from pathlib import Path

RUN_FILES = ("channel.txt", "json", "stderr.txt", "stdout.txt")
PRODUCT_FILES = ("product.stderr.txt", "product.stdout.txt")
"""An isolated run's product process prints apart from the oracle."""


def expected_run_files(folder: Path, trees: int = 2, seeds: int = 4) -> list[str]:
    """The names ``folder`` must hold: four files per run, six for an isolated one; and
    exactly ``trees`` x ``seeds`` runs (by default the example's three seeds and the one
    extra seed every score draws)."""
    stems = sorted(p.name.removesuffix(".json") for p in folder.glob("*.json"))
    assert len(stems) == trees * seeds, stems
    names = []
    for stem in stems:
        isolated = json.loads((folder / f"{stem}.json").read_text())["product"] is not None
        names += [f"{stem}.{part}" for part in RUN_FILES + (PRODUCT_FILES if isolated else ())]
    return sorted(names)
