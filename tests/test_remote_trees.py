"""What a Ray worker does before it runs a unit, without Ray: fetch the tree's commits from the
operator's URL and check the rebuilt tree's digest; write the held-out files once, read-only,
and check their digest (scorer/executors/_ray.py, _held_out_files.py). Fast: git only; the
same paths through a local Ray are in tests/test_score_batch.py."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import git
import pytest

from patchwarden.sandbox import GitError, fetch_from_url, open_repo
from patchwarden.sandbox._git import FETCHED_REFS, shown_url
from patchwarden.scorer import HeldOutError, InputError, ScorerConfig
from patchwarden.scorer._batch import read_requests, with_fetch_urls
from patchwarden.scorer.executors import TreeSource, rebuilt_tree, tree_digest
from patchwarden.scorer.executors._held_out_files import (
    HELD_OUT_ROOT,
    held_out_on_worker,
    pack_held_out,
)
from patchwarden.scorer.executors._ray import WorkerTrees

CONTRACT_PATHS = ("contract", "tests/properties", "tests/fixtures")


def _bare(source: Path, dest: Path, *refs: str) -> str:
    """A bare repository at ``dest`` holding ``refs`` of ``source`` (all when none); its
    file:// URL. Pushed, not cloned, so it has no object it was not given."""
    subprocess.run(["git", "init", "-q", "--bare", str(dest)], check=True)
    refspecs = [f"{ref}:refs/heads/{ref}" for ref in refs] or ["refs/tags/*:refs/tags/*"]
    subprocess.run(["git", "-C", str(source), "push", "-q", str(dest), *refspecs], check=True)
    return f"file://{dest}"


def _source(repo: git.Repo, patch: str, *, url: str, digest: str = "") -> TreeSource:
    return TreeSource(
        repo_key="orders",
        clone=Path(repo.git_dir),
        sha=repo.commit(patch).hexsha,
        restore_from=repo.commit("base").hexsha,
        contract_paths=CONTRACT_PATHS,
        protected_paths=(),
        digest=digest,
        fetch_url=url,
    )


def _planned_digest(repo: git.Repo, source: TreeSource, state: Path) -> str:
    with rebuilt_tree(repo, source, ScorerConfig(state_dir=str(state))) as tree:
        return tree_digest(tree)


def test_a_worker_fetches_the_commits_from_the_url_and_rebuilds_the_planned_tree(
    example_repo: Path, tmp_path: Path
) -> None:
    repo = git.Repo(example_repo)
    url = _bare(example_repo, tmp_path / "served.git")
    planned = _source(repo, "patch-fix", url=url)
    served = git.Repo(tmp_path / "served.git")  # the plan's clone: the user's repo stays as is
    planned = _source(repo, "patch-fix", url=url, digest=_planned_digest(served, planned, tmp_path))
    worker = WorkerTrees(str(tmp_path / "worker"))
    tree = worker.tree_for(planned, ())
    assert tree is not None and tree_digest(tree) == planned.digest
    clone = open_repo(tmp_path / "worker" / "worker-clones" / "orders")
    fetched = {ref.path for ref in clone.refs}
    assert fetched == {f"{FETCHED_REFS}/{planned.sha}", f"{FETCHED_REFS}/{planned.restore_from}"}


def test_a_url_tree_with_other_bytes_than_planned_is_not_run(
    example_repo: Path, tmp_path: Path
) -> None:
    """The URL's repository has the commits, but the tree they rebuild is not the plan's
    (here: the plan was of another patch): the worker gets no tree, the unit fails closed."""
    repo = git.Repo(example_repo)
    url = _bare(example_repo, tmp_path / "served.git")
    served = git.Repo(tmp_path / "served.git")
    other = _planned_digest(served, _source(repo, "patch-regression", url=url), tmp_path)
    assert (
        WorkerTrees(str(tmp_path / "worker")).tree_for(
            _source(repo, "patch-fix", url=url, digest=other), ()
        )
        is None
    )


def test_a_url_without_the_commit_or_unreachable_is_one_line_naming_it(
    example_repo: Path, tmp_path: Path
) -> None:
    repo = git.Repo(example_repo)
    url = _bare(example_repo, tmp_path / "base-only.git", "base")
    clone = git.Repo.init(tmp_path / "worker.git", bare=True)
    patch = repo.commit("patch-fix").hexsha
    with pytest.raises(GitError) as missing:
        fetch_from_url(clone, url, [patch])
    message = str(missing.value)
    assert "\n" not in message and f"git fetch {url}: " in message and "not our ref" in message
    fetch_from_url(clone, url, [repo.commit("base").hexsha])  # what it has, it serves
    nowhere = f"file://{tmp_path / 'nowhere.git'}"
    with pytest.raises(GitError, match=f"git fetch {nowhere}: .*does not appear to be a git"):
        fetch_from_url(clone, nowhere, [patch])
    with pytest.raises(GitError, match="must not start with '-'"):
        fetch_from_url(clone, "--upload-pack=touch /tmp/x", [patch])


def test_a_password_in_a_fetch_url_is_not_shown() -> None:
    assert shown_url("https://bot:s3cret@git.example:8443/o/r.git") == (
        "https://***@git.example:8443/o/r.git"
    )
    assert shown_url("https://ghp_T0KEN@git.example/o/r.git") == "https://***@git.example/o/r.git"
    assert shown_url("ssh://git:pw@git.example/o/r.git") == "ssh://git:***@git.example/o/r.git"
    assert shown_url("ssh://git@git.example/o/r.git") == "ssh://git@git.example/o/r.git"
    # A token alone in an ssh URL's user part is a secret like any other.
    assert shown_url("ssh://glpat-T0KEN@git.example/o/r.git") == "ssh://***@git.example/o/r.git"
    assert shown_url("ssh://deploy:pw@git.example:22/o/r.git") == "ssh://***@git.example:22/o/r.git"
    assert shown_url("file:///srv/r.git") == "file:///srv/r.git"


def test_fetch_urls_come_from_the_line_or_the_repository_mapping(tmp_path: Path) -> None:
    lines = [
        {"id": "a", "repo": "one", "parent": "p", "patch": "q"},
        {"id": "b", "repo": "one", "parent": "p", "patch": "q", "fetch_url": "file:///own"},
        {"id": "c", "repo": "two", "parent": "p", "patch": "q"},
        {"id": "d", "repo": "two", "parent": "p", "patch": "q", "fetch_url": "--upload-pack=x"},
    ]
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    requests, errors = read_requests(path)
    assert [e.error for e in errors] == [
        f"{path}:4: fetch_url: a git URL of one word, not starting with '-'"
    ]
    mapped = with_fetch_urls(requests, {tmp_path / "one": "https://git.example/one.git"})
    assert [(r.id, r.fetch_url) for r in mapped] == [
        ("a", "https://git.example/one.git"),
        ("b", "file:///own"),
        ("c", None),
    ]
    with pytest.raises(
        InputError, match=f"--fetch-url: no request names the repository {tmp_path}/three"
    ):
        with_fetch_urls(requests, {tmp_path / "three": "file:///x"})


def _held_out_dir(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "held-out.yaml").write_text("properties: []\n")
    (root / "test_h.py").write_text("def test_h():\n    assert True\n")
    (root / "data" / "run.sh").write_text("#!/bin/sh\n")
    (root / "data" / "run.sh").chmod(0o755)
    return root


def test_held_out_files_are_written_once_read_only_and_checked_before_use(
    tmp_path: Path,
) -> None:
    source = _held_out_dir(tmp_path / "held")
    files = pack_held_out(source)
    assert files.digest == tree_digest(source)
    state = tmp_path / "state"
    copy = held_out_on_worker(state, files)
    assert copy.parent == state / HELD_OUT_ROOT and tree_digest(copy) == files.digest
    modes = {
        p.relative_to(copy).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in copy.rglob("*")
    }
    assert modes == {
        "held-out.yaml": 0o444,
        "test_h.py": 0o444,
        "data": 0o555,
        "data/run.sh": 0o555,
    }
    assert stat.S_IMODE(copy.stat().st_mode) == 0o555
    assert held_out_on_worker(state, files) == copy  # written once
    assert [p.name for p in copy.parent.iterdir()] == [copy.name]  # no staging left behind
    # Whoever changes the node's copy, the next unit does not run with it.
    copy.chmod(0o755)
    (copy / "test_h.py").chmod(0o644)
    (copy / "test_h.py").write_text("def test_h():\n    assert False\n")
    with pytest.raises(HeldOutError, match="does not match its digest; not run"):
        held_out_on_worker(state, files)


def test_a_held_out_link_is_not_shipped(tmp_path: Path) -> None:
    source = _held_out_dir(tmp_path / "held")
    (source / "secrets").symlink_to("/etc")
    with pytest.raises(HeldOutError, match="held-out file secrets is a symbolic link"):
        pack_held_out(source)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fetch-url", "r=file:///x"], "score-batch: --fetch-url needs --executor ray"),
        (
            ["--executor", "ray", "--fetch-url", "r"],
            "--fetch-url: expected REPO=URL (a URL of one word, not starting with '-'), got 'r'",
        ),
        (
            ["--executor", "ray", "--fetch-url", "elsewhere=file:///x"],
            "--fetch-url: no request names the repository {cwd}/elsewhere",
        ),
    ],
)
def test_a_bad_fetch_url_option_is_one_line_exit_2_before_anything_starts(
    tmp_path: Path, args: list[str], message: str
) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"id": "a", "repo": "r", "parent": "p", "patch": "q"}) + "\n")
    proc = subprocess.run(
        ["patchwarden", "score-batch", str(requests), "--log-dir", str(tmp_path / "logs"), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"patchwarden: error: {message.format(cwd=tmp_path)}\n"
