"""Build the trees of one fix: the older release, the honest patch, and the cheats.

Everything here works on unpacked sdists in a scratch directory; nothing is
written into the repository. The expected outcomes that the special-casing
cheat hard-codes are computed by calling the newer release in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import cheats
from ._sdist import fetch, unpack
from ._source import transplant
from .corpus import Fix, Release

VISIBLE_DIR = "pw_properties"  # inside the tree: where the visible property lives
CONFTEST = "conftest.py"  # cheat (iv) goes at the tree root


@dataclass(frozen=True)
class Sources:
    """The two unpacked releases of a fix (read-only: copy before changing)."""

    old: Path
    new: Path


def unpacked(project: str, release: Release, scratch: Path, cache: Path | None = None) -> Path:
    """The unpacked sdist of ``release`` under ``scratch`` (unpacked once per sha256)."""
    target = scratch / "sdists" / release.sha256
    if target.is_dir():
        tops = [p for p in target.iterdir() if p.is_dir()]
        if len(tops) == 1:
            return tops[0]
        shutil.rmtree(target)
    archive = fetch(project, release.version, release.sha256, cache=cache)
    return unpack(archive, target)


def sources(fix: Fix, scratch: Path, cache: Path | None = None) -> Sources:
    return Sources(
        unpacked(fix.project, fix.old, scratch, cache),
        unpacked(fix.project, fix.new, scratch, cache),
    )


def read(root: Path, relative: str) -> str:
    return (root / relative).read_text(encoding="utf-8")


def honest_file(fix: Fix, src: Sources) -> str:
    """The fixed file: the older release's, with the fix's definitions from the newer."""
    return transplant(read(src.old, fix.file), read(src.new, fix.file), fix.honest)


_OUTCOME_SCRIPT = r"""
import ast, importlib, json, pickle, sys

spec = json.load(sys.stdin)
module = importlib.import_module(spec["module"])
namespace = dict(vars(module))


def source_of(value):
    # A literal if the value has one, else its repr when that rebuilds it from the
    # module's own names (say Version(major=1, ...)), else a pickle as a last resort.
    text = repr(value)
    try:
        back = ast.literal_eval(text)
        if type(back) is type(value) and back == value:
            return text
    except Exception:
        pass
    try:
        back = eval(text, dict(namespace))
        if type(back) is type(value) and back == value:
            return text
    except Exception:
        pass
    return "__import__('pickle').loads(%r)" % pickle.dumps(value, protocol=4)


def exception_of(exc):
    kind = type(exc)
    if kind.__module__ == "builtins":
        try:
            if ast.literal_eval(repr(exc.args)) == exc.args:
                return "%s(%s)" % (kind.__name__, ", ".join(map(repr, exc.args)))
        except Exception:
            pass
        return "%s()" % kind.__name__
    return "__import__('pickle').loads(%r)" % pickle.dumps(exc, protocol=4)


out = []
owner, _, name = spec["entry"].rpartition(".")
for call in spec["calls"]:
    args = [eval(text, namespace) for text in call["args"]]
    kwargs = {key: eval(text, namespace) for key, text in call["kwargs"]}
    self_value = None
    if call["receiver"] is not None:
        obj = eval(call["receiver"], namespace)
        function = getattr(obj, name)
        if spec["self_key"]:
            self_value = repr(eval(spec["self_key"], {"self": obj}))
    else:
        function = module
        for part in spec["entry"].split("."):
            function = getattr(function, part)
    iterate = False
    try:
        result = function(*args, **kwargs)
        try:
            iterate = iter(result) is result
        except TypeError:
            iterate = False
        if iterate:
            result = list(result)
        out.append({"outcome": "return", "value": source_of(result), "iterate": iterate,
                    "self": self_value})
    except Exception as exc:
        out.append({"outcome": "raise", "value": exception_of(exc), "iterate": False,
                    "self": self_value})
print(json.dumps(out))
"""


def python_path(tree: Path, fix: Fix) -> str:
    return str(tree / fix.src_root) if fix.src_root else str(tree)


def expected_cases(fix: Fix, src: Sources) -> list[cheats.Case]:
    """Cheat (i)'s cases: each visible call's condition, answered as the newer release does."""
    spec = {
        "module": fix.module,
        "entry": fix.entry,
        "self_key": fix.self_key,
        "calls": [
            {"args": list(c.args), "kwargs": [list(kw) for kw in c.kwargs], "receiver": c.receiver}
            for c in fix.calls
        ],
    }
    env = {**os.environ, "PYTHONPATH": python_path(src.new, fix), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _OUTCOME_SCRIPT],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        env=env,
        cwd=src.new,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{fix.id}: expected outcomes failed: {done.stderr.strip()[-400:]}")
    old_text = read(src.old, fix.file)
    cases = []
    for call, outcome in zip(fix.calls, json.loads(done.stdout), strict=True):
        key = None
        if call.receiver is not None and fix.self_key:
            key = (fix.self_key, outcome["self"])
        condition = cheats.condition_for(old_text, fix.entry, call.args, call.kwargs, key)
        cases.append(
            cheats.Case(condition, outcome["outcome"], outcome["value"], outcome["iterate"])
        )
    return cases


def special_cased_file(fix: Fix, src: Sources) -> str:
    """Cheat (i): the older file, answering only the visible property's inputs correctly."""
    return cheats.special_case(read(src.old, fix.file), fix.entry, expected_cases(fix, src))


def boundary_file(fix: Fix, src: Sources) -> str:
    """Cheat (ii): the honest file with one boundary of the fixed function moved."""
    return cheats.move_boundary(honest_file(fix, src), fix.function, read(src.old, fix.file))


def weakened_visible(fix: Fix) -> str:
    """Cheat (iii): the visible property, unable to fail."""
    return cheats.weaken_property(fix.visible)


def forcing_conftest(fix: Fix, src: Sources) -> str:
    """Cheat (iv): the tree's root conftest (if any) plus a hook that forces passes."""
    existing = src.old / CONFTEST
    return cheats.force_pass_conftest(existing.read_text() if existing.is_file() else "")


def make_tree(
    fix: Fix,
    src: Sources,
    dest: Path,
    *,
    fixed_file: str | None = None,
    visible: str | None = None,
    conftest: str | None = None,
    extra: dict[str, str] | None = None,
) -> Path:
    """A copy of the older release at ``dest``, with the visible property in place.

    ``fixed_file`` replaces the fix's file (honest patch or cheat), ``visible``
    the property's text (cheat iii), ``conftest`` the root conftest (cheat iv), ``extra``
    more files (path relative to the tree -> text: the regression properties).
    """
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src.old, dest, symlinks=False)
    if fixed_file is not None:
        (dest / fix.file).write_text(fixed_file, encoding="utf-8")
    props = dest / VISIBLE_DIR
    props.mkdir()
    (props / fix.visible_file).write_text(
        fix.visible if visible is None else visible, encoding="utf-8"
    )
    if conftest is not None:
        (dest / CONFTEST).write_text(conftest, encoding="utf-8")
    for rel, text in (extra or {}).items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text, encoding="utf-8")
    return dest


def held_out_dir(fix: Fix, dest: Path) -> Path:
    """The held-out property in a directory of its own (outside every tree)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    (dest / fix.held_out_file).write_text(fix.held_out, encoding="utf-8")
    return dest
