"""The path policy behind every file tool (server/_paths.py), table-driven, on a real tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchwarden.server import ToolInputError
from patchwarden.server._paths import PathPolicy, split_path

CONTRACT_PATHS = ("contract/differential-contract.yaml", "tests/properties", ".freeze")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "tests" / "properties").mkdir(parents=True)
    (root / "tests" / "properties" / "test_p.py").write_text("def test(): pass\n")
    (root / "contract").mkdir()
    (root / "contract" / "differential-contract.yaml").write_text("seeds: [1]\n")
    (root / ".git").write_text("gitdir: /elsewhere\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    os.symlink("/etc", root / "etc_link")
    os.symlink("../../..", root / "pkg" / "up_link")
    os.symlink(str(outside), root / "abs_dir_link")
    os.symlink("../outside/secret.txt", root / "rel_escape")
    os.symlink("pkg/mod.py", root / "inner_link")
    os.symlink("pkg", root / "inner_dir_link")
    os.symlink(".git", root / "git_link")
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.mkfifo(root / "fifo")
    (root / "big.txt").write_bytes(b"x" * 2000)
    return root


@pytest.fixture
def policy(tree: Path) -> PathPolicy:
    return PathPolicy(
        tree, read_only=CONTRACT_PATHS, protected=("pytest.ini",), max_file_bytes=1000
    )


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("a.py", ["a.py"]),
        ("./pkg//mod.py", ["pkg", "mod.py"]),
        ("pkg/", ["pkg"]),
        ("dir.git/x", ["dir.git", "x"]),
        (".gitignore", [".gitignore"]),
    ],
)
def test_split_path_accepts(path: str, parts: list[str]) -> None:
    assert split_path(path) == parts


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "must name a file"),
        (".", "must name a file"),
        ("/etc/passwd", "absolute"),
        ("../x", "'..'"),
        ("pkg/../../x", "'..'"),
        ("a\0b", "NUL"),
        (".git/config", ".git"),
        ("sub/.git/hooks/pre-commit", ".git"),
        (".GIT/config", ".git"),
        ("x" * 5000, "longer"),
    ],
)
def test_split_path_refuses(path: str, message: str) -> None:
    with pytest.raises(ToolInputError, match=message.replace(".", r"\.")):
        split_path(path)


def test_split_path_refuses_non_strings() -> None:
    with pytest.raises(ToolInputError, match="must be a string"):
        split_path(3)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("pkg/mod.py", "pkg/mod.py"),
        ("inner_link", "pkg/mod.py"),
        ("inner_dir_link/mod.py", "pkg/mod.py"),
        ("contract/differential-contract.yaml", "contract/differential-contract.yaml"),
    ],
)
def test_reads_inside_the_tree(policy: PathPolicy, path: str, expected: str) -> None:
    rel, data = policy.read_bytes(path)
    assert rel == expected
    assert data


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("etc_link/passwd", "leaving the worktree"),
        ("pkg/up_link/etc/passwd", "leaving the worktree"),
        ("abs_dir_link/secret.txt", "leaving the worktree"),
        ("rel_escape", "leaving the worktree"),
        ("git_link/config", "into .git"),
        ("loop_a", "too many levels"),
        ("fifo", "not a regular file"),
        ("pkg", "is a directory"),
        ("missing.py", "does not exist"),
        ("pkg/mod.py/x", "not a directory"),
        ("big.txt", "limit"),
        ("../outside/secret.txt", "'..'"),
        ("/etc/passwd", "absolute"),
        (".git", ".git"),
    ],
)
def test_reads_refused(policy: PathPolicy, path: str, message: str) -> None:
    with pytest.raises(ToolInputError, match=message.replace(".", r"\.")):
        policy.read_bytes(path)


@pytest.mark.parametrize(
    "path", ["new.py", "pkg/mod.py", "deep/new/dir/file.txt", "tests/test_new.py"]
)
def test_writes_allowed(policy: PathPolicy, tree: Path, path: str) -> None:
    assert policy.write_bytes(path, b"data\n") == path
    assert (tree / path).read_bytes() == b"data\n"
    assert not (tree / path).is_symlink()


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("contract/differential-contract.yaml", "contract path"),
        ("tests/properties/test_p.py", "contract path"),
        ("tests/properties/new.py", "contract path"),
        (".freeze/record.json", "contract path"),
        ("pytest.ini", "protected path"),
        ("inner_link", "symbolic link"),
        ("etc_link/evil", "symbolic link"),
        ("inner_dir_link/new.py", "symbolic link"),
        ("pkg/up_link/x", "symbolic link"),
        ("fifo", "not a regular file"),
        ("pkg", "not a regular file"),
        ("pkg/mod.py/x", "not a directory"),
        (".git/hooks/pre-commit", ".git"),
        ("../escape.txt", "'..'"),
        ("/tmp/escape.txt", "absolute"),
    ],
)
def test_writes_refused(policy: PathPolicy, tree: Path, path: str, message: str) -> None:
    before = sorted(p.name for p in tree.parent.rglob("*"))
    with pytest.raises(ToolInputError, match=message.replace(".", r"\.")):
        policy.write_bytes(path, b"evil\n")
    assert sorted(p.name for p in tree.parent.rglob("*")) == before
    assert Path("/etc/evil").exists() is False


def test_write_is_bounded(policy: PathPolicy) -> None:
    with pytest.raises(ToolInputError, match="limit"):
        policy.write_bytes("new.py", b"x" * 1001)


def test_write_keeps_the_file_mode(policy: PathPolicy, tree: Path) -> None:
    (tree / "run.sh").write_text("old\n")
    os.chmod(tree / "run.sh", 0o755)
    policy.write_bytes("run.sh", b"new\n")
    assert (tree / "run.sh").stat().st_mode & 0o777 == 0o755


def test_listing_does_not_follow_links_and_hides_git(policy: PathPolicy) -> None:
    entries, truncated = policy.list_entries(".", limit=100)
    kinds = {e.path: e.kind for e in entries}
    assert not truncated
    assert ".git" not in kinds
    assert kinds["etc_link"] == "symlink"
    assert kinds["pkg/mod.py"] == "file"
    assert kinds["fifo"] == "other"
    assert not any(p.startswith("etc_link/") for p in kinds)


def test_listing_refuses_escaping_links(policy: PathPolicy) -> None:
    with pytest.raises(ToolInputError, match="leaving the worktree"):
        policy.list_entries("etc_link", limit=10)


def test_listing_is_bounded(policy: PathPolicy) -> None:
    entries, truncated = policy.list_entries(".", limit=3)
    assert len(entries) == 3 and truncated


def test_listing_through_an_inner_link_names_resolved_paths(policy: PathPolicy) -> None:
    entries, _ = policy.list_entries("inner_dir_link", limit=10)
    assert [(e.path, e.below) for e in entries] == [
        ("pkg/mod.py", "mod.py"),
        ("pkg/up_link", "up_link"),
    ]
