"""Progress on a terminal: one live line on stderr while a long command works.

Shared by the commands that run many sandboxed processes: ``score-batch``, ``score``,
``sweep``, ``contract check``, ``freeze propose``, ``env build``. Nothing is drawn when
stderr is not a terminal, so logs and pipes get only the command's own output.

    with progress("scoring", total=24) as bar:
        bar.advance(note="parent seed 11")
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.progress import Progress


class Bar:
    """A task on the live line (thread-safe: rich serialises updates); a no-op when off."""

    def __init__(self, description: str, total: float | None, *, enabled: bool) -> None:
        self._progress: Progress | None = None
        self._task: Any = None
        if enabled:
            # Imported only to draw: commands whose stderr is not a terminal skip its cost.
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[note]}"),
                console=Console(file=sys.stderr),
                transient=True,
            )
            self._task = self._progress.add_task(description, total=total, note="")

    def advance(self, steps: float = 1, *, note: str | None = None) -> None:
        if self._progress is not None and self._task is not None:
            if note is None:
                self._progress.update(self._task, advance=steps)
            else:
                self._progress.update(self._task, advance=steps, note=note)

    def report(self, done: int, total: int, note: str) -> None:
        """``done`` of ``total`` steps are done, ``note`` the last: for callbacks that count
        for themselves (``score(on_run=bar.report)``)."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=done, total=total, note=note)

    def note(self, text: str) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, note=text)

    def __enter__(self) -> Bar:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()


def progress(description: str, total: float | None, *, enabled: bool | None = None) -> Bar:
    """A live progress line on stderr, drawn only when stderr is a terminal (or ``enabled``)."""
    on = sys.stderr.isatty() if enabled is None else enabled
    return Bar(description, total, enabled=on)
