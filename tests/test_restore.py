"""Restoring the parent's contract and protected paths in the patch tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchwarden.scorer import restore_from_parent

CONTRACT = ["contract/differential-contract.yaml", "tests/properties", ".freeze"]
PROTECTED = ["tests/**", "**/conftest.py", "conftest.py", "pytest.ini"]


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    parent, patch = tmp_path / "parent", tmp_path / "patch"
    base = {
        "contract/differential-contract.yaml": "seeds: [1]\n",
        "tests/properties/test_p.py": "def test_p(): assert True\n",
        "tests/test_unit.py": "def test_u(): pass\n",
        "orders/total.py": "X = 1\n",
    }
    write(parent, base)
    write(patch, base)
    return parent, patch


def test_modified_added_and_deleted_guarded_files_come_back(trees: tuple[Path, Path]) -> None:
    parent, patch = trees
    write(
        patch,
        {
            "tests/properties/test_p.py": "def test_p(): pass  # weakened\n",
            "tests/properties/conftest.py": "# rewrites reports\n",
            "orders/conftest.py": "# planted\n",
            "pytest.ini": "[pytest]\naddopts = -p no:reporter\n",
            "orders/total.py": "X = 2\n",
        },
    )
    (patch / "tests/test_unit.py").unlink()
    done = restore_from_parent(parent, patch, CONTRACT, PROTECTED)
    assert done == [
        "deleted orders/conftest.py",
        "deleted pytest.ini",
        "deleted tests/properties/conftest.py",
        "restored tests/properties/test_p.py",
        "restored tests/test_unit.py",
    ]
    assert (patch / "tests/properties/test_p.py").read_text() == "def test_p(): assert True\n"
    assert (patch / "tests/test_unit.py").read_text() == "def test_u(): pass\n"
    assert (patch / "orders/total.py").read_text() == "X = 2\n"  # code comes from the patch
    assert not (patch / "orders/conftest.py").exists()


def test_a_symlinked_directory_cannot_smuggle_a_conftest(trees: tuple[Path, Path]) -> None:
    parent, patch = trees
    write(
        patch,
        {
            "orders/hack/test_p.py": "def test_p(): assert True\n",
            "orders/hack/conftest.py": "# rewrites reports\n",
        },
    )
    (patch / "tests/properties/test_p.py").unlink()
    (patch / "tests/properties").rmdir()
    (patch / "tests/properties").symlink_to("../orders/hack")
    done = restore_from_parent(parent, patch, CONTRACT, PROTECTED)
    assert "removed tests/properties (stood in for a directory)" in done
    props = patch / "tests/properties"
    assert props.is_dir() and not props.is_symlink()
    assert sorted(p.name for p in props.iterdir()) == ["test_p.py"]
    # the copy under the link target is a conftest.py anywhere: protected, deleted
    assert "deleted orders/hack/conftest.py" in done
    assert not (patch / "orders/hack/conftest.py").exists()
    assert (patch / "orders/hack/test_p.py").exists()  # plain product file: left alone


def test_a_guarded_file_replaced_by_a_symlink_is_restored(trees: tuple[Path, Path]) -> None:
    parent, patch = trees
    target = patch / "tests/properties/test_p.py"
    target.unlink()
    os.symlink("/etc/hostname", target)
    (patch / "contract").rename(patch / "elsewhere")
    (patch / "contract").symlink_to("elsewhere")
    restore_from_parent(parent, patch, CONTRACT, PROTECTED)
    assert not target.is_symlink()
    assert target.read_text() == "def test_p(): assert True\n"
    assert not (patch / "contract").is_symlink()
    assert (patch / "contract/differential-contract.yaml").read_text() == "seeds: [1]\n"


def test_nothing_to_restore_is_an_empty_list(trees: tuple[Path, Path]) -> None:
    parent, patch = trees
    assert restore_from_parent(parent, patch, CONTRACT, PROTECTED) == []


def test_committed_bytecode_is_removed_from_a_tree(tmp_path: Path) -> None:
    from patchwarden.scorer.checks._restore import remove_bytecode

    write(
        tmp_path,
        {
            "orders/total.py": "X = 1\n",
            "orders/__pycache__/total.cpython-311.pyc": "not really bytecode",
            "stray.pyc": "x",
            ".git/objects/keep.pyc": "git's own files are left alone",
        },
    )
    assert sorted(remove_bytecode(tmp_path)) == [
        "removed bytecode orders/__pycache__",
        "removed bytecode stray.pyc",
    ]
    assert not (tmp_path / "orders/__pycache__").exists()
    assert not (tmp_path / "stray.pyc").exists()
    assert (tmp_path / "orders/total.py").exists()
    assert (tmp_path / ".git/objects/keep.pyc").exists()
