"""The sdist helpers on their own, offline: cache, sha256 check, safe unpacking, stable commits."""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from . import _pypi
from ._pypi import SdistError, fetch_sdist, git_repo_from_sdist, unpack_sdist


def _tar(path: Path, members: dict[str, bytes], *, links: dict[str, str] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
    return path


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


RELEASE = {"demo-1.0/PKG-INFO": b"Name: demo\n", "demo-1.0/demo/__init__.py": b"X = 1\n"}


def _no_network(name: str, version: str, dest: Path) -> Path:
    raise AssertionError(f"pip was called for {name}=={version}")


def test_cache_hit_is_verified_and_needs_no_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slot = tmp_path / "cache" / "demo" / "1.0"
    slot.mkdir(parents=True)
    sdist = _tar(slot / "demo-1.0.tar.gz", RELEASE)
    monkeypatch.setattr(_pypi, "_pip_download", _no_network)
    assert fetch_sdist("Demo", "1.0", _sha(sdist), cache=tmp_path / "cache") == sdist


def test_cache_dir_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_pypi.CACHE_ENV, str(tmp_path / "elsewhere"))
    assert _pypi.cache_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv(_pypi.CACHE_ENV)
    assert _pypi.cache_dir() == Path("~/.cache/patchwarden/sdists").expanduser()


def test_a_tampered_cache_entry_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    slot = tmp_path / "demo" / "1.0"
    slot.mkdir(parents=True)
    sdist = _tar(slot / "demo-1.0.tar.gz", RELEASE)
    expected = _sha(sdist)
    with sdist.open("ab") as handle:
        handle.write(b"tampered")
    monkeypatch.setattr(_pypi, "_pip_download", _no_network)
    with pytest.raises(SdistError) as caught:
        fetch_sdist("demo", "1.0", expected, cache=tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(sdist) in message
    assert f"expected {expected}" in message
    assert f"got {_sha(sdist)}" in message


def test_a_download_is_cached_only_once_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    published = _tar(tmp_path / "demo-1.0.tar.gz", RELEASE)
    calls: list[str] = []

    def download(name: str, version: str, dest: Path) -> Path:
        calls.append(f"{name}=={version}")
        target = dest / published.name
        target.write_bytes(published.read_bytes())
        return target

    monkeypatch.setattr(_pypi, "_pip_download", download)
    cache = tmp_path / "cache"
    with pytest.raises(SdistError, match=r"demo-1\.0\.tar\.gz .*sha256 mismatch: expected 0{64}"):
        fetch_sdist("demo", "1.0", "0" * 64, cache=cache)
    assert not list(cache.rglob("*.tar.gz"))

    got = fetch_sdist("demo", "1.0", _sha(published), cache=cache)
    assert got == cache / "demo" / "1.0" / "demo-1.0.tar.gz"
    assert got.read_bytes() == published.read_bytes()
    assert fetch_sdist("demo", "1.0", _sha(published), cache=cache) == got
    assert calls == ["demo==1.0", "demo==1.0"]


def test_a_pin_that_is_not_a_sha256_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SdistError, match="not a sha256"):
        fetch_sdist("demo", "1.0", "abc", cache=tmp_path)


@pytest.mark.parametrize(
    ("members", "links", "reason"),
    [
        ({"demo-1.0/../evil.py": b"x"}, None, "'..' in path"),
        ({"/etc/evil.py": b"x"}, None, "absolute path"),
        ({"demo-1.0/ok.py": b"x"}, {"demo-1.0/link": "../../outside"}, "link out of the archive"),
        ({"demo-1.0/ok.py": b"x"}, {"demo-1.0/link": "/etc/passwd"}, "link to absolute path"),
    ],
)
def test_unsafe_tar_members_are_refused_before_writing(
    tmp_path: Path, members: dict[str, bytes], links: dict[str, str] | None, reason: str
) -> None:
    sdist = _tar(tmp_path / "demo-1.0.tar.gz", {**RELEASE, **members}, links=links)
    dest = tmp_path / "out"
    with pytest.raises(SdistError, match=reason):
        unpack_sdist(sdist, dest)
    assert not any(dest.iterdir())


@pytest.mark.parametrize("name", ["demo-1.0/../evil.py", "/evil.py", "C:/evil.py"])
def test_unsafe_zip_members_are_refused(tmp_path: Path, name: str) -> None:
    sdist = _zip(tmp_path / "demo-1.0.zip", {**RELEASE, name: b"x"})
    dest = tmp_path / "out"
    with pytest.raises(SdistError, match="refusing member"):
        unpack_sdist(sdist, dest)
    assert not any(dest.iterdir())


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_unpack_returns_the_top_level_directory(tmp_path: Path, suffix: str) -> None:
    build = _zip if suffix == ".zip" else _tar
    sdist = build(tmp_path / f"demo-1.0{suffix}", RELEASE)
    root = unpack_sdist(sdist, tmp_path / "out")
    assert root == tmp_path / "out" / "demo-1.0"
    assert (root / "demo" / "__init__.py").read_text() == "X = 1\n"


def test_unpack_wants_one_top_level_directory(tmp_path: Path) -> None:
    sdist = _tar(tmp_path / "flat.tar.gz", {"a.py": b"", "b.py": b""})
    with pytest.raises(SdistError, match=r"expected one top-level directory, got a\.py, b\.py"):
        unpack_sdist(sdist, tmp_path / "out")


def test_the_same_sdist_always_gives_the_same_commit(tmp_path: Path) -> None:
    sdist = _tar(tmp_path / "demo-1.0.tar.gz", RELEASE)
    repo, first = git_repo_from_sdist(sdist, tmp_path / "one")
    _, second = git_repo_from_sdist(sdist, tmp_path / "two")
    assert first == second
    assert sorted(repo.git.ls_files().splitlines()) == ["PKG-INFO", "demo/__init__.py"]
    assert repo.head.commit.message.startswith("Release demo-1.0")
