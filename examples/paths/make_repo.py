"""Materialise the paths example (a CMake/ctest project) as a git repository.

    python examples/paths/make_repo.py DEST

creates DEST holding `base` (branch `main`, tag `base`: normalize_path keeps a trailing
backslash) and one commit per patch overlay under `patches/`, each tagged `patch-<name>`:

- `fix`: converts the last character too (accept);
- `regression`: the fix, but the trailing separator is stripped before runs are collapsed,
  so normalising is no longer idempotent (reject: a regression);
- `refactor`: no behaviour change, the bug stays (propose_freeze: the seed-dependent
  failures are the parent's own);
- `build-failure`: the fix without a semicolon (reject: every property fails to build);
- `tamper`: the fix, and the backslash test's assertion commented out (contract_tampered).

The commits are made by examples/orders/make_repo.py (fixed identity, dates and git
configuration, so two builds give the same shas).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _orders_builder() -> object:
    """The orders example's repository builder (one copy of the git plumbing)."""
    spec = importlib.util.spec_from_file_location(
        "patchwarden_example_builder", HERE.parent / "orders" / "make_repo.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and NamedTuples look their module up
    spec.loader.exec_module(module)
    return module


builder = _orders_builder()
PatchSpec = builder.PatchSpec  # type: ignore[attr-defined]
BASE = builder.BASE_TAG  # type: ignore[attr-defined]
PATHS = builder.Example(  # type: ignore[attr-defined]
    template=HERE / "template",
    patches=HERE / "patches",
    specs=(
        PatchSpec("fix", BASE, "2026-11-02T10:00:00+00:00"),
        PatchSpec("regression", BASE, "2026-11-02T11:00:00+00:00"),
        PatchSpec("refactor", BASE, "2026-11-02T12:00:00+00:00"),
        PatchSpec("build-failure", BASE, "2026-11-02T13:00:00+00:00"),
        PatchSpec("tamper", BASE, "2026-11-02T14:00:00+00:00"),
    ),
    base_message="normalize_path with its ctest invariants and the differential contract\n",
    manifest="tests/fixtures/manifest.json",
)


def make_repo(dest: Path) -> dict[str, str]:
    """Build the paths repository at ``dest``; return tag name -> commit sha."""
    return builder.make_repo(dest, PATHS)  # type: ignore[attr-defined,no-any-return]


if __name__ == "__main__":
    sys.exit(builder.main(example=PATHS))  # type: ignore[attr-defined]
