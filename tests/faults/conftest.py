"""The served sessions the fault tests share, and the summary line printed at the end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from . import tally


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    """An event loop in a thread for the SDK clients of one module."""
    with start_blocking_portal() as portal:
        yield portal


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not tally.FAULTS:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = tally.table_lines(everything=session.config.get_verbosity() > 0)
    if reporter is None:
        print("\n".join([*lines, tally.summary_line()]))
        return
    reporter.write_sep("-", "fault summary")
    for line in lines:
        reporter.write_line(line)
    reporter.write_line(tally.summary_line())
