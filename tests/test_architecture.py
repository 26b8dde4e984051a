"""The shape of the tree: one namespace, facades that match their modules, dependencies one way.

- server -> scorer -> sandbox, and each may use the root (patchwarden._errors);
- across packages only facades (``patchwarden.scorer``) or public modules
  (``patchwarden.scorer.protocol``), never a ``_private`` module;
- the gate group (scorer/gate/ and what it imports) is pure: no git, no subprocess, no sandbox;
- the real scorer child never loads the server;
- nothing but ``patchwarden`` is importable as a top-level name of ours.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchwarden.sandbox import SandboxConfig
from patchwarden.scorer import ScorerConfig
from patchwarden.scorer.protocol import Ping, Start, encode

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sandbox", "scorer", "server")
ALLOWED = {"sandbox": set(), "scorer": {"sandbox"}, "server": {"sandbox", "scorer"}}
IMPURE = ("git", "subprocess", "multiprocessing", "socket", "patchwarden.sandbox", "shutil")


def imports_of(path: Path) -> list[tuple[str, int]]:
    """(absolute or dotted-relative module name, level) of every import in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.append((str(node.args[0].value), 0))
    return found


def modules_of(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_dependencies_point_one_way_through_facades(package: str) -> None:
    problems = []
    for path in modules_of(package):
        for name, level in imports_of(path):
            if level or not name.startswith("patchwarden."):
                continue
            top, _, rest = name.removeprefix("patchwarden.").partition(".")
            if top not in PACKAGES or top == package:
                continue
            where = path.relative_to(ROOT)
            if top not in ALLOWED[package]:
                problems.append(f"{where}: {package} must not import {name}")
            elif any(part.startswith("_") for part in rest.split(".") if part):
                problems.append(f"{where}: imports {name}; use the {top} facade")
    assert problems == []


def _resolve(path: Path, module: str, level: int) -> Path | None:
    """The file a relative import inside the scorer names, if it is one of ours."""
    base = path.parent
    for _ in range(level - 1):
        base = base.parent
    target = base.joinpath(*module.split(".")) if module else base
    for candidate in (target.with_suffix(".py"), target / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_the_gate_group_is_pure() -> None:
    """scorer/gate/ and everything it imports from the scorer: no git, subprocess or sandbox."""
    seen: set[Path] = set()
    todo = list((ROOT / "scorer" / "gate").glob("*.py"))
    problems = []
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name, level in imports_of(path):
            if level:
                target = _resolve(path, name, level)
                if (target is not None and target.name != "__init__.py") or (
                    target is not None and target.parent.name == "gate"
                ):
                    todo.append(target)
                continue
            if name.split(".")[0] in IMPURE or name.startswith(IMPURE):
                problems.append(f"{path.relative_to(ROOT)}: imports {name}")
    assert problems == []
    assert ROOT / "scorer" / "_contract.py" in seen  # the walk follows relative imports


@pytest.mark.parametrize("package", ["sandbox", "scorer", "server", "scorer.gate"])
def test_facade_exports_exist_and_are_sorted(package: str) -> None:
    module = importlib.import_module(f"patchwarden.{package}")
    names = list(module.__all__)
    assert len(names) == len(set(names))
    assert names == sorted(names, key=lambda n: (not n.isupper(), n))
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


@pytest.mark.bwrap
def test_the_real_scorer_child_never_loads_the_server(tmp_path: Path, example_repo: Path) -> None:
    dump = tmp_path / "modules.json"
    # The child as the server starts it, with one hook: at exit it writes sys.modules.
    harness = (
        "import atexit, json, runpy, sys\n"
        f"out = {str(dump)!r}\n"
        "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules))))\n"
        "runpy.run_module('patchwarden.scorer', run_name='__main__', alter_sys=True)\n"
    )
    start = Start(
        repo=str(example_repo),
        contract="contract/differential-contract.yaml",
        scorer=ScorerConfig(state_dir=str(tmp_path / "state"), log_dir=str(tmp_path / "logs")),
        sandbox=SandboxConfig(),
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", harness],
        input=encode(start) + encode(Ping(id=1)),
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers == [{"answer": "ready"}, {"answer": "pong", "id": 1}]
    loaded = json.loads(dump.read_text())
    assert "patchwarden.scorer._process" in loaded and "patchwarden.sandbox" in loaded
    assert [m for m in loaded if m.startswith("patchwarden.server")] == []
    assert "mcp" not in loaded and "click" not in loaded


def test_only_patchwarden_is_importable_from_outside_the_checkout(tmp_path: Path) -> None:
    probe = (
        "import importlib.util, json\n"
        "names = ['server', 'scorer', 'sandbox', 'configs', 'examples', 'package', 'patchwarden',"
        " 'patchwarden.server', 'patchwarden.scorer', 'patchwarden.sandbox',"
        " 'patchwarden.configs', 'patchwarden.examples']\n"
        "print(json.dumps({n: importlib.util.find_spec(n) is not None for n in names}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-P", "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    found = json.loads(done.stdout)
    assert {n for n, ok in found.items() if ok} == {
        "patchwarden",
        "patchwarden.server",
        "patchwarden.scorer",
        "patchwarden.sandbox",
        "patchwarden.configs",
        "patchwarden.examples",
    }


def test_every_package_folder_is_in_the_distribution() -> None:
    """A sub-package missing from pyproject's list works in the checkout and is absent from
    the wheel."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = {folder: name for name, folder in config["package-dir"].items()}
    expected = set()
    for folder, name in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            if any(part in {"template", "patches"} for part in relative.parts):
                continue  # the example repository's own packages are data
            expected.add(".".join([name, *relative.parts]))
    assert set(config["packages"]) == expected


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("tests/properties", ""),
        ("a.py", ""),
        ("dir/", ""),
        ("", "must be a non-empty path"),
        ("/etc/passwd", "must be relative to the tree"),
        ("a\\b.py", "must be a POSIX path"),
        ("a/../b", "must not contain '.', '..' or empty components"),
        ("./a", "must not contain '.', '..' or empty components"),
        ("a//b", "must not contain '.', '..' or empty components"),
        (".git/config", "must not be inside .git"),
        (5, "must be a non-empty path"),
    ],
)
def test_one_rule_for_tree_paths(value: object, problem: str) -> None:
    from patchwarden._treepaths import tree_path_problem

    assert tree_path_problem(value) == problem
