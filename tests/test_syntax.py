"""Parsing from many threads: the scorer's checks run on score-batch's thread pool.

CPython 3.11 before 3.11.8 raises ``SystemError: AST constructor recursion depth
mismatch`` when two threads build AST objects at once (python/cpython#106905); a
fresh-clone CI run crashed one batch score with exit 70 that way. The fault is caused
for real here: a ``gc.callbacks`` hook that sleeps lets another thread run in the middle
of an AST construction, as any finaliser that releases the GIL does in the scorer.
"""

from __future__ import annotations

import ast
import gc
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from patchwarden.sandbox import parse_python

SOURCE = (Path(__file__).resolve().parents[1] / "scorer" / "checks" / "_spec_review.py").read_text()


@pytest.fixture
def gil_dropping_collections() -> Iterator[None]:
    def yield_gil(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            time.sleep(0.0001)

    threshold = gc.get_threshold()
    gc.callbacks.append(yield_gil)
    gc.set_threshold(100)
    try:
        yield
    finally:
        gc.callbacks.remove(yield_gil)
        gc.set_threshold(*threshold)


def _parse_in_threads(parse: Callable[[str], ast.Module]) -> list[str]:
    errors: list[str] = []

    def work() -> None:
        for _ in range(5):
            try:
                parse(SOURCE)
            except SystemError as exc:
                errors.append(str(exc))
                return

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.mark.skipif(sys.version_info >= (3, 11, 8), reason="fixed in CPython 3.11.8")
@pytest.mark.usefixtures("gil_dropping_collections")
def test_the_fault_is_real_here_for_plain_ast_parse() -> None:
    # Without this the next test could pass for want of a fault.
    errors = _parse_in_threads(ast.parse)
    assert errors and errors[0].startswith("AST constructor recursion depth mismatch")


@pytest.mark.usefixtures("gil_dropping_collections")
def test_parse_python_never_crashes_from_many_threads() -> None:
    assert _parse_in_threads(parse_python) == []
    assert isinstance(parse_python(SOURCE, "x.py"), ast.Module)


def test_every_parse_in_scorer_and_sandbox_goes_through_the_lock() -> None:
    root = Path(__file__).resolve().parents[1]
    offenders = [
        f"{path.relative_to(root)}:{n}"
        for package in ("scorer", "sandbox", "server")
        for path in sorted((root / package).rglob("*.py"))
        if path.name != "_syntax.py" and "_inside" not in path.parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "ast.parse(" in line or ("ast.literal_eval(" in line and "node" not in line)
    ]
    assert offenders == []
