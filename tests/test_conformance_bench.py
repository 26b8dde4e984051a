"""How bench/conformance.py reads a project's own pytest and compares the scorer's records
with it (docs/design/isolated-oracle.md, "Conformance"): in memory, no run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from conformance import ProjectResult, Row, classify, own_status  # noqa: E402
from conformance_corpus import PROJECTS  # noqa: E402


def _rows(*phases: tuple[str, str, bool]) -> list[dict[str, Any]]:
    return [{"when": w, "outcome": o, "wasxfail": x, "text": ""} for w, o, x in phases]


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        (
            [("setup", "passed", False), ("call", "passed", False), ("teardown", "passed", False)],
            "passed",
        ),
        (
            [("setup", "passed", False), ("call", "failed", False), ("teardown", "passed", False)],
            "failed",
        ),
        ([("setup", "failed", False), ("teardown", "passed", False)], "error"),
        (
            [("setup", "passed", False), ("call", "passed", False), ("teardown", "failed", False)],
            "error",
        ),
        ([("setup", "skipped", False), ("teardown", "passed", False)], "skipped"),
        (
            [("setup", "passed", False), ("call", "skipped", True), ("teardown", "passed", False)],
            "xfailed",
        ),
        (
            [("setup", "passed", False), ("call", "passed", True), ("teardown", "passed", False)],
            "xpassed",
        ),
    ],
)
def test_own_status_reads_the_phases_as_pytest_summarises_them(
    phases: list[tuple[str, str, bool]], expected: str
) -> None:
    assert own_status(_rows(*phases)) == expected


@pytest.mark.parametrize(
    ("own", "status", "witness", "isolation", "expected"),
    [
        ("passed", "pass", "", "isolated", "agree"),
        ("passed", "fail", "t0001|AssertionError|tests/t.py:3", "isolated", "disagree"),
        ("failed", "fail", "t0001|AssertionError|tests/t.py:3", "isolated", "agree"),
        ("error", "fail", "t0001|FixtureLookupError|setup:x", "isolated", "agree"),
        ("failed", "pass", "", "isolated", "disagree"),
        # A skip agrees only with the scorer's own "skipped", never with a failure.
        ("skipped", "fail", "t0001|Skipped|setup", "isolated", "agree"),
        ("skipped", "fail", "t0001|TypeError|tests/t.py:9", "isolated", "disagree"),
        ("failed", "fail", "t0001|Skipped|setup", "isolated", "disagree"),
        ("xfailed", "fail", "t0001|XFailed|tests/t.py", "isolated", "agree"),
        ("xfailed", "fail", "t0001|AssertionError|tests/t.py:3", "isolated", "disagree"),
        ("passed", "missing", "", "", "disagree"),
        (
            "passed",
            "fail",
            "t0001|Err|x",
            "in-process: its test module is inside",
            "fallback: its test module is inside",
        ),
    ],
)
def test_classify(own: str, status: str, witness: str, isolation: str, expected: str) -> None:
    assert classify(own, status, witness, isolation) == expected


def test_counts_keep_fallback_reasons_and_incomplete_runs_apart() -> None:
    result = ProjectResult("p", "1")
    for iso in ("agree", "disagree", "fallback: why", "fallback: why", "incomplete: timed out"):
        result.tests.append(Row("n", "passed", "pass", "pass", "agree", iso))
    assert result.counts("isolated") == {
        "tests": 5,
        "agree": 1,
        "fallback": 2,
        "fallback_reasons": {"why": 2},
        "disagree": 1,
        "incomplete": 1,
    }
    assert result.counts("in-process")["agree"] == 5


def test_the_corpus_holds_twenty_projects_pinned_by_sha256() -> None:
    assert len(PROJECTS) >= 20
    assert len({p.name for p in PROJECTS}) == len(PROJECTS)
    for project in PROJECTS:
        assert len(project.sha256) == 64 and int(project.sha256, 16) >= 0


def _tar(path: Path, links: dict[str, str]) -> Path:
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as archive:
        data = b"text"
        info = tarfile.TarInfo("pkg-1/README.md")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
        for name, target in links.items():
            link = tarfile.TarInfo(name)
            link.type = tarfile.SYMTYPE
            link.linkname = target
            archive.addfile(link)
    return path


def test_an_sdist_link_inside_the_release_is_kept_and_one_out_of_it_refused(
    tmp_path: Path,
) -> None:
    from fidelity._sdist import SdistError, unpack

    inside = _tar(tmp_path / "in.tar.gz", {"pkg-1/README.rst": "README.md"})
    root = unpack(inside, tmp_path / "a")
    assert (root / "README.rst").read_text() == "text"
    outside = _tar(tmp_path / "out.tar.gz", {"pkg-1/README.rst": "../../etc/passwd"})
    with pytest.raises(SdistError) as refused:
        unpack(outside, tmp_path / "b")
    assert str(refused.value) == "refusing archive link 'pkg-1/README.rst' out of it"
