"""Witness normalisation: a failure's class, free of run-to-run noise.

A class is ``property id | exception type | stable assertion id``. Whatever
string a row carries, the same noise is removed, so two rows that differ
only in memory addresses, timestamps, temporary paths, pids or durations
fall into one class (docs/design/runner.md).
"""

from __future__ import annotations

import re

_NOISE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
        "<time>",
    ),
    (re.compile(r"(?<![\w./-])(?:/private)?/(?:tmp|var/tmp|var/folders)/[^\s:'\"|,)]*"), "<tmp>"),
    (re.compile(r"\bpid[ =:]*\d+", re.IGNORECASE), "pid=?"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds)\b"), "<duration>"),
)


def normalise_witness(witness: str) -> str:
    """The witness class of a failure's witness string."""
    text = witness.strip()
    for pattern, replacement in _NOISE:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


def make_witness(prop: str, exc_type: str, assertion_id: str) -> str:
    return f"{prop}|{exc_type}|{assertion_id}"
