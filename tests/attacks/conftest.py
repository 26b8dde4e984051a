"""The attack lab fixture and the summary line printed when the session ends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from . import tally
from .lab import AttackLab


@pytest.fixture(scope="session")
def attack_lab(
    example_repo: Path, scorer_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AttackLab]:
    """One clone of the example, one commit per case, each scored at most once."""
    lab = AttackLab(tmp_path_factory.mktemp("attacks"), example_repo, scorer_env)
    yield lab
    lab.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the per-case table (failures only unless -v) and the computed summary line."""
    if not tally.ENTRIES:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    verbose = session.config.get_verbosity() > 0
    lines = tally.table_lines(everything=verbose)
    if reporter is None:
        print("\n".join([*lines, tally.summary_line()]))
        return
    reporter.write_sep("-", "attack summary")
    for line in lines:
        reporter.write_line(line)
    reporter.write_line(tally.summary_line())
