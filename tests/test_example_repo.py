"""The orders example repository (examples/orders/make_repo.py) builds as documented."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import git
import pytest
import yaml

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "orders"
TAGS = ("base", "patch-fix", "patch-regression", "patch-refactor", "patch-fix-docs")
PARENTS = {
    "patch-fix": "base",
    "patch-regression": "base",
    "patch-refactor": "base",
    "patch-fix-docs": "patch-fix",
}
CODE_ONLY = {"orders/total.py"}
CONTRACT = "contract/differential-contract.yaml"
MANIFEST = "tests/fixtures/manifest.json"


def load_make_repo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("orders_make_repo", EXAMPLE / "make_repo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def make_repo_module() -> ModuleType:
    return load_make_repo()


@pytest.fixture(scope="module")
def built(
    make_repo_module: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, str]]:
    dest = tmp_path_factory.mktemp("orders") / "repo"
    return dest, make_repo_module.make_repo(dest)


@pytest.fixture(scope="module")
def repo(built: tuple[Path, dict[str, str]]) -> Iterator[git.Repo]:
    handle = git.Repo(built[0])
    yield handle
    handle.close()


def blob(repo: git.Repo, rev: str, path: str) -> bytes:
    data: bytes = repo.commit(rev).tree[path].data_stream.read()
    return data


def changed_paths(repo: git.Repo, parent: str, patch: str) -> set[str]:
    diffs = repo.commit(parent).diff(repo.commit(patch))
    return {p for d in diffs for p in (d.a_path, d.b_path) if p is not None}


def strip_docstrings(source: bytes) -> str:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.dump(tree)


def function_dump(source: bytes, name: str) -> str:
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.dump(node)
    raise AssertionError(f"{name} not found")


def test_returns_a_sha_per_tag(built: tuple[Path, dict[str, str]], repo: git.Repo) -> None:
    _, shas = built
    assert tuple(shas) == TAGS
    assert {tag.name: tag.commit.hexsha for tag in repo.tags} == shas


def test_parents(built: tuple[Path, dict[str, str]], repo: git.Repo) -> None:
    _, shas = built
    assert repo.commit("base").parents == ()
    for tag, parent in PARENTS.items():
        assert [c.hexsha for c in repo.commit(tag).parents] == [shas[parent]]


def test_main_checked_out_at_base(built: tuple[Path, dict[str, str]], repo: git.Repo) -> None:
    assert not repo.head.is_detached
    assert repo.active_branch.name == "main"
    assert repo.head.commit.hexsha == built[1]["base"]
    assert not repo.is_dirty(untracked_files=True)


def test_hooks_disabled(repo: git.Repo) -> None:
    assert repo.config_reader("repository").get_value("core", "hooksPath") == "/dev/null"


@pytest.mark.parametrize("tag", TAGS)
def test_manifest_matches_fixture_bytes(repo: git.Repo, tag: str) -> None:
    manifest = json.loads(blob(repo, tag, MANIFEST))
    [entry] = manifest["fixtures"]
    assert entry["fixture"] == "tests/fixtures/orders.json"
    assert entry["covers"] == ["prop.order_total_matches_fixture"]
    assert hashlib.sha256(blob(repo, tag, entry["fixture"])).hexdigest() == entry["sha256"]


@pytest.mark.parametrize(("patch", "parent"), PARENTS.items())
def test_patches_touch_only_code(repo: git.Repo, patch: str, parent: str) -> None:
    paths = changed_paths(repo, parent, patch)
    assert paths == CODE_ONLY
    assert not any(p.startswith(("tests/", "contract/")) for p in paths)


def test_fix_docs_changes_only_comments_and_docstrings(repo: git.Repo) -> None:
    before = blob(repo, "patch-fix", "orders/total.py")
    after = blob(repo, "patch-fix-docs", "orders/total.py")
    assert before != after
    assert strip_docstrings(before) == strip_docstrings(after)


def test_refactor_keeps_bulk_price(repo: git.Repo) -> None:
    base = blob(repo, "base", "orders/total.py")
    refactor = blob(repo, "patch-refactor", "orders/total.py")
    assert function_dump(base, "bulk_price") == function_dump(refactor, "bulk_price")
    assert b"float(" in refactor


def test_build_is_reproducible(
    make_repo_module: ModuleType,
    built: tuple[Path, dict[str, str]],
    tmp_path: Path,
) -> None:
    assert make_repo_module.make_repo(tmp_path / "again") == built[1]


def test_refuses_non_empty_destination(make_repo_module: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("x", encoding="utf-8")
    with pytest.raises(FileExistsError):
        make_repo_module.make_repo(tmp_path)


def test_expected_covers_every_pair_and_property(repo: git.Repo) -> None:
    contract = yaml.safe_load(blob(repo, "base", CONTRACT))
    prop_ids = [p["id"] for p in contract["properties"]]
    expected = json.loads((EXAMPLE / "expected.json").read_text(encoding="utf-8"))
    assert {(e["parent"], e["patch"]) for e in expected} == {(p, c) for c, p in PARENTS.items()}
    for entry in expected:
        assert list(entry["results"]) == prop_ids
        assert entry["decision"] in {"accept", "reject", "propose_freeze"}


def test_contract_tests_exist(repo: git.Repo) -> None:
    contract = yaml.safe_load(blob(repo, "base", CONTRACT))
    assert contract["seeds"] == [11, 29, 47]
    for prop in contract["properties"]:
        path, name = prop["test"].split("::")
        module = ast.parse(blob(repo, "base", path))
        names = {n.name for n in module.body if isinstance(n, ast.FunctionDef)}
        assert name in names, prop["test"]


def test_a_relative_destination_works(
    make_repo_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shas = make_repo_module.make_repo(Path("orders"))
    assert git.Repo(tmp_path / "orders").commit("base").hexsha == shas["base"]
