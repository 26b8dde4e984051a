"""One error handler for the whole command line: expected failures are one line and exit 2,
git's included; anything unexpected exits 70 with its traceback in a file, never 1 (which
scripts read as a reject)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from patchwarden.server.cli import cli

CONTRACT = "contract/differential-contract.yaml"
SHA = "a" * 40


def _leaves(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the root loads its commands lazily
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from _leaves(command, (*prefix, name))
        else:
            yield (*prefix, name)


@pytest.fixture(scope="module")
def broken_repos(tmp_path_factory: pytest.TempPathFactory, example_repo: Path) -> dict[str, Path]:
    """Three ways git fails: no repository, a .git pointing nowhere, objects gone."""
    root = tmp_path_factory.mktemp("broken")
    plain = root / "plain"
    plain.mkdir()
    dangling = root / "dangling"
    dangling.mkdir()
    (dangling / ".git").write_text("gitdir: /nonexistent/worktree\n")
    gutted = root / "gutted"
    shutil.copytree(example_repo, gutted, symlinks=True)
    shutil.rmtree(gutted / ".git" / "objects")
    (gutted / ".git" / "objects").mkdir()
    return {"plain": plain, "dangling": dangling, "gutted": gutted}


def _argv(command: tuple[str, ...], repo: Path, tmp: Path) -> list[str] | None:
    """Arguments that make ``command`` reach git on ``repo``; None for commands without git."""
    fixture = repo / "tests" / "fixtures" / "orders.json"
    table: dict[tuple[str, ...], list[str]] = {
        ("score",): ["--repo", str(repo), "--contract", CONTRACT, "--parent", "base",
                     "--patch", "patch-fix", "--log-dir", str(tmp / "logs")],
        ("sweep",): ["--repo", str(repo), "--base", "base"],
        ("quarantine", "release-check"): ["--repo", str(repo), "--test-id", "tests/t.py::t"],
        ("fixtures", "pin"): ["--repo", str(repo), str(fixture)],
        ("fixtures", "guard"): ["--repo", str(repo)],
        ("freeze", "propose"): ["--repo", str(repo), "--test-id", "tests/t.py::t",
                                "--fixture", "tests/fixtures/orders.json",
                                "--oracle", "tests/properties/test_orders.py"],
        ("freeze", "check"): ["--repo", str(repo)],
        ("serve",): ["--repo", str(repo), "--base", "base", "--log-dir", str(tmp / "logs")],
        ("contract", "check"): ["--repo", str(repo), "--base", "base"],
        ("contract", "init"): ["--repo", str(repo), "--test", "tests/t.py::t"],
        ("task", "from-fix"): ["--repo", str(repo), "--fix", "patch-fix"],
        ("env", "build"): ["--repo", str(repo)],
    }  # fmt: skip
    if command not in table:
        return None
    return [*command, *table[command]]


NO_GIT = {
    ("decide",): "reads JSONL files",
    ("demo",): "builds its own repository",
    ("doctor",): "checks the sandbox",
    ("config", "check"): "reads YAML",
    ("config", "schema"): "prints a schema",
    ("freeze", "approve"): "reads the log directory",
    ("freeze", "list"): "reads the log directory",
    ("freeze", "expire"): "reads the log directory",
    ("verdicts", "list"): "reads the log directory",
    ("verdicts", "show"): "reads the log directory",
    ("verdicts", "export"): "reads the log directory",
    ("view",): "reads the log directory",
    ("score-batch",): "a git failure is that request's error line, exit 0 (test_score_batch.py)",
}


def test_every_command_is_covered() -> None:
    """A new command must say here whether it runs git (and then be tested below)."""
    for command in _leaves(cli):
        assert command in NO_GIT or _argv(command, Path("/r"), Path("/t")) is not None, command


@pytest.mark.parametrize("kind", ["plain", "dangling", "gutted"])
def test_every_git_command_fails_in_one_line_with_exit_2(
    kind: str, broken_repos: dict[str, Path], tmp_path: Path
) -> None:
    repo = broken_repos[kind]
    for command in _leaves(cli):
        argv = _argv(command, repo, tmp_path)
        if argv is None or (kind == "gutted" and command[0] in ("fixtures", "env")):
            continue  # they read the working tree, which a gutted repository still has
        # A real process: exit codes and stderr exactly as a script sees them.
        done = subprocess.run(
            [sys.executable, "-P", "-m", "patchwarden", *argv],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path / "state")},
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, (command, done.returncode, done.stderr)
        assert len(lines) == 1 and lines[0].startswith("patchwarden: error: "), (command, lines)
        assert "Traceback" not in done.stderr
        assert str(repo) in lines[0] or "revision" in lines[0], (command, lines[0])


def test_an_unexpected_error_exits_70_naming_its_traceback_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A bug cannot be caused on purpose in working code, so one is planted: the only mock here.
    import patchwarden.server.cli._setup as setup

    def broken(*_: object) -> None:
        raise ZeroDivisionError("planted")

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(setup, "config_schema", broken)
    result = CliRunner().invoke(cli, ["config", "schema"])
    assert result.exit_code == 70
    line = result.stderr.strip()
    assert line.startswith("patchwarden: internal error (ZeroDivisionError); traceback in ")
    trace = Path(line.rsplit(" ", 1)[1])
    assert trace.parent == tmp_path / "state" / "patchwarden" / "crashes"
    assert "ZeroDivisionError: planted" in trace.read_text()


def test_a_git_failure_in_a_real_repository_is_one_line(example_repo: Path, tmp_path: Path) -> None:
    repo = tmp_path / "orders"
    shutil.copytree(example_repo, repo, symlinks=True)
    (repo / ".git" / "refs" / "tags" / "broken").write_text(SHA + "\n")  # a missing object
    result = CliRunner().invoke(
        cli,
        ["score", "--repo", str(repo), "--contract", CONTRACT, "--parent", "broken",
         "--patch", "patch-fix", "--log-dir", str(tmp_path / "logs")],
        env={"XDG_STATE_HOME": str(tmp_path / "state")},
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("patchwarden: error: ") and result.stderr.count("\n") == 1


def test_an_os_error_names_its_path_absolute_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under a directory named like us: one line, the whole path, no doubled
    prefix (the message once read `patchwarden: error: patchwarden: No space left on ...`)."""
    import errno

    from patchwarden.server.cli._base import os_error_line

    monkeypatch.chdir(tmp_path)
    full = OSError(errno.ENOSPC, "No space left on device", "patchwarden")
    assert os_error_line(full) == f"{tmp_path}/patchwarden: No space left on device"
    moved = OSError(errno.EXDEV, "Invalid cross-device link", "/a/x", None, "/b/y")
    assert os_error_line(moved) == "/a/x -> /b/y: Invalid cross-device link"
    assert os_error_line(OSError(errno.EIO, "Input/output error")) == "Input/output error"
