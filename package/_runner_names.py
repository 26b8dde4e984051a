"""The names a contract's ``runner`` may take, and the seed variable's default.

Pure data, so the contract (read by the pure gate group) can check them without importing the
sandbox; sandbox/_runners.py holds the runners themselves under exactly these names.
"""

from __future__ import annotations

import re

RUNNER_NAMES = ("pytest", "ctest")
DEFAULT_RUNNER = "pytest"
DEFAULT_SEED_ENV = "PATCHWARDEN_SEED"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an environment variable a runner sets (None: it can)."""
    if not _ENV_NAME.fullmatch(name):
        return f"seed_env must be an environment variable name, got {name!r}"
    return None
