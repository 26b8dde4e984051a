"""The shape of the tree: facades that match their modules, dependencies one way.

server -> scorer -> sandbox; no package imports another's private modules;
the sandbox never imports anything of ours above it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sandbox", "scorer", "server")
ALLOWED = {"sandbox": set(), "scorer": {"sandbox"}, "server": {"sandbox", "scorer"}}


def imports_of(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.append(str(node.args[0].value))
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_dependencies_point_one_way_through_facades(package: str) -> None:
    problems = []
    for path in sorted((ROOT / package).glob("*.py")):
        for name in imports_of(path):
            if not name.startswith("patchwarden."):
                continue
            top, _, rest = name.removeprefix("patchwarden.").partition(".")
            if top not in PACKAGES or top == package:
                continue
            if top not in ALLOWED[package]:
                problems.append(f"{path.name}: {package} must not import {name}")
            elif rest:
                problems.append(f"{path.name}: imports {name}; use the {top} facade")
    assert problems == []


@pytest.mark.parametrize("package", ["sandbox", "scorer"])
def test_facade_exports_exist_and_are_sorted(package: str) -> None:
    module = importlib.import_module(f"patchwarden.{package}")
    names = list(module.__all__)
    assert len(names) == len(set(names))
    missing = [name for name in names if not hasattr(module, name)]
    assert missing == []
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and getattr(value, "__module__", module.__name__).startswith(module.__name__)
        and name not in {"annotations"}
    }
    assert public - set(names) == set()
