"""Fetch pinned source distributions (sha256-checked, cached) and unpack them safely.

The cache is ``$PATCHWARDEN_SDIST_CACHE`` or ``~/.cache/patchwarden/sdists``.
A file is fetched with pip (``pip download --no-deps --no-binary :all:``), so
the user's index configuration applies, and it is kept only when its sha256
matches the pin.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

CACHE_ENV = "PATCHWARDEN_SDIST_CACHE"
SDIST_SUFFIXES = (".tar.gz", ".tgz", ".zip", ".tar.bz2")


class SdistError(RuntimeError):
    """A source distribution could not be fetched, verified or unpacked."""


def cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "patchwarden" / "sdists"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _is_sdist(path: Path) -> bool:
    return path.is_file() and path.name.endswith(SDIST_SUFFIXES)


def fetch(project: str, version: str, sha256: str, *, cache: Path | None = None) -> Path:
    """The path of the pinned sdist in the cache, downloading it first if needed."""
    root = (cache or cache_dir()) / sha256
    if root.is_dir():
        for candidate in sorted(root.iterdir()):
            if _is_sdist(candidate) and sha256_of(candidate) == sha256:
                return candidate
    with tempfile.TemporaryDirectory(prefix="pw-sdist-") as scratch:
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--dest",
            scratch,
            f"{project}=={version}",
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        files = [path for path in Path(scratch).iterdir() if _is_sdist(path)]
        if done.returncode != 0 or len(files) != 1:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no sdist"]
            raise SdistError(f"cannot download {project}=={version}: {tail[0]}")
        got = sha256_of(files[0])
        if got != sha256:
            raise SdistError(f"{project}=={version}: sha256 mismatch: expected {sha256}, got {got}")
        root.mkdir(parents=True, exist_ok=True)
        target = root / files[0].name
        partial = root / (files[0].name + ".part")
        shutil.copyfile(files[0], partial)
        partial.replace(target)
        return target


def _safe_member(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or name.startswith(("/", "\\")) or ".." in path.parts:
        raise SdistError(f"refusing archive member {name!r}")
    if path.parts and ":" in path.parts[0]:
        raise SdistError(f"refusing archive member {name!r}")
    return path


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack ``archive`` under ``dest`` and return the single top-level directory.

    Absolute members, members with ``..``, links out of the archive and device files are
    refused; a link to a file of the archive is kept.
    """
    dest.mkdir(parents=True, exist_ok=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as bundle:
            for info in bundle.infolist():
                _safe_member(info.filename)
            bundle.extractall(dest)
    else:
        with tarfile.open(archive) as bundle:
            members = bundle.getmembers()
            for member in members:
                _safe_member(member.name)
                if member.issym() or member.islnk():
                    # A link inside the release (tenacity's README.rst) is kept; one that
                    # leads out of it is refused (the "data" filter refuses it too).
                    base = posixpath.dirname(member.name) if member.issym() else ""
                    target = posixpath.normpath(posixpath.join(base, member.linkname))
                    if member.linkname.startswith("/") or target.split("/")[0] == "..":
                        raise SdistError(f"refusing archive link {member.name!r} out of it")
                elif not (member.isfile() or member.isdir()):
                    raise SdistError(f"refusing non-regular archive member {member.name!r}")
            bundle.extractall(dest, members=members, filter="data")
    tops = [path for path in dest.iterdir() if path.is_dir()]
    if len(tops) != 1:
        raise SdistError(f"{archive.name}: expected one top-level directory, got {len(tops)}")
    return tops[0]
