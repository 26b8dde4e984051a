"""The patch diff as a reviewer reads it: per file, old and new line numbers, added and
removed lines marked, and the code itself highlighted for its language (Pygments).

Pygments' own ``DiffLexer`` colours only the ``+``/``-`` markers; a reviewer judging a
fix wants to read the code. Each file's changed lines are lexed in one pass with the
lexer its name calls for, then split back into lines. Every piece of text goes through
:func:`markupsafe.escape`; nothing from the diff reaches the page unescaped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from markupsafe import Markup, escape
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.token import STANDARD_TYPES, _TokenType
from pygments.util import ClassNotFound

MAX_DIFF_BYTES = 1024 * 1024
"""Past this the page shows the start and links to the whole ``patch.diff``: a page that
takes seconds to lex and a minute to scroll helps nobody."""
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_GIT_HEADER = re.compile(r"^diff --git a/(.*) b/(.*)$")


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """``add``, ``del``, ``ctx`` (context), ``hunk`` (an ``@@`` header) or ``meta``."""
    old: int | None
    new: int | None
    html: Markup


@dataclass(frozen=True)
class DiffFile:
    path: str
    lines: tuple[DiffLine, ...]
    added: int
    removed: int


@dataclass(frozen=True)
class Diff:
    files: tuple[DiffFile, ...]
    truncated: bool
    """The diff was longer than :data:`MAX_DIFF_BYTES`; only its start is shown."""


def _css(ttype: _TokenType) -> str:
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return str(STANDARD_TYPES[ttype])


def _lexer(path: str) -> Lexer:
    name = PurePosixPath(path).name
    return _lexer_for(PurePosixPath(name).suffix or name)


@functools.lru_cache(maxsize=256)
def _lexer_for(suffix_or_name: str) -> Lexer:
    """Pygments' filename lookup scans every lexer (milliseconds): once per suffix."""
    probe = f"x{suffix_or_name}" if suffix_or_name.startswith(".") else suffix_or_name
    try:
        return get_lexer_for_filename(probe, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def _highlighted_lines(code: list[str], lexer: Lexer) -> list[Markup]:
    """``code`` lexed as one text, split back into one Markup per input line."""
    out: list[Markup] = []
    current: list[str] = []
    for ttype, value in lexer.get_tokens("\n".join(code)):
        css = _css(ttype)
        for i, piece in enumerate(value.split("\n")):
            if i:
                out.append(Markup("".join(current)))
                current = []
            if piece:
                text = str(escape(piece))
                current.append(f'<span class="{css}">{text}</span>' if css else text)
    out.append(Markup("".join(current)))
    out += [Markup("")] * (len(code) - len(out))
    return out[: len(code)]


@dataclass
class _FileLines:
    path: str
    raw: list[tuple[str, int | None, int | None, str]]
    """(kind, old, new, text without the +/-/space marker)"""


def _split_files(lines: Iterable[str]) -> Iterator[_FileLines]:
    current: _FileLines | None = None
    old = new = 0
    in_hunk = False
    for line in lines:
        header = _GIT_HEADER.match(line)
        if header or current is None:
            if current is not None:
                yield current
            current = _FileLines(path=header.group(2) if header else "", raw=[])
            in_hunk = False
        hunk = _HUNK.match(line)
        if hunk:
            old, new, in_hunk = int(hunk.group(1)), int(hunk.group(2)), True
            current.raw.append(("hunk", None, None, line))
        elif in_hunk and line.startswith("+"):
            current.raw.append(("add", None, new, line[1:]))
            new += 1
        elif in_hunk and line.startswith("-"):
            current.raw.append(("del", old, None, line[1:]))
            old += 1
        elif in_hunk and line.startswith(" "):
            current.raw.append(("ctx", old, new, line[1:]))
            old, new = old + 1, new + 1
        else:
            in_hunk = in_hunk and line.startswith("\\")  # "\ No newline at end of file"
            if line.startswith("+++ b/"):
                current.path = line[6:]
            current.raw.append(("meta", None, None, line))
    if current is not None:
        yield current


def render_diff(text: str) -> Diff:
    truncated = len(text) > MAX_DIFF_BYTES
    if truncated:
        text = text[:MAX_DIFF_BYTES].rsplit("\n", 1)[0]
    files = []
    for part in _split_files(text.splitlines()):
        code_at = [i for i, (kind, *_rest) in enumerate(part.raw) if kind in ("add", "del", "ctx")]
        code = _highlighted_lines([part.raw[i][3] for i in code_at], _lexer(part.path or "x"))
        html = {i: code[n] for n, i in enumerate(code_at)}
        lines = tuple(
            DiffLine(kind, old, new, html.get(i) or Markup(escape(text)))
            for i, (kind, old, new, text) in enumerate(part.raw)
        )
        files.append(
            DiffFile(
                path=part.path,
                lines=lines,
                added=sum(1 for line in lines if line.kind == "add"),
                removed=sum(1 for line in lines if line.kind == "del"),
            )
        )
    return Diff(files=tuple(files), truncated=truncated)
