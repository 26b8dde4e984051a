"""The project's environment: a venv holding its declared dependencies and the test machinery.

``patchwarden env build`` reads what the project declares (pyproject.toml ``[project]``
dependencies, the extras and dependency groups the operator names, setup.cfg
``install_requires``, requirements files), adds pytest and Hypothesis at versions the runner
supports, and installs them into a new venv keyed by a hash of all of it, in the scorer's
state directory. The venv never holds the project itself (its code comes from the tree, see
sandbox/_layout.py) nor anything of patchwarden's own. ``sandbox.python`` points at it;
sandboxed runs stay offline: installing happens here, at build time, only.

Installing runs the index's build code on the host, as any ``pip install`` does: it is an
operator step on declarations the operator reviewed, never something an agent triggers.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from ._errors import ConfigError, InputError
from ._runtime import python_identity

RUNNER_SUPPORTS = {"pytest": SpecifierSet(">=8,<10"), "hypothesis": SpecifierSet(">=6.100,<7")}
"""The test machinery versions the trusted runner and its reporter work with (the hooks it
wraps, the Hypothesis settings it forces)."""

ENV_FORMAT = 1
"""Bumped when the layout of a built env changes, so old builds are not reused."""

MARKER = ".patchwarden-env.json"
"""Written last into a finished env: an env without it is a broken build."""

PIP_TIMEOUT_S = 1800.0
"""A generous bound for resolving and installing the declared dependencies."""

Step = Callable[[int, int, str], None]
"""``(done, total, what)`` for a progress line."""


@dataclass(frozen=True)
class Declarations:
    """What the project declares it needs, as pip requirement strings."""

    requirements: tuple[str, ...]
    sources: tuple[str, ...]
    """Where each group of requirements was read (``pyproject.toml [project] dependencies``)."""
    dropped: tuple[str, ...] = ()
    """Lines left out, with why (the project itself, an editable path, a pip option)."""
    project: str | None = None
    """The project's own distribution name, if declared (never installed)."""
    version: str | None = None
    """The project's own version as the tree declares it (pyproject.toml ``[project]
    version``, setup.cfg ``[metadata] version``, or a release's ``PKG-INFO``); None when it is
    computed at build time and the tree does not say it."""


@dataclass(frozen=True)
class BuiltEnv:
    """A venv for ``sandbox.python``."""

    path: Path
    python: Path
    key: str
    reused: bool
    requirements: tuple[str, ...]
    """Everything installed on request: the declarations and the pinned test machinery."""
    removed: tuple[str, ...] = field(default=())
    """Distributions a dependency pulled in that hold the project's own packages (removed)."""


def read_declarations(
    tree: Path,
    *,
    extras: Sequence[str] = (),
    groups: Sequence[str] = (),
    requirement_files: Sequence[str] = (),
) -> Declarations:
    """The requirements ``tree`` declares, with the extras, groups and files named."""
    found = _Found()
    pyproject_text = _text(tree / "pyproject.toml")
    pyproject: dict[str, Any] = {}
    if pyproject_text is not None:
        try:
            pyproject = tomllib.loads(pyproject_text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"not valid TOML: {exc}", where=str(tree / "pyproject.toml")) from None
    project = pyproject.get("project") if isinstance(pyproject.get("project"), dict) else {}
    assert isinstance(project, dict)
    name = project.get("name")
    found.project = canonicalize_name(name) if isinstance(name, str) else None
    setup_cfg = _setup_cfg(tree)
    if found.project is None and setup_cfg is not None and setup_cfg.has_option("metadata", "name"):
        found.project = canonicalize_name(setup_cfg.get("metadata", "name"))
    where = str(tree / "pyproject.toml")
    _project_table(found, project, extras, where, pyproject_text or "")
    _dependency_groups(found, pyproject, groups, where, pyproject_text or "")
    _setup_cfg_requirements(found, setup_cfg, extras, tree)
    if _poetry_dependencies(pyproject) and not found.sources:
        found.dropped.append(
            "[tool.poetry.dependencies] is not read: export it (poetry export -f "
            "requirements.txt -o requirements.txt) and pass --requirement requirements.txt"
        )
    for rel in requirement_files:
        _requirements_file(found, tree, rel, seen=set())
    missing_extras = [e for e in extras if e not in found.extras_seen]
    if missing_extras:
        raise InputError(
            f"extra {missing_extras[0]!r} is not declared "
            "([project.optional-dependencies] or setup.cfg [options.extras_require])",
            where=where,
        )
    return Declarations(
        requirements=tuple(dict.fromkeys(found.requirements)),
        sources=tuple(found.sources),
        dropped=tuple(found.dropped),
        project=found.project,
        version=_declared_version(tree, project, setup_cfg) if found.project else None,
    )


def _declared_version(tree: Path, project: dict[str, Any], setup_cfg: Any) -> str | None:
    version = project.get("version")
    if isinstance(version, str) and version.strip():
        return version.strip()
    if setup_cfg is not None and setup_cfg.has_option("metadata", "version"):
        value = str(setup_cfg.get("metadata", "version")).strip()
        if value and ":" not in value:  # ``attr:`` and ``file:`` are computed at build time
            return value
    pkg_info = _text(tree / "PKG-INFO")  # a release's sdist says what the build computed
    for line in (pkg_info or "").splitlines():
        if line.startswith("Version:"):
            return line.removeprefix("Version:").strip() or None
        if not line.strip():
            break
    return None


class _Found:
    def __init__(self) -> None:
        self.requirements: list[str] = []
        self.sources: list[str] = []
        self.dropped: list[str] = []
        self.extras_seen: set[str] = set()
        self.project: str | None = None

    def add(self, raw: str, source: str) -> None:
        try:
            requirement = Requirement(raw)
        except InvalidRequirement as exc:
            raise InputError(f"not a requirement: {raw!r} ({exc})", where=source) from None
        if self.project is not None and canonicalize_name(requirement.name) == self.project:
            self.dropped.append(f"{raw} ({source}): the project itself comes from the tree")
            return
        self.requirements.append(str(requirement))


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", where=str(path)) from None


def _project_table(
    found: _Found, project: dict[str, Any], extras: Sequence[str], where: str, text: str
) -> None:
    dependencies = project.get("dependencies", [])
    if not isinstance(dependencies, list):
        line = line_of_toml(text, "dependencies")
        raise InputError("[project] dependencies must be a list", where=f"{where}{line}")
    for raw in dependencies:
        found.add(str(raw), "pyproject.toml [project] dependencies")
    if dependencies:
        found.sources.append("pyproject.toml [project] dependencies")
    optional = project.get("optional-dependencies", {})
    for extra in extras:
        if isinstance(optional, dict) and extra in optional:
            found.extras_seen.add(extra)
            for raw in optional[extra]:
                found.add(str(raw), f"pyproject.toml [project.optional-dependencies] {extra}")
            found.sources.append(f"pyproject.toml [project.optional-dependencies] {extra}")


def _dependency_groups(
    found: _Found, pyproject: dict[str, Any], groups: Sequence[str], where: str, text: str
) -> None:
    """PEP 735 ``[dependency-groups]``, with ``{include-group = ...}`` entries."""
    table = pyproject.get("dependency-groups", {})
    table = table if isinstance(table, dict) else {}

    def expand(group: str, trail: tuple[str, ...]) -> list[str]:
        if group in trail:
            raise InputError(
                f"dependency group {group!r} includes itself ({' -> '.join((*trail, group))})",
                where=where,
            )
        if group not in table:
            declared = ", ".join(sorted(table)) or "none"
            raise InputError(
                f"dependency group {group!r} is not declared (declared: {declared})",
                where=f"{where}{line_of_toml(text, 'dependency-groups')}",
            )
        out: list[str] = []
        for entry in table[group]:
            if isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
                out += expand(entry["include-group"], (*trail, group))
            else:
                out.append(str(entry))
        return out

    for group in groups:
        for raw in expand(group, ()):
            found.add(raw, f"pyproject.toml [dependency-groups] {group}")
        found.sources.append(f"pyproject.toml [dependency-groups] {group}")


def line_of_toml(text: str, key: str) -> str:
    """``:LINE`` of the first line defining ``key`` or table ``[key]`` in a TOML text."""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith((f"{key} ", f"{key}=", f"[{key}]")):
            return f":{number}"
    return ""


def _setup_cfg(tree: Path) -> Any:
    import configparser

    text = _text(tree / "setup.cfg")
    if text is None:
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source="setup.cfg")
    except configparser.Error as exc:
        raise InputError(f"not a readable ini file: {exc}", where=str(tree / "setup.cfg")) from None
    return parser


def _setup_cfg_requirements(found: _Found, parser: Any, extras: Sequence[str], tree: Path) -> None:
    if parser is None:
        return
    if parser.has_option("options", "install_requires"):
        lines = _cfg_lines(parser.get("options", "install_requires"))
        for raw in lines:
            found.add(raw, "setup.cfg [options] install_requires")
        if lines:
            found.sources.append("setup.cfg [options] install_requires")
    for extra in extras:
        if parser.has_option("options.extras_require", extra):
            found.extras_seen.add(extra)
            for raw in _cfg_lines(parser.get("options.extras_require", extra)):
                found.add(raw, f"setup.cfg [options.extras_require] {extra}")
            found.sources.append(f"setup.cfg [options.extras_require] {extra}")


def _cfg_lines(value: str) -> list[str]:
    return [
        line.strip() for line in value.splitlines() if line.strip() and not line.startswith("#")
    ]


def _requirements_file(found: _Found, tree: Path, rel: str, *, seen: set[Path]) -> None:
    """A requirements file: relative to the repository, or anywhere (an absolute path, or
    one leading out of it): projects keep their test requirements in tox.ini, so the
    operator writes them to a file of their own. It is read by the operator's build, never
    by a run, and its lines are part of the env's key like any declaration."""
    path = (tree / rel).resolve()
    if path in seen:
        return
    seen.add(path)
    text = _text(path)
    if text is None:
        raise InputError("requirements file not found", where=str(path))
    inside = path.is_relative_to(tree.resolve())
    shown = path.relative_to(tree.resolve()).as_posix() if inside else str(path)
    found.sources.append(shown)
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        where = f"{shown}:{number}"
        if line.startswith(("-r ", "--requirement ")):
            nested = line.split(maxsplit=1)[1]
            _requirements_file(found, tree, str(Path(shown).parent / nested), seen=seen)
        elif line.startswith("-") and not line.startswith(("-e", "--editable")):
            found.dropped.append(f"{line} ({where}): pip options are not passed on")
        elif line.startswith(("-e", "--editable", ".", "/", "file:")) or "://" in line:
            found.dropped.append(f"{line} ({where}): paths and URLs are not installed")
        else:
            found.add(line, where)


def _poetry_dependencies(pyproject: dict[str, Any]) -> bool:
    tool = pyproject.get("tool", {})
    poetry = tool.get("poetry", {}) if isinstance(tool, dict) else {}
    deps = poetry.get("dependencies", {}) if isinstance(poetry, dict) else {}
    return isinstance(deps, dict) and any(k != "python" for k in deps)


# --- the test machinery ------------------------------------------------------------------------


def runner_requirements(declared: Sequence[str]) -> list[str]:
    """pytest and Hypothesis: pinned to the versions running patchwarden (the ones the runner
    is tested with) unless the project declares them, then within what the runner supports."""
    names = {canonicalize_name(Requirement(r).name) for r in declared}
    out = []
    for name, supported in RUNNER_SUPPORTS.items():
        if name in names:
            out.append(f"{name}{supported}")
        else:
            out.append(f"{name}=={installed_version(name)}")
    return out


def env_key(requirements: Sequence[str], python: str, *, own_metadata: str | None = None) -> str:
    """A short hash of everything that decides an env's contents."""
    identity: dict[str, Any] = {
        "format": ENV_FORMAT,
        "python": python_identity(python),
        "requirements": sorted(requirements),
    }
    if own_metadata is not None:
        identity["own_metadata"] = own_metadata
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    return digest[:16]


# --- building ----------------------------------------------------------------------------------


def build_env(
    envs_dir: Path,
    declarations: Declarations,
    *,
    python: str | None = None,
    project_packages: Sequence[str] = (),
    on_step: Step | None = None,
) -> BuiltEnv:
    """The venv for ``declarations`` under ``envs_dir``: reused when one with the same key is
    finished, else built (a broken earlier build is removed first)."""
    base = python or sys.executable
    requirements = [*declarations.requirements, *runner_requirements(declarations.requirements)]
    key = env_key(requirements, base, own_metadata=own_metadata_name(declarations))
    path = envs_dir / key
    interpreter = path / "bin" / "python"
    step = on_step or (lambda done, total, what: None)
    envs_dir.mkdir(parents=True, exist_ok=True)
    with _locked(envs_dir / f"{key}.lock"):
        if _finished(path, key):
            step(3, 3, "up to date")
            return BuiltEnv(path, interpreter, key, True, tuple(requirements))
        if path.exists():
            shutil.rmtree(path)
        try:
            step(0, 3, "creating the venv")
            _run([base, "-m", "venv", "--without-pip", str(path)], "python -m venv")
            step(1, 3, f"installing {len(requirements)} requirements")
            _pip(interpreter, ["install", "--no-input", *requirements])
            step(2, 3, "checking the env holds no copy of the project")
            removed = _remove_project_copies(interpreter, project_packages, declarations)
            _write_own_metadata(interpreter, declarations)
            _write_marker(path, key, requirements, removed)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        step(3, 3, "built")
    return BuiltEnv(path, interpreter, key, False, tuple(requirements), tuple(removed))


UNKNOWN_VERSION = "0+unknown"


def own_metadata_name(declarations: Declarations) -> str | None:
    """``name-version`` of the project's metadata-only distribution in its env, or None when
    the project declares no name."""
    if declarations.project is None:
        return None
    return f"{declarations.project}-{declarations.version or UNKNOWN_VERSION}"


def _write_own_metadata(interpreter: Path, declarations: Declarations) -> None:
    """The project's own distribution metadata, with no code: what ``pip install -e .`` gives
    a developer's env, so ``importlib.metadata.version(name)`` answers as in the project's own
    pytest (portion reads its ``__version__`` so). It lists no file and no top-level package
    (the env still holds no copy of the project: its code comes from the tree), and it comes
    from the base's declarations, never the patch's. A version the tree does not state (computed
    at build time) is ``0+unknown``, and ``env build`` says so."""
    if declarations.project is None:
        return
    out = _run(
        [str(interpreter), "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        "finding the env's site-packages",
    )
    version = declarations.version or UNKNOWN_VERSION
    stem = f"{declarations.project.replace('-', '_')}-{version.replace('-', '_')}"
    folder = Path(out.strip()) / f"{stem}.dist-info"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {declarations.project}\nVersion: {version}\n",
        encoding="utf-8",
    )
    (folder / "INSTALLER").write_text("patchwarden (metadata only)\n", encoding="utf-8")


@contextlib.contextmanager
def _locked(lock: Path) -> Iterator[None]:
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _finished(path: Path, key: str) -> bool:
    try:
        marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(marker, dict) and marker.get("key") == key and (path / "bin" / "python").exists()
    )


def _write_marker(
    path: Path, key: str, requirements: Sequence[str], removed: Sequence[str]
) -> None:
    data = {"key": key, "requirements": list(requirements), "removed": list(removed)}
    tmp = path / f"{MARKER}.tmp"
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path / MARKER)


def _run(argv: Sequence[str], what: str) -> str:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"{what} did not finish in {PIP_TIMEOUT_S:g}s", where="env build"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{what} could not start: {exc.strerror}", where=argv[0]) from None
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("ERROR")] or lines or ["no output"]
        raise ConfigError(f"{what} failed: {errors[-1]}", where="env build")
    return done.stdout


def _pip(interpreter: Path, args: Sequence[str]) -> str:
    """The host's pip, installing into ``interpreter``'s env (the env itself holds no pip)."""
    return _run(
        [sys.executable, "-m", "pip", "--python", str(interpreter), "--disable-pip-version-check",
         "--quiet", *args],
        f"pip {args[0]}",
    )  # fmt: skip


FIND_COPIES = """
import importlib.metadata, importlib.util, json, os, site, sys, sysconfig
standard = {os.path.realpath(sysconfig.get_path(k)) for k in ("stdlib", "platstdlib")}
installed = {os.path.realpath(sysconfig.get_path(k)) for k in ("purelib", "platlib")}
installed |= {os.path.realpath(p) for p in site.getsitepackages()}
found = {}
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    where = (spec.origin or ",".join(spec.submodule_search_locations or [])) if spec else ""
    if spec is None or spec.origin == "built-in" or spec.origin == "frozen":
        continue
    real = os.path.realpath(where.split(",")[0])
    inside = lambda roots: any(real.startswith(root + os.sep) for root in roots)
    if inside(standard) and not inside(installed):
        continue  # the standard library's own (a project's test package beside its test)
    found[name] = where
owners = importlib.metadata.packages_distributions()
print(json.dumps({"found": found,
                  "owners": {n: owners.get(n.split(".")[0], []) for n in found}}))
"""


def find_project_copies(interpreter: Path | str, packages: Sequence[str]) -> dict[str, str]:
    """Which of ``packages`` ``interpreter`` can import on its own (``-I``: no current
    directory, no PYTHONPATH, no user site), and from where."""
    if not packages:
        return {}
    out = _run([str(interpreter), "-I", "-c", FIND_COPIES, *packages], "looking for copies")
    found = json.loads(out)["found"]
    return {str(k): str(v) for k, v in found.items()}


def _remove_project_copies(
    interpreter: Path, packages: Sequence[str], declarations: Declarations
) -> list[str]:
    """A dependency may pull in the project itself: remove those distributions, so the env
    holds no copy of the project's code (it comes from the tree)."""
    if not packages:
        return []
    out = _run([str(interpreter), "-I", "-c", FIND_COPIES, *packages], "looking for copies")
    owners = json.loads(out)["owners"]
    distributions = sorted({d for names in owners.values() for d in names})
    if distributions:
        _pip(interpreter, ["uninstall", "--yes", *distributions])
    left = find_project_copies(interpreter, packages)
    if left:
        name, where = next(iter(left.items()))
        raise ConfigError(
            f"the env holds a copy of the project's {name} ({where}) that pip cannot remove",
            where="env build",
        )
    return distributions
