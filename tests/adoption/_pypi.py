"""Pinned source distributions from the package index: fetch, verify, cache, unpack, commit.

A project is named by ``name``, ``version`` and the sha256 of its sdist. The first fetch runs
``pip download`` (the index configured for pip, nothing else) and keeps the file in the cache,
``$PATCHWARDEN_SDIST_CACHE`` or ``~/.cache/patchwarden/sdists``; later fetches read the cache
and never touch the network. Every fetch checks the sha256: a mismatch is a
one-line :class:`SdistError` naming the file, the expected and the actual digest.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath, PureWindowsPath

import git

from tests._git_repos import GIT_ENV, commit, init_repo

CACHE_ENV = "PATCHWARDEN_SDIST_CACHE"
DEFAULT_CACHE = Path("~/.cache/patchwarden/sdists")
SDIST_SUFFIXES = (".tar.gz", ".tgz", ".zip")
PIP_TIMEOUT_S = 600

_SHA256 = re.compile(r"[0-9a-f]{64}")


class SdistError(RuntimeError):
    """A pinned sdist could not be fetched, verified or unpacked (one-line message)."""


def cache_dir() -> Path:
    """Where verified sdists are kept: ``$PATCHWARDEN_SDIST_CACHE`` or the default."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else DEFAULT_CACHE.expanduser()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def _mismatch(expected: str, actual: str) -> str:
    return f"sha256 mismatch: expected {expected}, got {actual}"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _cached(slot: Path) -> Path | None:
    if not slot.is_dir():
        return None
    found = sorted(p for p in slot.iterdir() if p.is_file() and p.name.endswith(SDIST_SUFFIXES))
    return found[0] if found else None


def fetch_sdist(name: str, version: str, sha256: str, *, cache: Path | None = None) -> Path:
    """The verified sdist of ``name==version``: from the cache, else downloaded into it.

    The cache holds ``<cache>/<name>/<version>/<file>``. A download goes to a temporary
    directory beside it and is moved into place only once its digest matches, so a cached file
    was verified when it was stored, also with several fetches running at once; it is checked
    again on every fetch all the same.
    """
    expected = sha256.lower()
    if not _SHA256.fullmatch(expected):
        raise SdistError(f"{name}=={version}: not a sha256 hex digest: {sha256!r}")
    root = cache if cache is not None else cache_dir()
    slot = root / _canonical(name) / version
    hit = _cached(slot)
    if hit is not None:
        actual = sha256_of(hit)
        if actual != expected:
            raise SdistError(f"{hit}: {_mismatch(expected, actual)} (cached; delete it to refetch)")
        return hit
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=root) as scratch:
        downloaded = _pip_download(name, version, Path(scratch))
        actual = sha256_of(downloaded)
        if actual != expected:
            raise SdistError(
                f"{downloaded.name} ({name}=={version} from the index): "
                f"{_mismatch(expected, actual)}"
            )
        slot.mkdir(parents=True, exist_ok=True)
        final = slot / downloaded.name
        os.replace(downloaded, final)
    return final


def _pip_download(name: str, version: str, dest: Path) -> Path:
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-binary",
        ":all:",
        f"{name}=={version}",
        "-d",
        str(dest),
    ]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise SdistError(f"pip download {name}=={version}: no answer in {PIP_TIMEOUT_S}s") from None
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("ERROR")] or lines or ["no output"]
        raise SdistError(f"pip download {name}=={version} failed: {errors[-1]}")
    files = [p for p in dest.iterdir() if p.is_file() and p.name.endswith(SDIST_SUFFIXES)]
    if len(files) != 1:
        got = ", ".join(sorted(p.name for p in dest.iterdir())) or "nothing"
        raise SdistError(f"pip download {name}=={version}: expected one sdist, got {got}")
    return files[0]


def _unsafe_name(name: str) -> str | None:
    """Why an archive member name may not be extracted, or None when it may."""
    if not name or "\x00" in name:
        return "empty or NUL in name"
    posix = name.replace("\\", "/")
    if posix.startswith("/") or PureWindowsPath(name).drive or PureWindowsPath(name).root:
        return "absolute path"
    if ".." in PurePosixPath(posix).parts:
        return "'..' in path"
    return None


def _unsafe_tar_member(member: tarfile.TarInfo) -> str | None:
    reason = _unsafe_name(member.name)
    if reason is not None:
        return reason
    if member.isdev():
        return "device or fifo"
    if member.issym() or member.islnk():
        target = member.linkname
        if target.startswith("/") or PureWindowsPath(target).drive:
            return f"link to absolute path {target!r}"
        base = posixpath.dirname(member.name) if member.issym() else ""
        if posixpath.normpath(posixpath.join(base, target)).split("/")[0] == "..":
            return f"link out of the archive: {target!r}"
    elif not (member.isfile() or member.isdir()):
        return "unsupported member type"
    return None


def _extract_tar(path: Path, dest: Path) -> None:
    try:
        with tarfile.open(path, "r:*") as archive:
            members = archive.getmembers()
            for member in members:
                reason = _unsafe_tar_member(member)
                if reason is not None:
                    raise SdistError(f"{path}: refusing member {member.name!r}: {reason}")
            if hasattr(tarfile, "data_filter"):
                archive.extractall(dest, members=members, filter="data")
            else:  # pragma: no cover - Python < 3.11.4
                archive.extractall(dest, members=members)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise SdistError(f"{path}: not a readable sdist: {exc}") from None


def _extract_zip(path: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                reason = _unsafe_name(info.filename)
                if reason is not None:
                    raise SdistError(f"{path}: refusing member {info.filename!r}: {reason}")
            archive.extractall(dest)
    except (zipfile.BadZipFile, OSError) as exc:
        raise SdistError(f"{path}: not a readable sdist: {exc}") from None


def unpack_sdist(path: Path, dest: Path) -> Path:
    """Extract ``path`` (tar.gz or zip) into ``dest`` and return its one top-level directory.

    ``dest`` must be missing or empty. A member with an absolute path, a ``..`` component, a
    link leading out of the archive, or a device node is refused before anything is written.
    """
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise SdistError(f"{dest}: unpack destination is not empty")
    if path.name.endswith(".zip"):
        _extract_zip(path, dest)
    else:
        _extract_tar(path, dest)
    entries = list(dest.iterdir())
    if len(entries) != 1 or not entries[0].is_dir():
        got = ", ".join(sorted(e.name for e in entries)) or "nothing"
        raise SdistError(f"{path}: expected one top-level directory, got {got}")
    return entries[0]


def git_repo_from_sdist(
    sdist: Path, dest: Path, message: str | None = None
) -> tuple[git.Repo, str]:
    """A git repository at ``dest`` whose one commit is the release in ``sdist``.

    The tree is the sdist's top-level directory as published (generated files such as
    ``PKG-INFO`` included); author, committer and dates are fixed (``GIT_ENV``), so the same
    sdist always gives the same commit sha. Returns the repository and that sha.
    """
    if dest.exists() and any(dest.iterdir()):
        raise SdistError(f"{dest}: repository destination is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=dest.parent) as scratch:
        root = unpack_sdist(sdist, Path(scratch) / "sdist")
        for entry in sorted(root.iterdir()):
            shutil.move(str(entry), str(dest / entry.name))
        release = root.name
    repo = init_repo(dest)
    with repo.git.custom_environment(**GIT_ENV):
        sha = commit(repo, {}, message or f"Release {release}, as published in {sdist.name}")
    return repo, sha


def commit_release(repo: git.Repo, sdist: Path, message: str | None = None) -> str:
    """Commit the release in ``sdist`` on the checked-out commit of ``repo``: the tree becomes
    the sdist's as published (files the release dropped are deleted), as a release-to-release
    fix commit. Fixed author and dates (``GIT_ENV``), so the same pair of sdists always gives
    the same sha. Returns it."""
    assert repo.working_tree_dir is not None
    dest = Path(repo.working_tree_dir)
    repo.git.rm("-r", "--quiet", "--cached", "--ignore-unmatch", ".")
    for entry in dest.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=dest.parent) as scratch:
        root = unpack_sdist(sdist, Path(scratch) / "sdist")
        for entry in sorted(root.iterdir()):
            shutil.move(str(entry), str(dest / entry.name))
        release = root.name
    with repo.git.custom_environment(**GIT_ENV):
        return commit(repo, {}, message or f"Release {release}, as published in {sdist.name}")
