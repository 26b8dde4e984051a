"""A task from a real, published fix that rewrites the test asserting the old behaviour.

parse 1.22.2 ("Fix negative Decimals, parse nan/inf handling for float") changes the
pattern ``{:f}`` compiles to, and rewrites 1.22.1's ``tests/test_pattern.py::test_numbered``,
which asserted the old pattern ``([-+ ]?\\d*\\.\\d+)``. The fix commit is the release-to-release
diff of the two sdists as published (pinned by sha256 in bench/fidelity/corpus.py, fetched from
the package index and cached like the adoption projects'): the trap of docs/design/tasks.md,
on code nobody here wrote.

- An operator who writes the contract by hand on 1.22.1 with ``--guards-for Parser`` gets
  ``test_numbered`` as a guard (it reaches ``Parser`` through the module's helper); ``contract
  check --reference`` names it as a guard that asserts behaviour the fix changes, exit 1.
- ``task from-fix`` on the release commit makes the rewritten test a target instead, and the
  task validates: the reference is a clean accept, the empty patch a reject. A patch that puts
  the old test back (a test-weakening patch) is a reject.

Real sdists, git, bubblewrap and pytest, through the console script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from tests._git_repos import GIT_ENV, commit, operator_config, patchwarden
from tests.adoption._pypi import commit_release, fetch_sdist, git_repo_from_sdist

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from fidelity.corpus import PARSE  # noqa: E402

pytestmark = pytest.mark.bwrap

OLD, NEW = PARSE["1.22.1"], PARSE["1.22.2"]
PROPERTY = """\
from decimal import Decimal

from parse import parse


def test_parse_negative_decimal():
    result = parse("{:F}", "-1.5")
    assert result is not None
    assert result[0] == Decimal("-1.5")
"""
PROPERTY_ID = "tests/properties/test_negative_decimal.py::test_parse_negative_decimal"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("release")
    repo, old = git_repo_from_sdist(fetch_sdist("parse", OLD.version, OLD.sha256), root / "repo")
    fix = commit_release(repo, fetch_sdist("parse", NEW.version, NEW.sha256))
    repo.create_tag("v1.22.2")
    repo.git.checkout("--quiet", "-b", "operator", old)
    config = operator_config(root / "config.yaml", state=root / "state", logs=root / "logs")
    env = {**os.environ, "XDG_STATE_HOME": str(root / "xdg")}
    return {
        "repo": root / "repo",
        "git": repo,
        "old": old,
        "fix": fix,
        "config": config,
        "env": env,
    }


def _run(release: dict[str, object], *args: str) -> subprocess.CompletedProcess[str]:
    return patchwarden(*args, "--config", str(release["config"]), env=release["env"])  # type: ignore[arg-type]


def test_the_release_diff_rewrites_the_test_of_the_old_pattern(release: dict[str, object]) -> None:
    repo: git.Repo = release["git"]  # type: ignore[assignment]
    changed = repo.git.diff("--name-only", release["old"], release["fix"]).splitlines()
    assert changed == [
        "PKG-INFO",
        "README.rst",
        "parse.egg-info/PKG-INFO",
        "parse/__init__.py",
        "tests/test_parse.py",
        "tests/test_pattern.py",
    ]
    old_test = repo.git.show(f"{release['old']}:tests/test_pattern.py")
    assert '_test_expression("{0:f} {1:f}", r"([-+ ]?\\d*\\.\\d+) ([-+ ]?\\d*\\.\\d+)")' in old_test


def test_contract_check_against_the_release_names_the_guard_that_asserts_the_old_pattern(
    release: dict[str, object],
) -> None:
    repo: git.Repo = release["git"]  # type: ignore[assignment]
    commit(repo, {"tests/properties/test_negative_decimal.py": PROPERTY}, "our property")
    init = patchwarden(
        *("contract", "init", "--repo", str(release["repo"]), "--test", PROPERTY_ID),
        *("--guards-for", "Parser"),
        env=release["env"],  # type: ignore[arg-type]
    )
    assert init.returncode == 0, init.stdout + init.stderr
    assert "check the guards against a known-good fix with `contract check --reference REF`" in (
        init.stdout
    )
    contract = (Path(str(release["repo"])) / "contract/differential-contract.yaml").read_text()
    assert 'test: "tests/test_pattern.py::test_numbered"' in contract
    commit(repo, {}, "the contract")
    checked = _run(
        release, "contract", "check", "--repo", str(release["repo"]), "--reference", "v1.22.2"
    )
    assert checked.returncode == 1, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert lines[-1] == (
        f"check failed: guard.numbered fails on the reference {str(release['fix'])[:12]}: "
        "it asserts behaviour the fix changes"
    )
    assert "guards: 15 of 16 pass on every seed of the base and the reference (not shown)" in lines
    # The operator's own property shows the bug on every seed and passes on the reference.
    row = next(line for line in lines if line.startswith("prop.parse_negative_decimal "))
    assert row.count("fail: AssertionError at tests/properties/test_negative_decimal.py:8") == 3
    assert row.endswith("pass")


def test_task_from_the_release_validates_and_rejects_the_old_test_put_back(
    release: dict[str, object],
) -> None:
    done = _run(
        release,
        *("task", "from-fix", "--repo", str(release["repo"]), "--fix", "v1.22.2"),
        *("--name", "parse-1.22.2", "--json"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    task = json.loads(done.stdout)
    assert task["fix"] == release["fix"]
    assert task["parent"] == release["old"]
    assert [(t["id"], t["test"]) for t in task["targets"]] == [
        ("target.numbers", "tests/test_parse.py::test_numbers"),
        ("target.numbered", "tests/test_pattern.py::test_numbered"),
    ]
    # test_datetimes builds a datetime with parse's FixedTzOffset: a guard now, isolated
    # (a product zone is a tzinfo stand-in in the oracle); it used to run in-process.
    assert len(task["guards"]) == 59
    assert "tests/test_parse.py::test_datetimes" in [g["test"] for g in task["guards"]]
    assert [(e["test"], e["why"]) for e in task["excluded"]] == [
        ("tests/test_parse.py::test_too_many_fields", "skipped"),  # skipped on this Python
    ]
    assert task["validation"] == {"reference": "accept", "empty": "reject"}
    assert (task["validated"], task["problem"]) == (True, "")

    repo: git.Repo = release["git"]  # type: ignore[assignment]
    base = repo.commit(task["base"])
    assert base.parents[0].hexsha == release["old"]
    # The base holds the rewritten test (the target) and the buggy product code.
    assert (base.tree / "tests/test_pattern.py").data_stream.read() == repo.commit(
        release["fix"]
    ).tree["tests/test_pattern.py"].data_stream.read()
    assert (base.tree / "parse/__init__.py").data_stream.read() == repo.commit(release["old"]).tree[
        "parse/__init__.py"
    ].data_stream.read()

    # The agent that puts the old test back instead of fixing the pattern.
    repo.git.checkout("--quiet", "--detach", task["base"])
    old_test = repo.git.show(f"{release['old']}:tests/test_pattern.py") + "\n"
    with repo.git.custom_environment(**GIT_ENV):
        commit(repo, {"tests/test_pattern.py": old_test}, "tests: the pattern as it was")
    repo.create_tag("weakened")
    repo.git.checkout("--quiet", "operator")
    scored = _run(
        release,
        *("score", "--repo", str(release["repo"]), "--parent", task["base"]),
        *("--patch", "weakened", "--contract", task["contract"], "--json"),
    )
    assert scored.returncode == 1, scored.stdout + scored.stderr
    verdict = json.loads(scored.stdout)
    assert verdict["decision"] == "reject"
    card = {c["check"]: c["outcome"] for c in verdict["scorecard"]}
    assert (card["contract_tampered"], card["oracle_pin"], card["differential"]) == (
        "reject",
        "reject",
        "reject",
    )
    assert card["test_tampering"] == "review"  # it changes an existing test, not only adds
    assert verdict["results"][:2] == [
        {"prop": "target.numbers", "decision": "reject", "reason": "uniform_fail"},
        {"prop": "target.numbered", "decision": "reject", "reason": "uniform_fail"},
    ]
    assert verdict["decided_by"] == ["uniform_fail", "contract_tampered", "oracle_pin"]
