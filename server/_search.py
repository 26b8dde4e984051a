"""``search_text``: a literal or regular-expression search over the agent's worktree.

Which files are searched is the read path policy's (server/_paths.py), decided by one walk
of our own whatever engine reads them: regular files only, ``.git`` left out, symbolic
links never followed (whatever a link may reach inside the worktree is searched under its
own path; what lies outside or in ``.git`` is never read), files over the read limit and
the caches a test run leaves (the workspace's excluded patterns) left out. A file with a
NUL byte is binary and skipped; a long line is clipped around its first match.

Two engines read the files, and give the same results (tests/test_search.py holds them
equal): ripgrep when it is installed, fed the walked paths, and a pure-Python engine on
the ``regex`` module. ripgrep's engine does not backtrack, though a few patterns still cost
it minutes on a long line; the Python engine does, so each of its searches runs with a
timeout. The whole search has a deadline either way (a ripgrep process still running then is
killed): a pattern that would backtrack forever costs the agent one refused call, never the
server.
Patterns use the syntax the two engines share; look-around and backreferences (which
ripgrep has not) are refused up front, the same for both.

ripgrep opens the paths it is given by name. A sandboxed run of the agent's, while it
runs, could swap a walked file for a link to a host file, so ripgrep is used only while
none runs (the caller says so); otherwise the Python engine reads, and it opens every
component relative to a descriptor without following links (see docs/clients.md).
"""

from __future__ import annotations

import base64
import bisect
import fnmatch
import json
import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import regex
from regex import Pattern

from ._errors import ToolInputError
from ._paths import DIR_FLAGS, GIT_DIR_NAME, PathPolicy, glob_matches
from ._workspace import EXCLUDED

MAX_PATTERN_CHARS = 1000
MAX_RESULTS_CAP = 500
"""The most matches one call returns; the agent narrows with ``glob`` or a longer pattern."""
DEFAULT_MAX_RESULTS = 100
MAX_CONTEXT_LINES = 5
MAX_LINE_CHARS = 300
"""A longer line is clipped to this many characters around its first match."""
LEAD_CHARS = 80
"""Characters kept before the first match of a clipped line."""
SEARCH_DEADLINE_S = 10.0
"""The longest one search may take, for either engine; longer is a refused call."""
REGEX_SLICE_S = 0.5
"""Timeout of one Python regex search (the ``regex`` module checks it as it backtracks);
the remaining deadline bounds the sum."""
RG_ARG_BYTES = 512 * 1024
"""Paths per ripgrep process, by their length: far below the kernel's argument limit."""
RG_FLAGS = ("--json", "--no-config", "--color", "never", "--threads", "1")

Engine = Literal["ripgrep", "python"]


@dataclass(frozen=True)
class Match:
    path: str
    line: int
    text: str
    column: int
    """1-based character column of the first match on the line."""
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SearchResult:
    matches: list[Match]
    truncated: bool
    """More matches exist than were returned."""
    files_searched: int
    """Files read (binary ones included), up to the file where the search stopped."""
    engine: Engine


@dataclass(frozen=True)
class Query:
    pattern: str
    regex: bool = False
    case_sensitive: bool = True
    glob: str | None = None
    max_results: int = DEFAULT_MAX_RESULTS
    context: int = 1

    def compiled(self, *, multiline: bool = False) -> Pattern[str]:
        source = self.pattern if self.regex else regex.escape(self.pattern)
        flags = regex.VERSION0 | (0 if self.case_sensitive else regex.IGNORECASE)
        flags |= regex.MULTILINE if multiline else 0
        try:
            return regex.compile(source, flags)
        except regex.error as exc:
            raise ToolInputError(f"pattern is not a valid regular expression: {exc}") from None


def check_query(query: Query) -> Query:
    """The query, or ToolInputError naming what is wrong with it."""
    if not query.pattern:
        raise ToolInputError("pattern must not be empty")
    if len(query.pattern) > MAX_PATTERN_CHARS:
        raise ToolInputError(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    if any(c in query.pattern for c in "\0\n\r"):
        raise ToolInputError("pattern must be one line (searches match within a line)")
    if not 1 <= query.max_results <= MAX_RESULTS_CAP:
        raise ToolInputError(f"max_results must be between 1 and {MAX_RESULTS_CAP}")
    if not 0 <= query.context <= MAX_CONTEXT_LINES:
        raise ToolInputError(f"context must be between 0 and {MAX_CONTEXT_LINES}")
    if query.glob is not None and (not query.glob or "\0" in query.glob):
        raise ToolInputError("glob must be a non-empty pattern such as '*.py' or 'src/*'")
    if query.regex:
        refused = _unshared_syntax(query.pattern)
        if refused:
            raise ToolInputError(
                f"pattern uses {refused}, which the search does not support "
                "(no look-around, no backreferences)"
            )
    query.compiled()
    return query


def _unshared_syntax(pattern: str) -> str | None:
    """The first construct ripgrep's engine lacks (look-around, backreferences), if any."""
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if not in_class and (nxt in "123456789" or nxt in "gk"):
                return "a backreference"
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]" or pattern[i + 1 : i + 3] == "^]":
                i += 2 if pattern[i + 1] == "]" else 3
                continue
        elif c == "(" and pattern.startswith("?", i + 1):
            rest = pattern[i + 2 : i + 4]
            if rest[:1] in ("=", "!") or rest in ("<=", "<!"):
                return "look-around"
            if rest == "P=":
                return "a backreference"
        i += 1
    return None


# -- the walk (the read path policy) -----------------------------------------------------------

_EXCLUDED_DIRS = tuple(p.rstrip("/") for p in EXCLUDED if p.endswith("/"))
_EXCLUDED_FILES = tuple(p for p in EXCLUDED if not p.endswith("/"))


@dataclass(frozen=True)
class _File:
    rel: str
    dirfd: int
    name: str


def _walk(policy: PathPolicy, glob: str | None) -> Iterator[_File]:
    """Every file the search covers, in path order (each directory's entries by name)."""
    root = os.open(policy.root, DIR_FLAGS)
    try:
        yield from _walk_dir(root, "", policy.max_file_bytes, glob)
    finally:
        os.close(root)


def _walk_dir(dirfd: int, prefix: str, max_bytes: int, glob: str | None) -> Iterator[_File]:
    with os.scandir(dirfd) as it:
        children = sorted(it, key=lambda e: e.name)
    for child in children:
        name = child.name
        if name.casefold() == GIT_DIR_NAME:
            continue
        rel = f"{prefix}{name}"
        try:
            info = child.stat(follow_symlinks=False)
        except OSError:
            continue  # gone while we walk
        if stat.S_ISDIR(info.st_mode):
            if name in _EXCLUDED_DIRS:
                continue
            try:
                sub = os.open(name, DIR_FLAGS, dir_fd=dirfd)
            except OSError:
                continue  # replaced by a link or removed while we walk: not descended
            try:
                yield from _walk_dir(sub, rel + "/", max_bytes, glob)
            finally:
                os.close(sub)
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            continue
        if any(fnmatch.fnmatchcase(name, p) for p in _EXCLUDED_FILES):
            continue
        if glob is not None and not glob_matches(rel, glob):
            continue
        yield _File(rel, dirfd, name)


def _read(file: _File, max_bytes: int) -> bytes | None:
    """The file's bytes, opened without following a link; None if it is no longer a
    regular file within the limit."""
    try:
        fd = os.open(
            file.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=file.dirfd
        )
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        size = 0
        while block := os.read(fd, max_bytes + 1 - size):
            chunks.append(block)
            size += len(block)
            if size > max_bytes:
                return None
        return b"".join(chunks)
    finally:
        os.close(fd)


# -- results ---------------------------------------------------------------------------------


def clip(text: str, column: int) -> str:
    """``text`` (one line), clipped to MAX_LINE_CHARS around ``column`` (1-based)."""
    if len(text) <= MAX_LINE_CHARS:
        return text
    start = max(0, min(column - 1 - LEAD_CHARS, len(text) - MAX_LINE_CHARS))
    body = text[start : start + MAX_LINE_CHARS]
    return ("…" if start else "") + body + ("…" if start + MAX_LINE_CHARS < len(text) else "")


def _line(text: str) -> str:
    return text[:-1] if text.endswith("\r") else text


class _Collector:
    """Matches in path order, until one more than ``limit`` has been seen."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.matches: list[Match] = []
        self.truncated = False
        self.files = 0

    def add_file(self, found: list[Match]) -> bool:
        """Count one file read and take its matches; False once the results are complete."""
        self.files += 1
        room = self.limit - len(self.matches)
        self.matches.extend(found[:room])
        if len(found) > room:
            self.truncated = True
            return False
        return True

    def result(self, engine: Engine) -> SearchResult:
        return SearchResult(self.matches, self.truncated, self.files, engine)


def _matches_in(
    rel: str, lines: dict[int, str], hits: list[tuple[int, int]], ctx: int
) -> list[Match]:
    """Matches of one file from its lines by number (at least every hit and its context)."""
    out = []
    for number, column in hits:
        text = _line(lines[number])
        out.append(
            Match(
                path=rel,
                line=number,
                text=clip(text, column),
                column=column,
                before=[
                    clip(_line(lines[n]), 1) for n in range(number - ctx, number) if n in lines
                ],
                after=[
                    clip(_line(lines[n]), 1)
                    for n in range(number + 1, number + ctx + 1)
                    if n in lines
                ],
            )
        )
    return out


class SearchTimeout(ToolInputError):
    """The search ran past its deadline."""


def _timed_out() -> SearchTimeout:
    return SearchTimeout(
        f"the search took longer than {SEARCH_DEADLINE_S:g} s and was stopped: narrow it with "
        "glob, or simplify the pattern (nested repetition backtracks)"
    )


# -- the Python engine -----------------------------------------------------------------------


PER_LINE_ONLY = regex.compile(r"\\[AZzG]|\(\?[a-zA-Z-]")
"""Syntax that means something else on a whole file than on one line (string anchors,
inline flags): such a pattern is tried on every line, without the whole-file search."""


def search_python(policy: PathPolicy, query: Query, deadline: float) -> SearchResult:
    pattern = query.compiled()
    whole = (
        None
        if query.regex and PER_LINE_ONLY.search(query.pattern)
        else query.compiled(multiline=True)
    )
    collector = _Collector(query.max_results)
    for file in _walk(policy, query.glob):
        if time.monotonic() > deadline:
            raise _timed_out()
        data = _read(file, policy.max_file_bytes)
        if data is None:
            continue
        found = (
            [] if b"\0" in data else _search_bytes(file.rel, data, pattern, whole, query, deadline)
        )
        if not collector.add_file(found):
            break
    return collector.result("python")


def _search(
    pattern: Pattern[str], text: str, deadline: float, pos: int = 0
) -> regex.Match[str] | None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _timed_out()
    try:
        return pattern.search(text, pos, timeout=min(left, REGEX_SLICE_S), concurrent=True)
    except TimeoutError:
        # An honest pattern takes microseconds on one line: one that needs a whole slice
        # backtracks, and the agent is told so at once rather than at the deadline.
        raise _timed_out() from None


def _search_bytes(
    rel: str,
    data: bytes,
    pattern: Pattern[str],
    whole: Pattern[str] | None,
    query: Query,
    deadline: float,
) -> list[Match]:
    """Matches of one file's text, line by line as ripgrep matches (never across lines).

    With ``whole`` (the pattern in multiline mode), one search of the whole text finds the
    next line that may match: a line's own match is also a match of the whole text at the
    same place (``^``/``$`` match at line ends), so no matching line is skipped; the line
    itself then decides (a whole-text match may run across lines, a line match cannot).
    """
    text = data.decode("utf-8", "replace")
    if whole is not None and _search(whole, text, deadline) is None:
        return []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    hits: list[tuple[int, int]] = []
    index = 0
    while index < len(lines) and len(hits) <= query.max_results:
        if whole is not None:
            candidate = _search(whole, text, deadline, starts[index])
            if candidate is None:
                break
            index = bisect.bisect_right(starts, candidate.start()) - 1
            if index >= len(lines):
                break
        found = _search(pattern, lines[index], deadline)
        if found is not None:
            hits.append((index + 1, found.start() + 1))
        index += 1
    if not hits:
        return []
    ctx = query.context
    wanted = {n for h, _ in hits for n in range(h - ctx, h + ctx + 1) if 1 <= n <= len(lines)}
    return _matches_in(rel, {n: lines[n - 1] for n in wanted}, hits, ctx)


# -- ripgrep ---------------------------------------------------------------------------------


def ripgrep() -> str | None:
    """The ripgrep executable, if one is installed."""
    return shutil.which("rg")


def _rg_argv(rg: str, query: Query) -> list[str]:
    argv = [rg, *RG_FLAGS]
    argv.append("--case-sensitive" if query.case_sensitive else "--ignore-case")
    if not query.regex:
        argv.append("--fixed-strings")
    if query.context:
        argv += ["--context", str(query.context)]
    return [*argv, "--regexp", query.pattern, "--"]


def _chunks(paths: Sequence[str]) -> Iterator[list[str]]:
    chunk: list[str] = []
    size = 0
    for path in paths:
        if chunk and size + len(path) + 1 > RG_ARG_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(path)
        size += len(path) + 1
    if chunk:
        yield chunk


def _rg_bytes(value: dict[str, str]) -> bytes:
    if "text" in value:
        return value["text"].encode("utf-8")
    return base64.b64decode(value["bytes"])


def search_ripgrep(rg: str, policy: PathPolicy, query: Query, deadline: float) -> SearchResult:
    paths = []
    for file in _walk(policy, query.glob):
        paths.append(file.rel)
        if time.monotonic() > deadline:
            raise _timed_out()
    collector = _Collector(query.max_results)
    argv = _rg_argv(rg, query)
    for chunk in _chunks(paths):
        if not _run_rg([*argv, *chunk], chunk, policy, query, collector, deadline):
            break
    return collector.result("ripgrep")


class _RgFile:
    """The events of one file in ripgrep's output, up to the lines the results need."""

    def __init__(self, limit: int, context: int) -> None:
        self.limit = limit
        self.context = context
        self.lines: dict[int, str] = {}
        self.hits: list[tuple[int, int]] = []
        self.last_needed: int | None = None
        self.done = False
        """Past the last line the results need: the file's other events are not parsed."""

    def line(self, data: dict[str, object], is_match: bool) -> None:
        number = int(data["line_number"])  # type: ignore[call-overload]
        if self.last_needed is not None and number > self.last_needed:
            self.done = True
            return
        raw = _rg_bytes(data["lines"]).removesuffix(b"\n")  # type: ignore[arg-type]
        self.lines[number] = raw.decode("utf-8", "replace")
        submatches = data.get("submatches")
        if is_match and isinstance(submatches, list) and submatches:
            start = int(submatches[0]["start"])
            self.hits.append((number, len(raw[:start].decode("utf-8", "replace")) + 1))
            if len(self.hits) > self.limit:
                self.last_needed = self.hits[self.limit - 1][0] + self.context


def _run_rg(
    argv: list[str],
    chunk: Sequence[str],
    policy: PathPolicy,
    query: Query,
    collector: _Collector,
    deadline: float,
) -> bool:
    """Feed one ripgrep process's matches (binary files dropped) to ``collector``, file by
    file in ``chunk``'s order (one thread: ripgrep then searches its paths in order); stop
    it as soon as the results are complete (False)."""
    index = {path: i for i, path in enumerate(chunk)}
    counted = 0  # files of the chunk given to the collector
    current = _RgFile(query.max_results, query.context)
    if deadline - time.monotonic() <= 0:
        raise _timed_out()
    with (
        tempfile.TemporaryFile() as errors,
        subprocess.Popen(
            argv,
            cwd=policy.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
        ) as process,
    ):
        assert process.stdout is not None
        # Some patterns take ripgrep minutes on one long line without a byte of output (a
        # bounded repetition of a class, \w{1,300}\w{1,300}\W, on a 800 kB line): the
        # deadline is enforced by a timer, not only when a line arrives.
        stopped = threading.Event()

        def stop() -> None:
            stopped.set()
            process.kill()

        timer = threading.Timer(max(0.0, deadline - time.monotonic()), stop)
        timer.start()
        try:
            for raw in process.stdout:
                if time.monotonic() > deadline:
                    raise _timed_out()
                kind = raw[8:18]  # after b'{"type":'
                if kind.startswith((b'"match"', b'"context"')):
                    if not current.done:
                        current.line(json.loads(raw)["data"], kind.startswith(b'"match"'))
                elif kind.startswith(b'"end"'):
                    data = json.loads(raw)["data"]
                    path = _rg_bytes(data["path"]).decode("utf-8", "surrogateescape")
                    at = index[path]
                    while counted < at:
                        collector.add_file([])
                        counted += 1
                    found = (
                        _matches_in(path, current.lines, current.hits, query.context)
                        if data.get("binary_offset") is None
                        else []
                    )
                    counted += 1
                    if not collector.add_file(found):
                        return False
                    current = _RgFile(query.max_results, query.context)
        finally:
            timer.cancel()
            timer.join()  # it may be killing the process right now
            if process.poll() is None:
                process.kill()
            process.wait()
        if stopped.is_set():
            raise _timed_out()
        errors.seek(0)
        err = errors.read(64 * 1024).decode("utf-8", "replace")
    while counted < len(chunk):
        collector.add_file([])
        counted += 1
    if err.startswith("regex parse error"):
        lines = [line.strip() for line in err.splitlines() if line.startswith("error:")]
        why = lines[0].removeprefix("error:").strip() if lines else "unparsable"
        raise ToolInputError(f"pattern is not a valid regular expression: {why}")
    return True


# -- the entry point -------------------------------------------------------------------------


def search_text(policy: PathPolicy, query: Query, *, engine: Engine | None = None) -> SearchResult:
    """Search the worktree; ``engine`` None: ripgrep if installed, else Python."""
    check_query(query)
    deadline = time.monotonic() + SEARCH_DEADLINE_S
    rg = ripgrep() if engine in (None, "ripgrep") else None
    if engine == "ripgrep" and rg is None:
        raise ToolInputError("ripgrep is not installed")
    if rg is not None:
        return search_ripgrep(rg, policy, query, deadline)
    return search_python(policy, query, deadline)
