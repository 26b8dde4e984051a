"""The command classes of the command line: usage errors as one line, bodies run guarded.

Light on purpose (click only): the root group and a ``score --warm`` client load this module
and nothing heavier before they know what they have to do (docs/scale.md, "One patch at a
time: the warm scorer"). The error handler itself is :func:`._base.run_guarded`.
"""

from __future__ import annotations

from typing import IO, Any

import click


class OneLineUsageError(click.UsageError):
    """A usage error shown as one line (no usage block), exit 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"patchwarden: error: {self.format_message()}", err=True)


def _one_line_usage(ctx: click.Context, exc: click.UsageError) -> OneLineUsageError:
    if isinstance(exc, OneLineUsageError):
        return exc
    return OneLineUsageError(f"{ctx.command_path}: {exc.format_message()}")


class OneLineCommand(click.Command):
    """A command whose usage errors are one line and whose body runs guarded."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _one_line_usage(ctx, exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        from ._base import run_guarded  # the error handler needs git and the config models

        return run_guarded(lambda: super(OneLineCommand, self).invoke(ctx))


class OneLineGroup(click.Group):
    """A group of OneLineCommands (and OneLineGroups)."""

    command_class = OneLineCommand

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _one_line_usage(ctx, exc) from None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            raise _one_line_usage(ctx, exc) from None


OneLineGroup.group_class = OneLineGroup


__all__ = ["OneLineCommand", "OneLineGroup", "OneLineUsageError"]
