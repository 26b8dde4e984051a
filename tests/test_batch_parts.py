"""The parts of ``score-batch`` that need no sandbox: reading requests, shared runs, thin git
bundles. Fast; the real batch is in tests/test_score_batch.py, writing a verdict in
tests/test_bundle.py."""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path

import git
import pytest

from patchwarden.sandbox import (
    GitError,
    Limits,
    ProcessResult,
    PropertyRun,
    PropertyTarget,
    bundle_commits,
    empty_clone,
    fetch_commits,
)
from patchwarden.scorer._batch import SharedRuns, read_requests
from patchwarden.scorer.executors import Executor, RunOutcome, RunUnit, tree_digest


def _results(tmp_path: Path, text: str) -> tuple[list, list]:
    path = tmp_path / "requests.jsonl"
    path.write_text(text)
    return read_requests(path)


def test_each_bad_line_is_one_error_naming_file_and_line(tmp_path: Path) -> None:
    good = {"id": "a", "repo": "r", "parent": "p", "patch": "q"}
    lines = [
        json.dumps(good),
        "[1, 2]",
        json.dumps({**good, "id": "b", "patch": ""}),
        json.dumps({**good, "id": "c", "colour": "red"}),
        json.dumps({**good, "id": "bad\nid"}),
        json.dumps({"repo": "r", "parent": "p", "patch": "q"}),
        json.dumps(good),
        json.dumps({**good, "id": "h", "held_out": "/srv/held-out"}),
        "",
        json.dumps({**good, "id": "d", "contract": "c.yaml"}),
    ]
    requests, errors = _results(tmp_path, "\n".join(lines) + "\n")
    where = tmp_path / "requests.jsonl"
    assert [(r.id, r.line, r.repo, r.contract, r.held_out) for r in requests] == [
        ("a", 1, tmp_path / "r", "contract/differential-contract.yaml", None),
        ("h", 8, tmp_path / "r", "contract/differential-contract.yaml", "/srv/held-out"),
        ("d", 10, tmp_path / "r", "c.yaml", None),
    ]
    assert [(e.line, e.id, e.error) for e in errors] == [
        (2, None, f"{where}:2: not a JSON object"),
        (3, "b", f"{where}:3: patch: String should have at least 1 character"),
        (4, "c", f"{where}:4: colour: unknown key"),
        (5, "bad\nid", f"{where}:5: id: String should match pattern '^[^\\x00-\\x1f\\x7f]+$'"),
        (6, None, f"{where}:6: id: missing"),
        (7, "a", f"{where}:7: duplicate id 'a' (first on line 1)"),
    ]
    assert errors[0].to_json() == {"id": None, "error": f"{where}:2: not a JSON object", "line": 2}


def test_a_task_gives_the_parent_and_the_contract(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "t1.json").write_text(
        json.dumps({"name": "t1", "base": "b" * 40, "contract": "contract/task.yaml"})
    )
    (tmp_path / "tasks" / "junk.json").write_text(json.dumps({"base": 1}))
    lines = [
        {"id": "a", "repo": "r", "task": "brackets", "patch": "q"},
        {"id": "b", "repo": "r", "task": "refs/heads/patchwarden/tasks/x/y", "patch": "q"},
        {"id": "c", "repo": "r", "task": "tasks/t1.json", "patch": "q"},
        {"id": "d", "repo": "r", "task": "brackets", "parent": "p", "patch": "q"},
        {"id": "e", "repo": "r", "patch": "q"},
        {"id": "f", "repo": "r", "task": "tasks/junk.json", "patch": "q"},
        {"id": "g", "repo": "r", "task": "tasks/none.json", "patch": "q"},
    ]
    requests, errors = _results(tmp_path, "".join(json.dumps(x) + "\n" for x in lines))
    where = tmp_path / "requests.jsonl"
    assert [(r.id, r.parent, r.contract) for r in requests] == [
        ("a", "patchwarden/tasks/brackets/base", "contract/differential-contract.yaml"),
        ("b", "patchwarden/tasks/x/y/base", "contract/differential-contract.yaml"),
        ("c", "b" * 40, "contract/task.yaml"),
    ]
    junk, missing = tmp_path / "tasks" / "junk.json", tmp_path / "tasks" / "none.json"
    assert [(e.id, e.error) for e in errors] == [
        ("d", f"{where}:4: task: the task gives the parent; give one of parent and task"),
        ("e", f"{where}:5: parent: missing (or name a task)"),
        ("f", f"{where}:6: task: {junk} is not a task file of `task from-fix --json`"),
        ("g", f"{where}:7: task: cannot read the task file {missing}: No such file or directory"),
    ]


class _StubExecutor(Executor):
    """Stands in for a real executor: the fault it causes (a tree that changes while its
    run is read-only mounted) cannot be caused through the sandbox."""

    name = "stub"

    def __init__(self, change_tree: bool = False, fail: bool = False) -> None:
        self.submitted: list[RunUnit] = []
        self.change_tree = change_tree
        self.fail = fail

    @property
    def jobs(self) -> int:
        return 1

    def submit(self, unit: RunUnit) -> Future[RunOutcome]:
        self.submitted.append(unit)
        future: Future[RunOutcome] = Future()
        if self.fail:
            future.set_exception(RuntimeError("the run could not start"))
            return future
        if self.change_tree:
            (unit.tree / "module.py").write_text("changed = True\n")
        process = ProcessResult((), 0, None, "", "", False, False, False, False, 0.1, "stub")
        run = PropertyRun(unit.seed, [], [], True, [], [], process)
        future.set_result(RunOutcome(run=run))
        return future

    def close(self) -> None:
        pass


def _unit(tree: Path, seed: int = 11, label: str = "r1") -> RunUnit:
    return RunUnit(
        label=label,
        tree_name="parent",
        seed=seed,
        tree=tree,
        targets=(PropertyTarget("prop.a", "tests/test_a.py::test_a"),),
        contract_paths=("contract",),
        limits=Limits(),
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "module.py").write_text("changed = False\n")
    return root


def test_units_with_the_same_inputs_run_once(tree: Path, tmp_path: Path) -> None:
    executor = _StubExecutor()
    ran: list[str] = []
    shared = SharedRuns(executor, on_unit=lambda unit: ran.append(unit.label))
    digest = tree_digest(tree)
    copy = tmp_path / "copy"  # another request's tree with the same bytes
    copy.mkdir()
    (copy / "module.py").write_text("changed = False\n")
    first = shared.submit(_unit(tree, label="r1"), digest)
    second = shared.submit(_unit(copy, label="r2"), tree_digest(copy))
    other_seed = shared.submit(_unit(tree, seed=29), digest)
    assert second is first
    assert other_seed is not first
    assert len(executor.submitted) == 2
    assert ran == ["r1", "r1"]
    assert first.result().run_id == second.result().run_id
    assert first.result().drift == ()


def test_a_shared_tree_that_changed_during_its_run_is_reported(tree: Path) -> None:
    shared = SharedRuns(_StubExecutor(change_tree=True), on_unit=None)
    outcome = shared.submit(_unit(tree), tree_digest(tree)).result()
    assert outcome.drift == ("parent: the tree changed during the run (seed 11)",)


def test_a_failed_run_is_not_handed_out_again(tree: Path) -> None:
    executor = _StubExecutor(fail=True)
    shared = SharedRuns(executor, on_unit=None)
    digest = tree_digest(tree)
    first = shared.submit(_unit(tree), digest)
    assert isinstance(first.exception(), RuntimeError)
    executor.fail = False
    again = shared.submit(_unit(tree), digest)
    assert again is not first and again.result().drift == ()
    assert len(executor.submitted) == 2


def test_tree_digest_sees_bytes_modes_and_links_but_not_dot_git(tree: Path) -> None:
    before = tree_digest(tree)
    (tree / ".git").write_text("gitdir: /somewhere/else\n")
    assert tree_digest(tree) == before
    (tree / "module.py").chmod(0o755)
    executable = tree_digest(tree)
    assert executable != before
    (tree / "link").symlink_to("module.py")
    assert tree_digest(tree) != executable


def test_a_thin_bundle_on_top_of_its_base_rebuilds_the_patch(
    example_repo: Path, tmp_path: Path
) -> None:
    """The Ray executor's transport without Ray: a base bundle, then the patch's own commits
    as a thin bundle, fetched into an empty clone in that order (scorer/executors/_ray.py)."""
    repo = git.Repo(example_repo)
    parent, patch = repo.commit("patch-fix").hexsha, repo.commit("patch-fix-docs").hexsha
    base, thin = tmp_path / "base.bundle", tmp_path / "thin.bundle"
    bundle_commits(repo, [parent], base)
    bundle_commits(repo, [patch], thin, exclude=[parent])
    assert thin.stat().st_size < base.stat().st_size
    clone = empty_clone(tmp_path / "worker" / "clone")
    with pytest.raises(GitError, match=r"prerequisite|lacks"):
        fetch_commits(clone, thin, [patch])  # the thin bundle alone is not enough
    fetch_commits(clone, base, [parent, patch])
    fetch_commits(clone, thin, [parent, patch])
    assert clone.commit(patch).tree.hexsha == repo.commit(patch).tree.hexsha
