"""What every command shares: the one error handler, exit codes, options, tables.

Exit codes (docs/design/errors.md): 0 accept or a check that holds, 1 reject or a check that
fails, 3 propose_freeze, 4 skipped, 2 usage, configuration, input or environment error (one
line on stderr naming the file and line), 70 an internal error (one line naming the file the
traceback went to). Nothing unexpected ever exits 1, which scripts read as a reject.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import click

from patchwarden import PatchwardenError
from patchwarden.sandbox import git_errors

from ..config import OperatorConfig, load_config
from ._oneline import OneLineCommand as OneLineCommand
from ._oneline import OneLineGroup as OneLineGroup
from ._oneline import OneLineUsageError as OneLineUsageError

EXIT_ACCEPT = 0
EXIT_REJECT = 1
EXIT_USAGE = 2
EXIT_PROPOSE_FREEZE = 3
EXIT_SKIPPED = 4
EXIT_INTERNAL = 70
"""EX_SOFTWARE from sysexits.h: never 1, which scripts read as a reject."""

EXIT_HOLDS = EXIT_ACCEPT
EXIT_FAILS = EXIT_REJECT

DECISION_EXIT = {
    "accept": EXIT_ACCEPT,
    "reject": EXIT_REJECT,
    "propose_freeze": EXIT_PROPOSE_FREEZE,
    "skipped": EXIT_SKIPPED,
}


def fail(message: str) -> NoReturn:
    """One line on stderr and exit 2."""
    click.echo(f"patchwarden: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def os_error_line(exc: OSError) -> str:
    """``PATH: what happened`` (both paths of a rename or a link), each path absolute: a
    relative one reads like part of the message (a directory named ``patchwarden`` gave
    ``patchwarden: error: patchwarden: No space left on device``)."""
    paths = [os.path.abspath(os.fsdecode(p)) for p in (exc.filename, exc.filename2) if p]
    where = f"{' -> '.join(paths)}: " if paths else ""
    return f"{where}{exc.strerror or exc}"


def _crash_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    for directory in (Path(state) / "patchwarden" / "crashes", Path(tempfile.gettempdir())):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix="patchwarden-crash-", suffix=".txt", dir=directory)
        except OSError:
            continue
        os.close(fd)
        return Path(name)
    return Path(os.devnull)


def write_traceback(exc: BaseException) -> Path:
    """The traceback of ``exc`` in a new crash file; its path (os.devnull if none could be
    written)."""
    where = _crash_file()
    try:
        where.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
    except OSError:
        where = Path(os.devnull)
    return where


def internal_error(exc: BaseException) -> NoReturn:
    """A bug: the traceback to a file, one line naming it, exit 70."""
    where = write_traceback(exc)
    click.echo(
        f"patchwarden: internal error ({type(exc).__name__}); traceback in {where}", err=True
    )
    sys.exit(EXIT_INTERNAL)


def run_guarded(call: Callable[[], Any]) -> Any:
    """The one error handler of the command line: every command runs through it."""
    try:
        # A git failure our code did not expect at that spot is still git's, not a bug.
        with git_errors("git"):
            return call()
    except PatchwardenError as exc:
        fail(str(exc))
    except OSError as exc:
        # An unwritable log dir or a full disk is the environment's failure, not ours.
        fail(os_error_line(exc))
    except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
        raise
    except Exception as exc:
        internal_error(exc)


def emit_decision(decision: str, payload: dict[str, Any], note: str, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(payload, indent=2, sort_keys=False))
    else:
        click.echo(note, nl=False)
    sys.exit(DECISION_EXIT[decision])


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Operator configuration (YAML). Without it the safe defaults apply.",
)
log_dir_option = click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="The reviewers' log directory (default: the config's scorer.log_dir, "
    "patchwarden-logs in the current directory, where score writes).",
)
repo_option = click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="The repository (its working tree).",
)
contract_option = click.option(
    "--contract",
    default="contract/differential-contract.yaml",
    show_default=True,
    help="Contract path inside the repository (read from the commit).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead.")


def config_of(config_path: Path | None) -> OperatorConfig:
    return load_config(config_path)


def log_dir_in(config: OperatorConfig, log_dir: Path | None) -> Path:
    """The reviewers' log directory, absolute: ``--log-dir``, else the config's
    ``scorer.log_dir`` (``patchwarden-logs`` by default), relative to the current directory.
    ``score`` writes where every reader (``verdicts``, ``view``, ``freeze``) reads, by this
    one rule, and says where (``evidence: /abs/...``)."""
    return (log_dir if log_dir is not None else Path(config.scorer.log_dir)).absolute()


def log_dir_of(config_path: Path | None, log_dir: Path | None) -> Path:
    return log_dir_in(config_of(config_path), log_dir)


def now() -> datetime:
    return datetime.now(UTC)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain terminal table: padded columns, the last one left ragged."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers), *[list(r) for r in rows]]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def printable(text: str) -> str:
    """Text from files we did not write: keep it on one line, show control characters."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
