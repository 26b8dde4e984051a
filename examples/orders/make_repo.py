"""Materialise the orders example as a git repository with reproducible commit shas.

    python examples/orders/make_repo.py DEST

creates DEST (which must not exist or be empty) holding:

- `base` (branch `main`, tag `base`): the files under `template/`;
- `patch-fix`, `patch-regression`, `patch-refactor`: one commit each on top of `base`;
- `patch-fix-docs`: one commit on top of `patch-fix`.

Each patch commit overlays the files under `patches/<name>/` (full file contents; the
commit message is `patches/<name>/message.txt`). Identity, dates and git configuration
are fixed, so two builds give the same shas. `main` is left checked out at `base`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import git

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "template"
PATCHES = HERE / "patches"
MANIFEST = "tests/fixtures/manifest.json"
MESSAGE_FILE = "message.txt"
BASE_TAG = "base"
BASE_MESSAGE = "Order totals with bulk pricing and the differential contract\n"
AUTHOR_NAME = "Orders Example"
AUTHOR_EMAIL = "orders-example@patchwarden.invalid"
SKIP_NAMES = frozenset({"__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache"})
SKIP_SUFFIXES = (".pyc", ".pyo")

# Isolate every git call from the user's and the system's configuration and from any
# repository the caller happens to be inside (e.g. when run from a hook).
GIT_ENV_UNSET = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_TEMPLATE_DIR",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
)
GIT_ENV_SET = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
REPO_CONFIG = {
    "core.hooksPath": os.devnull,
    "core.autocrlf": "false",
    "core.filemode": "true",
    "core.attributesFile": os.devnull,
    "core.excludesFile": os.devnull,
    "commit.gpgSign": "false",
    "tag.gpgSign": "false",
    "user.name": AUTHOR_NAME,
    "user.email": AUTHOR_EMAIL,
}


class PatchSpec(NamedTuple):
    name: str  # directory under patches/
    parent: str  # tag of the parent commit
    date: str  # author and committer date (ISO 8601)

    @property
    def tag(self) -> str:
        return f"patch-{self.name}"


BASE_DATE = "2026-11-01T09:00:00+00:00"
PATCH_SPECS = (
    PatchSpec("fix", BASE_TAG, "2026-11-02T10:00:00+00:00"),
    PatchSpec("regression", BASE_TAG, "2026-11-02T11:00:00+00:00"),
    PatchSpec("refactor", BASE_TAG, "2026-11-02T12:00:00+00:00"),
    PatchSpec("fix-docs", "patch-fix", "2026-11-03T10:00:00+00:00"),
)


class Example(NamedTuple):
    """One bundled example: its base files, its patch overlays, the commits to make. The
    paths example (examples/paths/make_repo.py) is built by the same code."""

    template: Path
    patches: Path
    specs: tuple[PatchSpec, ...]
    base_message: str
    manifest: str


ORDERS = Example(TEMPLATE, PATCHES, PATCH_SPECS, BASE_MESSAGE, MANIFEST)


def iter_files(root: Path) -> Iterator[Path]:
    """Files under `root` (relative, sorted), without caches and bytecode."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in SKIP_NAMES for part in rel.parts) or path.name.endswith(SKIP_SUFFIXES):
            continue
        if path.is_file():
            yield rel


def copy_tree(src: Path, dest: Path, skip: frozenset[str] = frozenset()) -> list[str]:
    """Copy the files under `src` into `dest`; return their posix paths."""
    copied = []
    for rel in iter_files(src):
        if rel.as_posix() in skip:
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((src / rel).read_bytes())
        copied.append(rel.as_posix())
    return copied


def verify_manifest(tree: Path, manifest_path: str = MANIFEST) -> None:
    """Raise ValueError unless every manifest fixture's sha256 matches its bytes."""
    manifest = json.loads((tree / manifest_path).read_text(encoding="utf-8"))
    for entry in manifest["fixtures"]:
        actual = hashlib.sha256((tree / entry["fixture"]).read_bytes()).hexdigest()
        if actual != entry["sha256"]:
            raise ValueError(
                f"fixture drifted: {entry['fixture']} expected {entry['sha256']}, got {actual}"
            )


def check_dest(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FileExistsError(f"{dest} exists and is not an empty directory")


@contextmanager
def isolated_git_env() -> Iterator[None]:
    """Temporarily unset GIT_ENV_UNSET and set GIT_ENV_SET in os.environ (git inherits it)."""
    saved = {key: os.environ.get(key) for key in (*GIT_ENV_UNSET, *GIT_ENV_SET)}
    for key in GIT_ENV_UNSET:
        os.environ.pop(key, None)
    os.environ.update(GIT_ENV_SET)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def init_repo(dest: Path) -> git.Repo:
    dest.mkdir(parents=True, exist_ok=True)
    git.Git(dest).init("--quiet", "--initial-branch=main", str(dest))
    repo = git.Repo(dest)
    with repo.config_writer() as config:
        for key, value in REPO_CONFIG.items():
            section, option = key.split(".")
            config.set_value(section, option, value)
    return repo


def commit_all(repo: git.Repo, message: str, date: str) -> str:
    """Stage the whole work tree and commit it with fixed identity and dates."""
    repo.git.add("--all", "--force", ".")
    dated: Mapping[str, str] = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    with repo.git.custom_environment(**dated):
        repo.git.commit("--quiet", "--no-verify", "--allow-empty-message", "-m", message)
    return repo.head.commit.hexsha


def commit_base(repo: git.Repo, dest: Path, example: Example = ORDERS) -> str:
    copy_tree(example.template, dest)
    verify_manifest(dest, example.manifest)
    sha = commit_all(repo, example.base_message, BASE_DATE)
    repo.create_tag(BASE_TAG, ref=sha)
    return sha


def commit_patch(repo: git.Repo, dest: Path, spec: PatchSpec, example: Example = ORDERS) -> str:
    source = example.patches / spec.name
    repo.git.checkout("--quiet", "--force", "--detach", spec.parent)
    copy_tree(source, dest, skip=frozenset({MESSAGE_FILE}))
    message = (source / MESSAGE_FILE).read_text(encoding="utf-8")
    sha = commit_all(repo, message, spec.date)
    repo.create_tag(spec.tag, ref=sha)
    return sha


def make_repo(dest: Path, example: Example = ORDERS) -> dict[str, str]:
    """Build the example repository at `dest`; return tag name -> commit sha."""
    dest = Path(dest).absolute()  # git runs inside dest; a relative path would resolve twice
    check_dest(dest)
    with isolated_git_env():
        repo = init_repo(dest)
        shas = {BASE_TAG: commit_base(repo, dest, example)}
        for spec in example.specs:
            shas[spec.tag] = commit_patch(repo, dest, spec, example)
        repo.git.checkout("--quiet", "--force", "main")
        repo.close()
    return shas


def format_table(shas: Mapping[str, str]) -> str:
    width = max(len(name) for name in shas)
    return "\n".join(f"{name:<{width}}  {sha}" for name, sha in shas.items())


def main(argv: list[str] | None = None, example: Example = ORDERS) -> int:
    name = example.template.parent.name
    parser = argparse.ArgumentParser(description=f"Build the {name} example repository.")
    parser.add_argument("dest", type=Path, help="new directory for the repository")
    args = parser.parse_args(argv)
    try:
        shas = make_repo(args.dest, example)
    except (FileExistsError, ValueError) as exc:
        print(f"make_repo: {exc}", file=sys.stderr)
        return 2
    print(format_table(shas))
    return 0


if __name__ == "__main__":
    sys.exit(main())
