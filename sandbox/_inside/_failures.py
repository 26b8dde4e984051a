"""Inside the runner, agent mode: a failure as an agent can act on it (docs/design/runner.md,
"Failures the agent reads").

Two forms of each failure, both built from the objects pytest holds, never from its text:

- the summary (``summarise_failure``): the frames in the tree (path relative to the tree,
  line, function, source line; innermost last), every run of frames outside the tree folded
  to one line, then the exception line, its notes (Hypothesis' failing example) and what it
  was raised from;
- the report (``fit_report``): pytest's own report, whole when it fits, else with the
  frames outside the tree folded and then the outermost frames dropped, saying so.

Both fit in ``limit`` characters. Part of the program concatenated by sandbox/_inside
(``program``); it needs no other part, so tests import it as a module.
"""

from __future__ import annotations

import io
import linecache
import os
import sysconfig
from typing import Any

from _pytest._io import TerminalWriter

SITE_DIRS = ("site-packages", "dist-packages")
MESSAGE_SHARE = 4
"""Each note may take a quarter of the limit, and the exception message what the frames and
notes leave but a quarter at least: the frames that led there matter as much as a long
assertion diff."""
GROUP_MEMBERS_SHOWN = 3  # of an exception group (Hypothesis' distinct failures), the first
CHAIN_LINE_CHARS = 300  # the one line that names what the exception was raised from
_STDLIB_DIRS: list[str] = []


def summarise_failure(exc: BaseException, tree: str, limit: int) -> str:
    """The summary of ``exc`` (see the module docstring) in at most ``limit`` characters."""
    frames = _frame_blocks(exc, tree)
    after = _after_headline(exc, tree, limit)
    # The message may have what the frames and the notes leave, and a quarter at least.
    room = limit - sum(len(line) + 1 for line in [*frames, *after])
    headline = _clip(_headline(exc), max(limit // MESSAGE_SHARE, room), " from the message")
    return _fit_blocks(frames, "\n".join([headline, *after]), limit, "outer frames", end=False)


def fit_report(longrepr: Any, text: str, tree: str, limit: int) -> str:
    """pytest's report ``text`` of ``longrepr``, in at most ``limit`` characters.

    Whole when it fits. Otherwise each run of entries outside the tree becomes one line
    (the exception's own ``E`` lines stay) and, if that is still too long, the outermost
    entries go first; a line at the top says what was cut."""
    if len(text) <= limit:
        return text
    blocks = _report_blocks(longrepr, tree)
    if blocks is None:  # not a traceback pytest laid out entry by entry: its end
        return _keep_end(text, limit, " of the report")
    *outer, last = blocks
    return _fit_blocks(outer, last, limit, "earlier parts of the report", end=True)


# -- the frames of an exception ---------------------------------------------------------------


def _frame_blocks(exc: BaseException, tree: str) -> list[str]:
    """One block per frame in the tree, per run of frames outside it, per repeat."""
    frames = _frames(exc)
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        frames.append((exc.filename, exc.lineno, None))  # where the parser stopped
    inside = [_in_tree(filename, tree) for filename, _, _ in frames]
    if any(inside):
        # What ran the test (pytest, pluggy) before the first frame of the tree is no
        # part of the failure.
        first = inside.index(True)
        frames, inside = frames[first:], inside[first:]
    blocks: list[str] = []
    outside: list[tuple[str, int]] = []
    repeated = 0
    previous = None
    for (filename, lineno, name), here in zip(frames, inside, strict=True):
        if not here:
            outside.append((filename, lineno))
            previous = None
            continue
        if outside:
            blocks.append(_fold_line(outside))
            outside = []
        if (filename, lineno, name) == previous:
            repeated += 1
            continue
        if repeated:
            blocks.append(_repeat_line(repeated))
            repeated = 0
        previous = (filename, lineno, name)
        blocks.append(_tree_frame(exc, filename, lineno, name, tree))
    if repeated:
        blocks.append(_repeat_line(repeated))
    if outside:
        blocks.append(_fold_line(outside))
    return blocks


def _frames(exc: BaseException) -> list[tuple[str, int, str | None]]:
    """(file, line, function) of each frame of the traceback, outermost first, without the
    frames that hide themselves from tracebacks as pytest's helpers do."""
    found: list[tuple[str, int, str | None]] = []
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        hide = frame.f_locals.get("__tracebackhide__", frame.f_globals.get("__tracebackhide__"))
        if hide is not True:  # pytest's helpers set True; nothing of the tree's is called
            found.append((frame.f_code.co_filename, tb.tb_lineno, frame.f_code.co_name))
        tb = tb.tb_next
    return found


def _tree_frame(exc: BaseException, filename: str, lineno: int, name: str | None, tree: str) -> str:
    where = f"{_tree_relative(filename, tree)}:{lineno}"
    if name is None:  # a syntax error: the line as the parser read it, a caret below
        assert isinstance(exc, SyntaxError)
        text = (exc.text or "").rstrip("\n")
        code = text.lstrip()
        lines = [where, f"    {code}"]
        if exc.offset and code:
            column = max(0, exc.offset - 1 - (len(text) - len(code)))
            lines.append("    " + " " * column + "^")
        return "\n".join(lines)
    source = linecache.getline(filename, lineno).strip()
    return f"{where} in {name}" + (f"\n    {source}" if source else "")


def _repeat_line(times: int) -> str:
    return f"  [the frame above repeated {times} more time{'s' if times > 1 else ''}]"


def _fold_line(frames: list[tuple[str, int]]) -> str:
    """One line for a run of frames outside the tree, by where they are: the standard
    library, site-packages, or elsewhere. A run of mixed places names the innermost's."""
    places = [_outside(filename) for filename, _ in frames]
    kinds = {kind for kind, _ in places}
    kind = places[-1][0] if len(kinds) == 1 else "outside the tree"
    first = f"{places[0][1]}:{frames[0][1]}"
    last = f"{places[-1][1]}:{frames[-1][1]}"
    count = len(frames)
    span = first if count == 1 else f"{first} to {last}"
    return f"  ... {count} frame{'s' if count > 1 else ''} {kind} ({span})"


def _outside(filename: str) -> tuple[str, str]:
    """Where a frame outside the tree is, and its path as shown from there."""
    if filename.startswith("<"):
        kind = "in the standard library" if filename.startswith("<frozen ") else "outside the tree"
        return kind, filename
    parts = filename.split(os.sep)
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] in SITE_DIRS:
            return "in site-packages", "/".join(parts[index + 1 :])
    for directory in _stdlib_dirs():
        if filename.startswith(directory + os.sep):
            return "in the standard library", filename[len(directory) + 1 :]
    return "outside the tree", filename


def _stdlib_dirs() -> list[str]:
    if not _STDLIB_DIRS:
        paths = sysconfig.get_paths()
        found = {paths[key] for key in ("stdlib", "platstdlib") if key in paths}
        _STDLIB_DIRS.extend(sorted(found | {os.path.realpath(p) for p in found}, key=len)[::-1])
    return _STDLIB_DIRS


def _in_tree(filename: str, tree: str) -> bool:
    """A file of the tree, not of an environment kept inside it (a ``.venv``)."""
    if filename.startswith("<"):
        return False
    relative = _tree_relative(filename, tree)
    if relative is None:
        return False
    return not any(part in SITE_DIRS for part in relative.split(os.sep))


def _tree_relative(filename: str, tree: str) -> str | None:
    """``filename`` relative to the tree, or None when it is outside."""
    for path, root in ((filename, tree), (os.path.realpath(filename), os.path.realpath(tree))):
        path = os.path.abspath(path)
        if path.startswith(root + os.sep):
            return path[len(root) + 1 :]
    return None


# -- the exception line and what follows it ---------------------------------------------------


def _after_headline(exc: BaseException, tree: str, limit: int) -> list[str]:
    """What follows the exception line: its notes, the exception it was raised from, and
    for a group the summaries of its first members."""
    share = max(1, limit // MESSAGE_SHARE)
    lines: list[str] = []
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        lines += [_clip(_text_of(note, "note"), share, " from the note") for note in notes]
    cause = exc.__cause__
    chained = cause if cause is not None else None if exc.__suppress_context__ else exc.__context__
    if chained is not None:
        how = "The direct cause" if cause is not None else "Raised while handling"
        # Its innermost frame in the tree: fold and repeat lines are indented, frames not.
        firsts = [block.split("\n", 1)[0] for block in _frame_blocks(chained, tree)]
        at = next((line for line in reversed(firsts) if not line.startswith(" ")), None)
        first = _headline(chained).split("\n", 1)[0]
        line = f"{how}: {first}" + (f" (at {at})" if at else "")
        lines.append(_clip(line, CHAIN_LINE_CHARS, ""))
    if isinstance(exc, BaseExceptionGroup):
        members = exc.exceptions[:GROUP_MEMBERS_SHOWN]
        each = max(1, (limit - limit // MESSAGE_SHARE) // max(1, len(members)))
        for number, member in enumerate(members, start=1):
            lines.append(f"[{number} of {len(exc.exceptions)}]")
            lines.append(summarise_failure(member, tree, each))
        if len(exc.exceptions) > len(members):
            lines.append(f"[{len(exc.exceptions) - len(members)} more not shown]")
    return lines


def _headline(exc: BaseException) -> str:
    """``type: message`` as Python prints it (pytest's own exceptions by their bare name)."""
    kind = type(exc)
    name = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__") and not kind.__module__.startswith(
        "_pytest."
    ):
        name = f"{kind.__module__}.{name}"
    message = _text_of(exc.msg or "" if isinstance(exc, SyntaxError) else exc, "exception")
    return f"{name}: {message}" if message else name


def _text_of(value: object, what: str) -> str:
    """``str(value)``; what the tree's code raised may not be able to say it."""
    try:
        return str(value)
    except Exception:  # a message that cannot be made is still a failure to report
        return f"<the {what}'s str() failed>"


# -- pytest's report, folded -------------------------------------------------------------------


def _report_blocks(longrepr: Any, tree: str) -> list[str] | None:
    """pytest's report of ``longrepr`` as blocks, entries outside the tree folded; None when
    it is not a chain of located entries (a native traceback, a collection message)."""
    chain = getattr(longrepr, "chain", None)
    if not chain:
        return None
    blocks: list[str] = []
    for reprtraceback, _crash, description in chain:
        entries = list(getattr(reprtraceback, "reprentries", []))
        if not entries or any(getattr(e, "reprfileloc", None) is None for e in entries):
            return None
        outside: list[Any] = []
        for entry in entries:
            if not _in_tree(os.path.abspath(str(entry.reprfileloc.path)), tree):
                outside.append(entry)
                continue
            if outside:
                blocks.append(_folded_entries(outside))
                outside = []
            blocks.append(_rendered(entry).rstrip("\n"))
        if outside:
            blocks.append(_folded_entries(outside))
        if reprtraceback.extraline:
            blocks.append(reprtraceback.extraline)
        if description is not None:
            blocks.append(f"\n{description}")
    for name, content, _sep in getattr(longrepr, "sections", []):
        blocks.append(f"-- {name} --\n{content}")
    return blocks


def _folded_entries(entries: list[Any]) -> str:
    """One line for entries outside the tree, and the exception lines (``E``) they hold."""
    frames = [(os.path.abspath(str(e.reprfileloc.path)), e.reprfileloc.lineno) for e in entries]
    raised = [line for e in entries for line in e.lines if line.startswith("E ")]
    return "\n".join([_fold_line(frames), *raised])


def _rendered(entry: Any) -> str:
    out = io.StringIO()
    writer = TerminalWriter(out)
    writer.hasmarkup = False
    entry.toterminal(writer)
    return out.getvalue()


# -- fitting in the limit ----------------------------------------------------------------------


def _fit_blocks(blocks: list[str], last: str, limit: int, what: str, *, end: bool) -> str:
    """``blocks`` then ``last``, one per line; the first blocks go until it fits, and a line
    says how many went. ``last`` is kept whole, or when it alone is too long its ``end``
    (else its head)."""
    text = "\n".join([*blocks, last])
    if len(text) <= limit:
        return text
    kept = list(blocks)
    while kept:
        kept.pop(0)
        text = "\n".join([f"[{len(blocks) - len(kept)} {what} cut]", *kept, last])
        if len(text) <= limit:
            return text
    if end:
        return _keep_end(last, limit, f", and {len(blocks)} {what}," if blocks else "")
    return _clip(last, limit, f", and {len(blocks)} {what} before" if blocks else "")


def _keep_end(text: str, limit: int, what: str) -> str:
    """The end of ``text`` in at most ``limit`` characters, a first line saying how much
    went."""
    if len(text) <= limit:
        return text
    room = max(0, limit - len(f"[the first {len(text)} characters{what} cut]\n"))
    return f"[the first {len(text) - room} characters{what} cut]\n" + text[len(text) - room :]


def _clip(text: str, limit: int, what: str) -> str:
    """The head of ``text`` in at most ``limit`` characters, saying how much went."""
    if len(text) <= limit:
        return text
    room = max(0, limit - len(f" [... {len(text)} more characters cut{what}]"))
    return text[:room] + f" [... {len(text) - room} more characters cut{what}]"
