"""Writing a verdict: its evidence bundle (scorer/_bundle.py) and its index line
(scorer/_index.py). Pure file operations, no sandbox."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from patchwarden.scorer import IndexLine, _bundle, read_index
from patchwarden.scorer._bundle import BundleWriter
from patchwarden.scorer._index import append_index


def test_a_verdict_id_in_use_is_drawn_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = iter(
        ["20261201T000000Z-abc-0001", "20261201T000000Z-abc-0001", "20261201T000000Z-abc-0002"]
    )
    monkeypatch.setattr(_bundle, "new_verdict_id", lambda sha: next(ids))  # a clash, on demand
    first = BundleWriter.create(tmp_path, "abc")
    first.write_text("decision.json", "{}\n")
    first.publish(IndexLine(verdict_id=first.verdict_id, bundle=str(first.final)))
    second = BundleWriter.create(tmp_path, "abc")
    assert second.verdict_id == "20261201T000000Z-abc-0002"
    assert (first.final / "decision.json").read_text() == "{}\n"


def test_index_lines_stay_whole_under_concurrent_appends(tmp_path: Path) -> None:
    long_results = [{"prop": f"prop.{n}", "reason": "both_pass" * 20} for n in range(200)]

    def append(n: int) -> None:
        for k in range(10):
            append_index(tmp_path, IndexLine(verdict_id=f"v{n}-{k}", results=long_results))

    threads = [threading.Thread(target=append, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entries = read_index(tmp_path)
    assert sorted(e.verdict_id for e in entries) == sorted(
        f"v{n}-{k}" for n in range(8) for k in range(10)
    )
