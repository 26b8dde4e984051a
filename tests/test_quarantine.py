"""``patchwarden quarantine release-check``: ten consecutive clean runs, or the test stays.

Real git and real sandboxed pytest processes, one per run. The test that
fails "later" claims run numbers from a counter directory mounted writable
into the sandbox and fails on its third run.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchwarden.scorer import QuarantineList
from patchwarden.scorer.layers._quarantine import (
    BrokenTest,
    QuarantinedTest,
    ReleaseCheck,
    machine_identity,
    parse_quarantine_list,
)
from tests._git_repos import (
    COUNTER_SOURCE,
    PYPROJECT,
    commit,
    contract_yaml,
    counter_dir,
    init_repo,
    manifest_for,
    operator_config,
    patchwarden,
    write_files,
)

CONTRACT = "contract/differential-contract.yaml"
SUITE = "tests/test_suite.py"
STABLE = f"{SUITE}::test_stable"
THIRD = f"{SUITE}::test_fails_on_third_run"
SUITE_SOURCE = """\
from counter import run_index


def test_stable():
    assert sum([1, 2, 3]) == 6


def test_fails_on_third_run():
    assert run_index() != 2, "the third run fails"
"""


def _entry(test_id: str) -> dict[str, object]:
    return {"test_id": test_id, "failures": 1, "runs": 3, "since": "2026-11-01T09:00:00Z"}


@dataclass
class Setup:
    repo: Path
    config: Path
    env: dict[str, str]
    list_path: Path


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    root = tmp_path_factory.mktemp("quarantine")
    counter = counter_dir(root / "counter")
    repo_path = root / "repo"
    repo = init_repo(repo_path)
    write_files(
        repo_path,
        {
            "pyproject.toml": PYPROJECT,
            "counter.py": COUNTER_SOURCE.format(counter=str(counter)),
            CONTRACT: contract_yaml(
                [7],
                {"prop.sane": "tests/properties/test_oracle.py::test_sane"},
                quarantine_list="ops/quarantine.json",
            ),
            "tests/fixtures/data.json": "[1]\n",
            "tests/properties/test_oracle.py": "def test_sane():\n    assert True\n",
            SUITE: SUITE_SOURCE,
        },
    )
    write_files(
        repo_path,
        {"tests/fixtures/manifest.json": manifest_for(repo_path, {"tests/fixtures/data.json": []})},
    )
    commit(repo, {}, "base")
    list_path = repo_path / "ops" / "quarantine.json"
    list_path.parent.mkdir()
    list_path.write_text(
        json.dumps({"base": "0" * 40, "runs": 3, "tests": [_entry(STABLE), _entry(THIRD)]})
    )
    config = operator_config(
        root / "config.yaml", state=root / "state", logs=root / "logs", writable=(counter,)
    )
    env = {**os.environ, "XDG_STATE_HOME": str(root / "xdg")}
    return Setup(repo_path, config, env, list_path)


def _release(setup: Setup, test_id: str, *extra: str) -> tuple[int, str, str]:
    proc = patchwarden(
        "quarantine",
        "release-check",
        "--repo",
        str(setup.repo),
        "--test-id",
        test_id,
        "--config",
        str(setup.config),
        *extra,
        env=setup.env,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.bwrap
def test_ten_clean_runs_release_the_test_and_record_where(setup: Setup) -> None:
    code, out, err = _release(setup, STABLE)
    assert (code, err) == (0, ""), out
    lines = out.splitlines()
    assert lines[:10] == [f"run {n}/10: clean" for n in range(1, 11)]
    assert lines[10].startswith(f"released: {STABLE} after 10 consecutive clean runs on ")
    listed = parse_quarantine_list(setup.list_path.read_text(), str(setup.list_path))
    assert STABLE not in listed.test_ids()  # back in the agent's loop
    released = [r for r in listed.released if r.test_id == STABLE]
    assert len(released) == 1
    check = released[0].check
    assert (check.required, check.runs, check.clean, check.released) == (10, 10, 10, True)
    assert check.hostname == socket.gethostname()
    assert check.machine_id == machine_identity()[0]
    assert check.at.endswith("Z") and len(check.base) == 40


@pytest.mark.bwrap
def test_the_first_unclean_run_stops_the_check_and_keeps_the_test(setup: Setup) -> None:
    code, out, _ = _release(setup, THIRD)
    assert code == 1
    lines = out.splitlines()
    assert lines[:2] == ["run 1/10: clean", "run 2/10: clean"]
    assert lines[2].startswith(f"run 3/10: exit code 1: {THIRD} failed")
    assert len(lines) == 4  # no fourth run
    assert lines[3].startswith(f"kept in quarantine: {THIRD} (run 3: exit code 1")
    listed = parse_quarantine_list(setup.list_path.read_text(), str(setup.list_path))
    entry = listed.entry(THIRD)
    assert entry is not None and len(entry.release_checks) == 1
    check = entry.release_checks[0]
    assert (check.runs, check.clean, check.released) == (3, 2, False)
    assert check.failure.startswith("run 3: exit code 1")


def test_fewer_than_ten_runs_or_an_unknown_test_is_a_one_line_error(setup: Setup) -> None:
    cases = [
        (STABLE, ["--runs", "5"], "Invalid value for '--runs': 5 is not in the range x>=10."),
        ("tests/test_suite.py::nope", [], "tests/test_suite.py::nope is not quarantined"),
    ]
    for test_id, extra, message in cases:
        code, out, err = _release(setup, test_id, *extra)
        assert (code, out) == (2, "")
        assert err.startswith("patchwarden: error: ") and message in err
        assert len(err.splitlines()) == 1


def test_a_malformed_list_names_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "quarantine.json"
    bad.write_text('{"base": "x",\n "runs": }')
    with pytest.raises(Exception, match=r"quarantine.json:2: not valid JSON"):
        parse_quarantine_list(bad.read_text(), str(bad))
    with pytest.raises(Exception, match=r"tests.0.failures"):
        parse_quarantine_list(
            json.dumps({"base": "x", "runs": 3, "tests": [{**_entry("a"), "failures": -1}]}),
            "q.json",
        )


stamps = st.sampled_from(["2026-11-01T09:00:00Z", "2027-01-31T23:59:59Z"])
ids = st.text(min_size=1, max_size=30)
checks = st.builds(
    ReleaseCheck,
    at=stamps,
    machine_id=st.text(max_size=32),
    hostname=st.text(max_size=20),
    base=st.text(max_size=40),
    required=st.integers(10, 50),
    runs=st.integers(0, 50),
    clean=st.integers(0, 50),
    released=st.booleans(),
    failure=st.text(max_size=40),
)
lists = st.builds(
    QuarantineList,
    base=st.text(max_size=40),
    runs=st.integers(1, 20),
    tests=st.lists(
        st.builds(
            QuarantinedTest,
            test_id=ids,
            failures=st.integers(0, 20),
            runs=st.integers(1, 20),
            since=stamps,
            release_checks=st.lists(checks, max_size=2),
        ),
        max_size=3,
    ),
    broken=st.lists(
        st.builds(BrokenTest, test_id=ids, failures=st.integers(1, 9), runs=st.integers(1, 9)),
        max_size=2,
    ),
    incomplete_runs=st.lists(st.text(max_size=30), max_size=2),
)


@given(lists)
def test_quarantine_list_round_trips(qlist: QuarantineList) -> None:
    assert QuarantineList.model_validate_json(qlist.model_dump_json()) == qlist
