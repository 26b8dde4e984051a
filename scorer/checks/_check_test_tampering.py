"""``test_tampering``: the patch changes a protected path or pyproject's pytest tables.

The protected paths are restored from the parent before the runs, so the finding only
makes the change visible; its outcome is the operator's (``scorer.test_tampering``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path

from ._base import BeforeRuns, Change, Check, Outcome, Severity, found, matches
from ._context import PlanContext

PYPROJECT = "pyproject.toml"


def pytest_section(text: str | None) -> object:
    """pyproject's ``[tool.pytest*]`` tables; a file that does not parse counts as changed."""
    if text is None:
        return None
    try:
        tool = tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return ("unparsable", text)
    return {key: value for key, value in tool.items() if key.startswith("pytest")}


def check_test_tampering(
    changes: Sequence[Change],
    protected: Sequence[str],
    severity: Outcome,
    pyproject: tuple[str | None, str | None] = (None, None),
) -> Check:
    """Protected paths the patch changes, and pyproject.toml's pytest section
    (``pyproject`` is the file's text in the parent and in the patch)."""
    hits = [f"{c.status} {c.path}" for c in changes if matches(c.path, protected)]
    if pytest_section(pyproject[0]) != pytest_section(pyproject[1]):
        hits.append(f"M {PYPROJECT} [tool.pytest]")
    return found("test_tampering", hits, when=severity)


def _read_text(tree: Path, rel: str) -> str | None:
    path = tree / rel
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def _run(context: PlanContext) -> Check:
    config, trees = context.config, context.trees
    return check_test_tampering(
        context.changes,
        config.protected_paths,
        config.test_tampering,
        pyproject=(_read_text(trees["parent"], PYPROJECT), _read_text(trees["patch"], PYPROJECT)),
    )


TEST_TAMPERING = BeforeRuns("test_tampering", _run, severity=Severity("test_tampering"))
