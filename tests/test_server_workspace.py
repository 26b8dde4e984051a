"""The agent worktree and the server's git operations (server/_workspace.py), on a real repo.

No sandbox is needed: these tests play the part of a sandboxed run by
changing the worktree directly, including what a run must never achieve
(a replaced .git file pointing git at hooks and an fsmonitor command).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import git
import pytest

from patchwarden.sandbox import ConfigError
from patchwarden.server import ToolInputError
from patchwarden.server._paths import PathPolicy
from patchwarden.server._workspace import AGENT_EMAIL, AGENT_NAME, open_workspace

CONTRACT_PATHS = (
    "contract/differential-contract.yaml",
    "tests/properties",
    "tests/fixtures/manifest.json",
    ".freeze",
)


@pytest.fixture
def repo(example_repo: Path, tmp_path: Path) -> Path:
    clone = tmp_path / "orders"
    subprocess.run(
        [
            "git",
            "-c",
            "core.hooksPath=/dev/null",
            "clone",
            "--quiet",
            str(example_repo),
            str(clone),
        ],
        check=True,
    )
    return clone


def _base(repo: Path) -> str:
    return git.Repo(repo).commit("origin/main").hexsha


def _status(repo: Path) -> tuple[str, str]:
    r = git.Repo(repo)
    return r.head.commit.hexsha, r.git.status("--porcelain", "--untracked-files=all")


def test_worktree_is_outside_the_repo_and_leaves_it_alone(repo: Path, tmp_path: Path) -> None:
    before = _status(repo)
    with open_workspace(repo, _base(repo), tmp_path / "state") as ws:
        assert not ws.tree.is_relative_to(repo)
        assert (ws.tree / "orders" / "total.py").is_file()
        assert (tmp_path / "state").stat().st_mode & 0o777 == 0o700
        (ws.tree / "orders" / "total.py").write_text("changed\n")
        ws.commit("a patch")
        assert _status(repo) == before
        assert str(ws.tree) in git.Repo(repo).git.worktree("list")
    assert str(ws.tree) not in git.Repo(repo).git.worktree("list")
    assert not ws.tree.exists()
    assert _status(repo) == before


def test_diff_includes_new_files_but_not_caches(repo: Path, tmp_path: Path) -> None:
    with open_workspace(repo, _base(repo), tmp_path / "state") as ws:
        assert ws.diff().text == ""
        (ws.tree / "orders" / "extra.py").write_text("VALUE = 1\n")
        (ws.tree / "orders" / "__pycache__").mkdir()
        (ws.tree / "orders" / "__pycache__" / "total.cpython-311.pyc").write_bytes(b"\0")
        (ws.tree / ".pytest_cache").mkdir()
        (ws.tree / ".pytest_cache" / "x").write_text("x")
        (ws.tree / "tests" / "test_unit.py").unlink()
        result = ws.diff()
    assert {(f.path, f.change) for f in result.files} == {
        ("orders/extra.py", "added"),
        ("tests/test_unit.py", "deleted"),
    }
    assert "+VALUE = 1" in result.text
    assert "__pycache__" not in result.text and ".pytest_cache" not in result.text


def test_each_submission_is_a_commit_on_the_base(repo: Path, tmp_path: Path) -> None:
    base = _base(repo)
    with open_workspace(repo, base, tmp_path / "state") as ws:
        with pytest.raises(ToolInputError, match="nothing to submit"):
            ws.commit("empty")
        (ws.tree / "a.txt").write_text("1\n")
        first = ws.commit("first")
        (ws.tree / "b.txt").write_text("2\n")
        second = ws.commit("second")
        session = ws.session_id
    r = git.Repo(repo)
    for sha in (first, second):
        commit = r.commit(sha)
        assert [p.hexsha for p in commit.parents] == [base]
        assert (commit.author.name, commit.author.email) == (AGENT_NAME, AGENT_EMAIL)
        assert (commit.committer.name, commit.committer.email) == (AGENT_NAME, AGENT_EMAIL)
    assert set(r.commit(second).stats.files) == {"a.txt", "b.txt"}
    assert r.git.rev_parse(f"refs/patchwarden/{session}/2") == second


def test_hooks_and_a_replaced_git_file_never_run(repo: Path, tmp_path: Path) -> None:
    """The user's hooks, and a .git file a test run replaced with its own config, stay inert."""
    marker = tmp_path / "hook-ran"
    hook = f"#!/bin/sh\ntouch {marker}\n"
    user_hooks = repo / ".git" / "hooks"
    for name in ("pre-commit", "post-checkout", "post-commit", "commit-msg"):
        (user_hooks / name).write_text(hook)
        (user_hooks / name).chmod(0o755)
    git.Repo(repo).git.config("core.hooksPath", str(user_hooks))
    with open_workspace(repo, _base(repo), tmp_path / "state") as ws:
        evil = ws.tree / ".githooks"
        evil.mkdir()
        (evil / "pre-commit").write_text(hook)
        (evil / "pre-commit").chmod(0o755)
        (ws.tree / ".git").unlink()
        (ws.tree / ".git").mkdir()
        (ws.tree / ".git" / "config").write_text(
            f"[core]\n\thooksPath = .githooks\n\tfsmonitor = touch {marker}\n"
        )
        (ws.tree / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        ws.diff()
        sha = ws.commit("with hooks")
    assert not marker.exists()
    assert ".githooks/pre-commit" in git.Repo(repo).commit(sha).stats.files
    assert str(ws.tree) not in git.Repo(repo).git.worktree("list")


def test_nested_git_directory_is_refused(repo: Path, tmp_path: Path) -> None:
    with open_workspace(repo, _base(repo), tmp_path / "state") as ws:
        (ws.tree / "vendor" / ".git").mkdir(parents=True)
        with pytest.raises(ToolInputError, match=r"\.git entry"):
            ws.commit("nested")


@pytest.mark.parametrize(
    ("worktree", "outside", "message"),
    [
        ("repo/inside", None, "outside the repository"),
        ("wt", "wt/logs", "must not be inside the agent worktree"),
    ],
)
def test_misplaced_directories_are_refused(
    repo: Path, tmp_path: Path, worktree: str, outside: str | None, message: str
) -> None:
    where = {"repo": repo}
    tree = where.get(worktree.split("/")[0], tmp_path) / worktree.split("/", 1)[-1]
    stay_out = [tmp_path / outside] if outside else []
    with (
        pytest.raises(ConfigError, match=message),
        open_workspace(
            repo,
            _base(repo),
            tmp_path / "state",
            worktree_dir=tree,
            must_stay_outside=stay_out,
        ),
    ):
        pass


# -- apply_patch --------------------------------------------------------------

TOTAL_PATCH = """\
diff --git a/orders/total.py b/orders/total.py
--- a/orders/total.py
+++ b/orders/total.py
@@ -9,3 +9,3 @@ from decimal import ROUND_HALF_UP, Decimal
 CENT = Decimal("0.01")
-BULK_MIN_QTY = 10
+BULK_MIN_QTY = 12
 BULK_FACTOR = 0.95
"""

NEW_FILE_P0 = """\
--- /dev/null
+++ orders/new_module.py
@@ -0,0 +1,2 @@
+def helper():
+    return 1
"""


def _contract_patch(path: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        "@@ -0,0 +1 @@\n+x\n"
    )


@pytest.fixture
def workspace_and_policy(repo: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    with open_workspace(repo, _base(repo), tmp_path / "state") as ws:
        yield ws, PathPolicy(ws.tree, read_only=CONTRACT_PATHS)


def test_apply_patch_applies_git_and_plain_diffs(workspace_and_policy) -> None:  # type: ignore[no-untyped-def]
    ws, policy = workspace_and_policy
    changes = ws.apply_patch(TOTAL_PATCH, policy)
    assert [(c.path, c.change) for c in changes] == [("orders/total.py", "modified")]
    assert "BULK_MIN_QTY = 12" in (ws.tree / "orders" / "total.py").read_text()
    changes = ws.apply_patch(NEW_FILE_P0, policy)
    assert [(c.path, c.change) for c in changes] == [("orders/new_module.py", "added")]


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (_contract_patch("contract/differential-contract.yaml"), "contract path"),
        (_contract_patch("tests/properties/test_new.py"), "contract path"),
        (_contract_patch(".freeze/record.json"), "contract path"),
        (_contract_patch(".git/hooks/pre-commit"), r"\.git"),
        (_contract_patch("sub/.git/config"), r"\.git"),
        (
            "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n"
            "@@ -0,0 +1 @@\n+/etc\n\\ No newline at end of file\n",
            "symbolic links",
        ),
        (
            "diff --git a/orders/total.py b/tests/properties/test_orders.py\n"
            "similarity index 100%\n"
            "rename from orders/total.py\nrename to tests/properties/test_orders.py\n",
            "contract path",
        ),
        (
            "--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
            "not a valid patch|'..'",
        ),
        ("this is not a diff\n", "no file changes|not a valid patch"),
        ("", "empty"),
        (TOTAL_PATCH.replace("BULK_MIN_QTY = 10", "BULK_MIN_QTY = 99"), "does not apply"),
    ],
)
def test_apply_patch_refusals(workspace_and_policy, patch: str, message: str) -> None:  # type: ignore[no-untyped-def]
    ws, policy = workspace_and_policy
    before = ws.diff().text
    with pytest.raises(ToolInputError, match=message):
        ws.apply_patch(patch, policy)
    assert ws.diff().text == before


def test_apply_patch_refuses_paths_through_links(workspace_and_policy) -> None:  # type: ignore[no-untyped-def]
    ws, policy = workspace_and_policy
    os.symlink("/tmp", ws.tree / "escape")
    with pytest.raises(ToolInputError, match="symbolic link"):
        ws.apply_patch(_contract_patch("escape/evil.txt"), policy)
    assert not Path("/tmp/evil.txt").exists()
