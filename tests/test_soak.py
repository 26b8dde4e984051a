"""A short soak (bench/soak.py runs the long one): a hosted server and a warm scorer hold
as many descriptors and processes after their requests as before, and their state
directories and memory do not grow with them.

Real processes throughout: ``serve --hosted`` with two workspaces whose agents keep their
connection and submit, plus connections that come and go (list the tools, diff, leave) on
every round; then ``score --warm`` called one after the other. A leak of one descriptor per
request (submission, connection or ``score`` call) makes the spread of the samples at least
the number of requests between them and fails the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import Sample, build, slope, soak_hosted, soak_warm

pytestmark = pytest.mark.bwrap

STATE_KIB_PER_REQUEST = 4
"""A patch's objects fetched into the scorer's clone are well under 1 KiB here."""
RSS_KIB_PER_REQUEST = 2048
"""Loose: a short run still shows the interpreter's first allocations."""


def _flat(samples: list[Sample]) -> None:
    assert len(samples) >= 3, samples
    fds = [s.fds for s in samples]
    assert max(fds) - min(fds) <= 2, samples
    assert len({s.processes for s in samples}) == 1, samples
    assert slope(samples, "state_kib") <= STATE_KIB_PER_REQUEST, samples
    assert slope(samples, "rss_kib") <= RSS_KIB_PER_REQUEST, samples
    assert slope(samples, "log_kib") > 0  # the verdicts were written: requests were real


def test_a_hosted_server_stays_flat(tmp_path: Path) -> None:
    soaked = build(tmp_path, max_submissions=5)
    samples = soak_hosted(soaked, workspaces=2, submissions=4, every=2, churn=10)
    assert [s.requests for s in samples] == [0, 2, 4]
    _flat(samples)


def test_a_warm_scorer_stays_flat(tmp_path: Path) -> None:
    soaked = build(tmp_path, max_submissions=1)
    samples = soak_warm(soaked, calls=7, every=2, warmup=3)
    assert [s.requests for s in samples] == [3, 5, 7]
    _flat(samples)
