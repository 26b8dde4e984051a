"""Where a project's own code is imported from: its import roots and its packages.

Read from the tree, never from an installation (docs/design/runner.md, "The project's code"):

1. the pytest configuration pytest itself would use (``pytest.ini``, ``.pytest.ini``,
   ``pyproject.toml`` ``[tool.pytest.ini_options]``, ``tox.ini`` ``[pytest]``, ``setup.cfg``
   ``[tool:pytest]``, searched from the directory of the tests up to the tree root): its
   ``pythonpath``, relative to the directory of that file (pytest's rootdir);
2. the packaging metadata: setuptools ``package-dir`` and ``packages.find.where`` (in
   pyproject.toml or setup.cfg), hatch ``packages``/``sources``, flit ``module``, pdm
   ``package-dir``, poetry ``packages`` (``from``);
3. the plain convention ``src/<package>/__init__.py``;
4. the tree itself, always.

An operator override (``sandbox.import_roots``) replaces the roots of 1-3. The roots go on
``sys.path`` in this order, before anything of the interpreter's; the packages (found under
every root, the overridden ones included, and named by the metadata) are the names the
provenance check holds to the tree. Everything here reads files; nothing is imported or run, so a
malformed file is skipped with a note rather than trusted.
"""

from __future__ import annotations

import configparser
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ._pytest_config import PytestConfig, read_pytest_config

TEST_MACHINERY = ("pytest", "_pytest", "pluggy", "hypothesis")
"""The packages the trusted runner imports before the tree is importable. Its twin is
``MACHINERY`` in sandbox/_inside/_boot.py, a program that cannot import this one;
tests/test_reporter.py holds the two equal."""

MACHINERY_NAMES = frozenset(
    {*TEST_MACHINERY, "_hypothesis_pytestplugin", "sitecustomize", "usercustomize"}
)
"""Names the shadowing check owns (a tree module by these names is a finding of its own):
the test machinery, the Hypothesis plugin the runner loads and the interpreter's startup
hooks."""

NAMESPACE_DEPTH = 3
"""How deep a namespace directory under an import root is searched for packages."""

PYTEST_INI_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
"""pytest's own order of preference within one directory."""


@dataclass(frozen=True)
class ImportLayout:
    """The directories of a tree that go on sys.path, and the project's own import names."""

    roots: tuple[str, ...] = (".",)
    """Tree-relative directories, in sys.path order; always ends with "." (the tree)."""
    packages: tuple[str, ...] = ()
    """The project's importable names (dotted for packages inside a namespace directory)."""
    sources: tuple[str, ...] = ()
    """Where each root other than "." was read, e.g. ``src (setuptools package-dir)``."""
    notes: tuple[str, ...] = field(default=(), compare=False)
    """What was skipped and why (an entry outside the tree, a file that does not parse)."""
    pytest: PytestConfig = field(default_factory=PytestConfig)
    """The project's pytest configuration, read from the same file as its ``pythonpath``
    (sandbox/_pytest_config.py): read with the layout, from the parent, so both trees of a
    score and the agent's runs are run with the same one."""

    def to_json(self) -> dict[str, list[str]]:
        """What the runner inside the sandbox needs."""
        return {"roots": list(self.roots), "packages": list(self.packages)}


class _Found:
    """Roots and packages as they are found, in order, without repeats."""

    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.roots: dict[str, str] = {}
        self.packages: dict[str, None] = {}
        self.notes: list[str] = []

    def root(self, raw: str, source: str, *, base: str = ".") -> None:
        relative = _tree_relative(base, raw)
        if relative is None:
            self.notes.append(f"{source}: {raw!r} is not a directory inside the tree; ignored")
            return
        problem = _directory_problem(self.tree, relative)
        if problem:
            self.notes.append(f"{source}: {relative} {problem}; ignored")
            return
        self.roots.setdefault(relative, source)

    def package(self, name: str) -> None:
        if _is_project_name(name):
            self.packages.setdefault(name, None)


def detect_layout(
    tree: Path, *, override: Sequence[str] | None = None, start: str = "."
) -> ImportLayout:
    """The import layout of ``tree``; ``start`` is the tree-relative directory of the tests
    (where pytest starts looking for its configuration)."""
    found = _Found(tree)
    pytest_config = _from_pytest_config(found, start)
    pyproject = _read_toml(found, "pyproject.toml")
    setup_cfg = _read_ini(found, "setup.cfg")
    _from_setuptools(found, pyproject, setup_cfg)
    _from_hatch(found, pyproject)
    _from_flit(found, pyproject)
    _from_pdm(found, pyproject)
    _from_poetry(found, pyproject)
    if _is_src_layout(tree):
        found.root("src", "src/<package> convention")
    detected = [root for root in found.roots if root != "."]
    if override is not None:
        # The operator's roots replace what was read; the packages found through either
        # still belong to the project (the provenance check holds them all to the tree).
        found.roots = {}
        for raw in override:
            found.root(raw, "sandbox.import_roots")
    found.roots.pop(".", None)
    roots = (*found.roots, ".")
    for root in (*roots, *detected):
        for name in _discover(tree / root, depth=0 if root == "." else NAMESPACE_DEPTH):
            found.package(name)
    return ImportLayout(
        roots=roots,
        packages=tuple(found.packages),
        sources=tuple(f"{root} ({source})" for root, source in found.roots.items()),
        notes=tuple(found.notes),
        pytest=pytest_config,
    )


# --- pytest ----------------------------------------------------------------------------------


def pytest_config_at(repo: Path, sha: str, *, start: str = ".") -> PytestConfig:
    """The pytest configuration of commit ``sha``, as ``detect_layout`` reads it from a
    checkout: for the agent's runs, which read it from the base commit (as the scorer does
    from the parent), not from the worktree the agent edits."""
    from ._git import file_at  # the layout reads trees; only this reads a commit

    with tempfile.TemporaryDirectory(prefix="patchwarden-pytest-config-") as scratch:
        tree = Path(scratch)
        for directory in _upwards(start):
            for name in PYTEST_INI_FILES:
                rel = name if directory == "." else f"{directory}/{name}"
                data = file_at(repo, sha, rel)
                if data is not None:
                    (tree / rel).parent.mkdir(parents=True, exist_ok=True)
                    (tree / rel).write_bytes(data)
        return _from_pytest_config(_Found(tree), start)


def _from_pytest_config(found: _Found, start: str) -> PytestConfig:
    """The file pytest would use: its ``pythonpath`` (relative to that file's directory) as
    roots, and the rest of its configuration. A candidate that does not parse is a problem:
    pytest itself would stop on it."""
    unreadable: list[str] = []
    for directory in _upwards(start):
        for name in PYTEST_INI_FILES:
            rel = name if directory == "." else f"{directory}/{name}"
            before = len(found.notes)
            settings = _pytest_settings(found, rel)
            if len(found.notes) > before:
                note = found.notes[-1].removesuffix("; ignored")
                unreadable.append(f"{note}: pytest stops on it")
            if settings is None:
                continue
            config = read_pytest_config(rel, directory, settings, unreadable)
            raw = settings.get("pythonpath", [])
            entries = raw.split() if isinstance(raw, str) else raw
            if not isinstance(entries, list):
                found.notes.append(f"{rel}: pytest pythonpath is not a list; ignored")
                return config
            for entry in entries:
                found.root(str(entry), f"pytest pythonpath in {rel}", base=directory)
            return config
    return read_pytest_config("", ".", None, unreadable)


def _upwards(start: str) -> list[str]:
    """``start`` and each directory above it up to the tree root ("." last)."""
    relative = _tree_relative(".", start) or "."
    parts = PurePosixPath(relative).parts if relative != "." else ()
    return [("/".join(parts[:n]) or ".") for n in range(len(parts), -1, -1)]


def _pytest_settings(found: _Found, rel: str) -> Mapping[str, Any] | None:
    """The pytest section of ``rel`` if it has one (pytest's own rules per file type)."""
    name = PurePosixPath(rel).name
    if name == "pyproject.toml":
        data = _read_toml(found, rel)
        tool = data.get("tool", {}) if isinstance(data, dict) else {}
        pytest_table = tool.get("pytest", {}) if isinstance(tool, dict) else {}
        if isinstance(pytest_table, dict) and isinstance(pytest_table.get("ini_options"), dict):
            return dict(pytest_table["ini_options"])
        if isinstance(pytest_table, dict) and pytest_table:
            return pytest_table  # pytest 9's native [tool.pytest] table
        return None
    parser = _read_ini(found, rel)
    if parser is None:
        return None
    section = {"setup.cfg": "tool:pytest"}.get(name, "pytest")
    if not parser.has_section(section):
        # pytest.ini counts even without a [pytest] section; the others do not.
        return {} if name in ("pytest.ini", ".pytest.ini") else None
    return dict(parser.items(section, raw=True))


# --- packaging metadata ----------------------------------------------------------------------


def _table(data: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _from_setuptools(
    found: _Found, pyproject: dict[str, Any], setup_cfg: configparser.ConfigParser | None
) -> None:
    tool = _table(pyproject, "tool", "setuptools")
    _package_dir(found, _as_mapping(tool.get("package-dir")), "setuptools package-dir")
    where = _table(tool, "packages", "find").get("where")
    for entry in where if isinstance(where, list) else []:
        found.root(str(entry), "setuptools packages.find.where")
    for key in ("packages", "py-modules"):
        names = tool.get(key)
        for name in names if isinstance(names, list) else []:
            found.package(str(name).split(".", 1)[0] if key == "packages" else str(name))
    if setup_cfg is None:
        return
    if setup_cfg.has_option("options", "package_dir"):
        raw = setup_cfg.get("options", "package_dir", raw=True)
        _package_dir(found, _cfg_mapping(raw), "setuptools package_dir in setup.cfg")
    if setup_cfg.has_option("options.packages.find", "where"):
        for entry in setup_cfg.get("options.packages.find", "where", raw=True).split():
            found.root(entry, "setuptools packages.find where in setup.cfg")
    for key in ("packages", "py_modules"):
        if setup_cfg.has_option("options", key):
            for name in setup_cfg.get("options", key, raw=True).replace(",", " ").split():
                if name != "find:" and name != "find_namespace:":
                    found.package(name.split(".", 1)[0] if key == "packages" else name)


def _as_mapping(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def _cfg_mapping(raw: str) -> dict[str, str]:
    """setup.cfg ``package_dir``: ``=src`` or lines of ``name = path``."""
    mapping = {}
    for line in raw.replace(",", "\n").splitlines():
        if "=" in line:
            name, _, path = line.partition("=")
            mapping[name.strip()] = path.strip()
    return mapping


def _package_dir(found: _Found, mapping: Mapping[str, str], source: str) -> None:
    """``{"": "src"}`` makes src a root; ``{"pkg": "lib/pkg"}`` makes lib one. A package
    mapped to a directory of another name cannot be imported through sys.path."""
    for name, path in mapping.items():
        if not name:
            found.root(path, source)
            continue
        suffix = PurePosixPath(*name.split("."))
        pure = PurePosixPath(path)
        if pure.parts[-len(suffix.parts) :] == suffix.parts:
            base = (
                PurePosixPath(*pure.parts[: -len(suffix.parts)])
                if pure.parts != suffix.parts
                else None
            )
            found.root(str(base) if base else ".", source)
            found.package(name.split(".", 1)[0])
        else:
            found.notes.append(
                f"{source}: package {name!r} lives in {path!r} under another name; "
                "it cannot be put on sys.path (set sandbox.import_roots or rename)"
            )


def _from_hatch(found: _Found, pyproject: dict[str, Any]) -> None:
    for table in (
        _table(pyproject, "tool", "hatch", "build", "targets", "wheel"),
        _table(pyproject, "tool", "hatch", "build"),
    ):
        packages = table.get("packages")
        for entry in packages if isinstance(packages, list) else []:
            pure = PurePosixPath(str(entry))
            found.root(str(pure.parent), "hatch packages")
            found.package(pure.name)
        sources = table.get("sources")
        if isinstance(sources, list):
            for entry in sources:
                found.root(str(entry), "hatch sources")
        elif isinstance(sources, dict):
            for path, prefix in sources.items():
                if not prefix:
                    found.root(str(path), "hatch sources")
                else:
                    _package_dir(found, {str(prefix).replace("/", "."): str(path)}, "hatch sources")


def _from_flit(found: _Found, pyproject: dict[str, Any]) -> None:
    module = _table(pyproject, "tool", "flit", "module").get("name")
    backend = str(_table(pyproject, "build-system").get("build-backend", ""))
    if not isinstance(module, str):
        if not backend.startswith("flit"):
            return
        module = str(_table(pyproject, "project").get("name", "")).replace("-", "_")
    if not module:
        return
    path = module.replace(".", "/")
    for base in (".", "src"):  # flit's own search order
        prefix = "" if base == "." else "src/"
        if (found.tree / f"{prefix}{path}").is_dir() or (
            found.tree / f"{prefix}{path}.py"
        ).is_file():
            found.root(base, "flit module")
            found.package(module.split(".", 1)[0] if base == "." else module)
            return


def _from_pdm(found: _Found, pyproject: dict[str, Any]) -> None:
    package_dir = _table(pyproject, "tool", "pdm", "build").get("package-dir")
    if isinstance(package_dir, str):
        found.root(package_dir, "pdm package-dir")


def _from_poetry(found: _Found, pyproject: dict[str, Any]) -> None:
    packages = _table(pyproject, "tool", "poetry").get("packages")
    for entry in packages if isinstance(packages, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("include"), str):
            continue
        base = str(entry.get("from", "."))
        found.root(base, "poetry packages")
        found.package(entry["include"].split("/", 1)[0].removesuffix(".py"))


# --- reading the tree --------------------------------------------------------------------------


def _read_toml(found: _Found, rel: str) -> dict[str, Any]:
    path = found.tree / rel
    if not _plain_file(found.tree, rel):
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        found.notes.append(f"{rel}: not readable TOML ({exc}); ignored")
        return {}


def _read_ini(found: _Found, rel: str) -> configparser.ConfigParser | None:
    if not _plain_file(found.tree, rel):
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string((found.tree / rel).read_text(encoding="utf-8"), source=rel)
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        found.notes.append(f"{rel}: not a readable ini file ({type(exc).__name__}); ignored")
        return None
    return parser


def _plain_file(tree: Path, rel: str) -> bool:
    """A regular file reached without symlinks (a link could point anywhere on the host)."""
    path = tree
    for part in PurePosixPath(rel).parts:
        path = path / part
        if path.is_symlink():
            return False
    return path.is_file()


def _tree_relative(base: str, raw: str) -> str | None:
    """``raw`` (relative to the tree-relative ``base``) as a normal tree-relative path, or
    None when it is absolute or leaves the tree."""
    raw = raw.strip()
    if not raw or raw.startswith("/") or "\\" in raw or "\0" in raw:
        return None
    parts: list[str] = [] if base == "." else list(PurePosixPath(base).parts)
    for part in PurePosixPath(raw).parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts) or "."


def _directory_problem(tree: Path, relative: str) -> str:
    path = tree
    for part in PurePosixPath(relative).parts if relative != "." else ():
        path = path / part
        if path.is_symlink():
            return "goes through a symlink"
    return "" if path.is_dir() else "does not exist"


def _discover(directory: Path, *, depth: int, prefix: str = "") -> Iterable[str]:
    """Importable names directly in ``directory``: packages, modules, and (``depth`` > 0)
    packages inside namespace directories."""
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue
        name = entry.name.removesuffix(".py") if entry.is_file() else entry.name
        if not name.isidentifier():
            continue
        module = entry.is_file() and entry.suffix == ".py"
        if module or (entry.is_dir() and (entry / "__init__.py").is_file()):
            yield prefix + name
        elif entry.is_dir() and depth > 0:
            yield from _discover(entry, depth=depth - 1, prefix=f"{prefix}{name}.")


def _is_src_layout(tree: Path) -> bool:
    """``src/<package>/__init__.py``: src is not itself a package and holds one."""
    src = tree / "src"
    if src.is_symlink() or not src.is_dir() or (src / "__init__.py").exists():
        return False
    return any(_discover(src, depth=NAMESPACE_DEPTH))


def _is_project_name(name: str) -> bool:
    top = name.split(".", 1)[0]
    return (
        all(part.isidentifier() for part in name.split("."))
        and top not in MACHINERY_NAMES
        and top not in sys.stdlib_module_names
        and top != "__main__"
    )
