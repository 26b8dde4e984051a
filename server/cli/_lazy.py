"""A click group that imports a command's module only when that command runs.

click's "Lazily Loading Subcommands" recipe on top of :class:`._oneline.OneLineGroup`:
``patchwarden score --warm`` must not pay for pydantic, gitpython, the scorer and the
sandbox before it knows whether a warm scorer answers (docs/scale.md). ``patchwarden --help``
still lists every command with its short help: listing loads them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click

from ._oneline import OneLineGroup


class LazyGroup(OneLineGroup):
    """A OneLineGroup whose commands are named ``module:attribute`` until first used."""

    def __init__(self, *args: Any, lazy_commands: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            self.add_command(self._load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

    def _load(self, cmd_name: str) -> click.Command:
        module_name, _, attribute = self.lazy_commands[cmd_name].partition(":")
        command = getattr(importlib.import_module(module_name, __package__), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.lazy_commands[cmd_name]} is not a click command")
        return command


__all__ = ["LazyGroup"]
