"""Three real, published projects for the adoption tests: the ground truth.

Each project is two successive releases on the package index, pinned by the sha256 of their
sdists, where the newer release fixes a real bug (its changelog entry is cited). For each we
write, as the operator of a target repository would:

- a Hypothesis property (``property_source``) that fails on the older release on every seed of
  the contract and passes on the older tree with the newer release's fixed files dropped in
  (the honest patch, :meth:`AdoptionProject.honest_files`);
- a weakened copy of the property file (``weakened_source``), as a patch that weakens the oracle
  instead of fixing the code would write it;
- for the project with a dependency, a conftest fixture that uses that dependency;
- the contract (``contract_yaml``) naming the property.

``verify_projects.py`` beside this file checks all of it with plain pytest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

CONTRACT_PATH = "contract/differential-contract.yaml"
SEEDS = (11, 29, 47)
PROPERTIES_DIR = "tests/properties"


@dataclass(frozen=True)
class Release:
    """One release's sdist on the package index."""

    version: str
    sha256: str


@dataclass(frozen=True)
class AdoptionProject:
    key: str
    """Short name for test ids and output: ``flat``, ``src`` or ``deps``."""
    name: str
    """The project's name on the package index."""
    layout: Literal["flat", "src"]
    package: str
    """The import package the properties exercise."""
    import_root: str
    """Directory of the tree that must be on ``sys.path`` to import ``package`` (``.``, ``src``)."""
    old: Release
    """The parent: the release with the bug."""
    new: Release
    """The release that fixes it; ``fixed_files`` come from here."""
    fixed_files: tuple[str, ...]
    """Paths, relative to the sdist root, that the honest patch copies from ``new``."""
    bug: str
    changelog: str
    """Where the newer release's changelog names the fix, quoted."""
    property_id: str
    property_oracle: str
    property_path: str
    property_function: str
    property_source: str
    weakened_source: str
    """``property_path`` rewritten to assert something trivially true (same test name)."""
    conftest_path: str | None
    conftest_source: str | None
    dependencies: tuple[str, ...]
    """What must be importable at test time besides the tree, pytest and Hypothesis."""
    dependencies_declared: str
    """Where the project itself declares its dependencies."""
    contract_yaml: str
    notes: tuple[str, ...]
    """Things an adopter (or a runner) trips over with this project."""

    @property
    def node_id(self) -> str:
        """The property's pytest node id, relative to the repository root."""
        return f"{self.property_path}::{self.property_function}"

    def contract_files(self) -> dict[str, str]:
        """What the operator commits on top of the release: contract, property, conftest."""
        files = {CONTRACT_PATH: self.contract_yaml, self.property_path: self.property_source}
        if self.conftest_path is not None and self.conftest_source is not None:
            files[self.conftest_path] = self.conftest_source
        return files

    def weakened_files(self) -> dict[str, str]:
        """The weakening patch: only the property file changes."""
        return {self.property_path: self.weakened_source}

    def honest_files(self, new_root: Path) -> dict[str, str]:
        """The honest patch: the fixed files as the newer release ships them.

        ``new_root`` is the unpacked newer sdist (what ``unpack_sdist`` returned).
        """
        return {rel: (new_root / rel).read_text(encoding="utf-8") for rel in self.fixed_files}


def contract_yaml(prop_id: str, oracle: str, node_id: str) -> str:
    """A contract in the format of examples/orders (docs/design/contract.md), one property."""
    seeds = ", ".join(str(seed) for seed in SEEDS)
    return (
        "contract_version: 1\n"
        f"seeds: [{seeds}]\n"
        f"spec_paths: [{PROPERTIES_DIR}]\n"
        "properties:\n"
        f"  - id: {prop_id}\n"
        f'    oracle: "{oracle}"\n'
        f'    test: "{node_id}"\n'
    )


# --- (a) flat layout: more-itertools ---------------------------------------------------------

_SPLIT_AFTER_PROPERTY = '''\
"""split_after: no empty group, the groups rebuild the input, at most maxsplit splits."""

from hypothesis import example, given, settings
from hypothesis import strategies as st
from more_itertools import split_after


@settings(database=None, deadline=None)
@given(
    items=st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=30),
    divisor=st.integers(min_value=1, max_value=4),
    maxsplit=st.integers(min_value=-1, max_value=6),
)
@example(items=[0], divisor=1, maxsplit=1)  # the last split falls on the last item
@example(items=[1, 2, 3], divisor=3, maxsplit=1)
def test_split_after_groups(items, divisor, maxsplit):
    def is_separator(n):
        return n % divisor == 0

    groups = list(split_after(items, is_separator, maxsplit=maxsplit))
    assert [x for group in groups for x in group] == items
    assert all(groups), f"empty group in {groups}"
    if maxsplit >= 0:
        assert len(groups) - 1 <= maxsplit
    for group in groups[:-1]:
        assert is_separator(group[-1])
'''

_SPLIT_AFTER_WEAKENED = '''\
"""split_after: no empty group, the groups rebuild the input, at most maxsplit splits."""

from hypothesis import example, given, settings
from hypothesis import strategies as st
from more_itertools import split_after


@settings(database=None, deadline=None)
@given(
    items=st.lists(st.integers(min_value=0, max_value=9), min_size=1, max_size=30),
    divisor=st.integers(min_value=1, max_value=4),
    maxsplit=st.integers(min_value=-1, max_value=6),
)
@example(items=[0], divisor=1, maxsplit=1)  # the last split falls on the last item
@example(items=[1, 2, 3], divisor=3, maxsplit=1)
def test_split_after_groups(items, divisor, maxsplit):
    def is_separator(n):
        return n % divisor == 0

    groups = list(split_after(items, is_separator, maxsplit=maxsplit))
    assert isinstance(groups, list)
'''

_FLAT_PROPERTY_PATH = f"{PROPERTIES_DIR}/test_split_after.py"
_FLAT_ID = "prop.split_after_groups"
_FLAT_ORACLE = (
    "split_after yields no empty group, the groups concatenate to the input, "
    "at most maxsplit splits, every group but the last ends on a separator"
)

FLAT = AdoptionProject(
    key="flat",
    name="more-itertools",
    layout="flat",
    package="more_itertools",
    import_root=".",
    old=Release("9.0.0", "5a6257e40878ef0520b1803990e3e22303a41b5714006c32a3fd8304b26ea1ab"),
    new=Release("9.1.0", "cabaa341ad0389ea83c17a94566a53ae4c9d07349861ecb14dc6d0345cf9ac5d"),
    fixed_files=("more_itertools/more.py",),
    bug=(
        "split_after(iterable, pred, maxsplit=n) yields a trailing empty list when the n-th "
        "split falls on the last item: list(split_after([0], lambda n: True, maxsplit=1)) is "
        "[[0], []] in 9.0.0 and [[0]] in 9.1.0."
    ),
    changelog=(
        "docs/versions.rst, 9.1.0, 'Changes to existing functions': "
        "':func:`maxsplit` was updated to fix a bug (thanks to abingham)'. The fix is the "
        "maxsplit branch of split_after in more_itertools/more.py. (In the 9.1.0 sdist this "
        "section is mis-headed '8.14.0'; later releases head it '9.1.0'.)"
    ),
    property_id=_FLAT_ID,
    property_oracle=_FLAT_ORACLE,
    property_path=_FLAT_PROPERTY_PATH,
    property_function="test_split_after_groups",
    property_source=_SPLIT_AFTER_PROPERTY,
    weakened_source=_SPLIT_AFTER_WEAKENED,
    conftest_path=None,
    conftest_source=None,
    dependencies=(),
    dependencies_declared="pyproject.toml [project] (flit): no dependencies",
    contract_yaml=contract_yaml(
        _FLAT_ID, _FLAT_ORACLE, f"{_FLAT_PROPERTY_PATH}::test_split_after_groups"
    ),
    notes=(
        "The package sits at the repository root, but tests/ has an __init__.py and our "
        "tests/properties/ has none, so pytest's default (prepend) import mode puts "
        "tests/properties/ on sys.path, not the root: the root must be put there by the "
        "runner (python -m pytest does it only by accident, through the working directory).",
        "No pytest configuration at all (the project runs its suite with unittest via tox).",
        "more.py of 9.1.0 adds gray_product to __all__; the 9.0.0 tree imports it unchanged.",
    ),
)


# --- (b) src layout, also installed: click ---------------------------------------------------

_COMPLETION_PROPERTY = '''\
"""Shell completion: the completion function's name is an ASCII shell identifier."""

import re

from click import Command
from click.shell_completion import ShellComplete
from hypothesis import example, given, settings
from hypothesis import strategies as st

SHELL_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@settings(database=None, deadline=None)
@given(prog_name=st.text(max_size=24))
@example(prog_name="café")
@example(prog_name="my-tool.py")
def test_completion_function_name(prog_name):
    complete = ShellComplete(Command("cli"), {}, prog_name, "_CLI_COMPLETE")
    name = complete.func_name
    assert SHELL_IDENTIFIER.fullmatch(name), name
    if re.fullmatch(r"[A-Za-z0-9_-]*", prog_name):
        assert name == f"_{prog_name.replace('-', '_')}_completion"
'''

_COMPLETION_WEAKENED = '''\
"""Shell completion: the completion function's name is an ASCII shell identifier."""

import re

from click import Command
from click.shell_completion import ShellComplete
from hypothesis import example, given, settings
from hypothesis import strategies as st

SHELL_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@settings(database=None, deadline=None)
@given(prog_name=st.text(max_size=24))
@example(prog_name="café")
@example(prog_name="my-tool.py")
def test_completion_function_name(prog_name):
    complete = ShellComplete(Command("cli"), {}, prog_name, "_CLI_COMPLETE")
    name = complete.func_name
    assert name.endswith("_completion")
'''

_SRC_PROPERTY_PATH = f"{PROPERTIES_DIR}/test_completion.py"
_SRC_ID = "prop.completion_function_name"
_SRC_ORACLE = (
    "the shell completion function name is an ASCII shell identifier for any program name, "
    "and _<name>_completion with - as _ for plain ASCII names"
)

SRC = AdoptionProject(
    key="src",
    name="click",
    layout="src",
    package="click",
    import_root="src",
    old=Release("8.1.6", "48ee849951919527a045bfe3bf7baa8a959c423134e1a5b98c05c20ba75a1cbd"),
    new=Release("8.1.7", "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de"),
    fixed_files=("src/click/shell_completion.py",),
    bug=(
        "ShellComplete.func_name passed re.ASCII to re.sub as the positional count argument, "
        "so \\W matched Unicode-aware and non-ASCII letters stayed in the shell function name: "
        "prog name 'café' gives '_café_completion' in 8.1.6 and '_caf_completion' in 8.1.7."
    ),
    changelog=(
        "CHANGES.rst, Version 8.1.7 (released 2023-08-17): "
        "'Fix issue with regex flags in shell completion. :issue:`2581`'"
    ),
    property_id=_SRC_ID,
    property_oracle=_SRC_ORACLE,
    property_path=_SRC_PROPERTY_PATH,
    property_function="test_completion_function_name",
    property_source=_COMPLETION_PROPERTY,
    weakened_source=_COMPLETION_WEAKENED,
    conftest_path=None,
    conftest_source=None,
    dependencies=(),
    dependencies_declared=(
        "setup.py install_requires: colorama on Windows, importlib-metadata on Python < 3.8 "
        "(nothing on Linux with Python 3.11)"
    ),
    contract_yaml=contract_yaml(
        _SRC_ID, _SRC_ORACLE, f"{_SRC_PROPERTY_PATH}::test_completion_function_name"
    ),
    notes=(
        "click is a dependency of patchwarden itself, so the scorer's interpreter always has "
        "another click (8.x from the index) installed: a runner that does not put src/ first "
        "imports that copy, the property passes on the buggy parent, and an honest fix scores "
        "both_pass instead of parent_fail_cleared (any regression would be missed too).",
        "The sdist ships src/click.egg-info (metadata of 8.1.6 next to the package).",
        "The project's pytest configuration is setup.cfg [tool:pytest]: testpaths = tests, "
        "filterwarnings = error. No pythonpath setting: the package becomes importable only "
        "by installing the project.",
        "tests/conftest.py (the project's) imports click.testing, so it too must load from "
        "the tree.",
    ),
)


# --- (c) a third-party dependency and a conftest fixture: Jinja2 + MarkupSafe ------------

_SANDBOX_CONFTEST = '''\
"""Fixtures for the sandbox properties: a sandboxed renderer and MarkupSafe's Markup."""

import markupsafe
import pytest
from jinja2.sandbox import SandboxedEnvironment


@pytest.fixture(scope="session")
def sandbox_render():
    """Render a template source in a sandbox; an exception renders as its type and message."""
    env = SandboxedEnvironment(autoescape=True)

    def render(source, **context):
        try:
            return env.from_string(source).render(**context)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    return render


@pytest.fixture(scope="session")
def as_markup():
    """Wrap text as markupsafe.Markup, the string type that autoescaping templates hold."""

    return markupsafe.Markup
'''

_SANDBOX_PROPERTY = '''\
"""In the sandbox, s|attr("format") behaves exactly as s.format, for str and Markup."""

from hypothesis import example, given, settings
from hypothesis import strategies as st

NAMES = st.sampled_from(["real", "imag", "upper", "_private", "__class__", "__mro__", "__doc__"])
FIELDS = st.lists(NAMES, max_size=3).map(lambda names: "".join(f".{n}" for n in names))
LITERAL = st.text(alphabet="abc <>&'\\"", max_size=4)
FORMATS = st.lists(st.tuples(LITERAL, FIELDS), min_size=1, max_size=3).map(
    lambda parts: "".join(f"{text}{{0{field}}}" for text, field in parts)
)
VALUES = st.one_of(st.integers(), st.text(max_size=3))


@settings(database=None, deadline=None)
@given(fmt=FORMATS, value=VALUES, markup=st.booleans())
@example(fmt="{0.__class__}", value=0, markup=False)
@example(fmt="<{0.__class__}>", value=0, markup=True)
def test_attr_format_is_sandboxed(sandbox_render, as_markup, fmt, value, markup):
    text = as_markup(fmt) if markup else fmt
    direct = sandbox_render("{{ s.format(v) }}", s=text, v=value)
    via_attr = sandbox_render("{{ (s|attr('format'))(v) }}", s=text, v=value)
    assert via_attr == direct
'''

_SANDBOX_WEAKENED = '''\
"""In the sandbox, s|attr("format") behaves exactly as s.format, for str and Markup."""

from hypothesis import example, given, settings
from hypothesis import strategies as st

NAMES = st.sampled_from(["real", "imag", "upper", "_private", "__class__", "__mro__", "__doc__"])
FIELDS = st.lists(NAMES, max_size=3).map(lambda names: "".join(f".{n}" for n in names))
LITERAL = st.text(alphabet="abc <>&'\\"", max_size=4)
FORMATS = st.lists(st.tuples(LITERAL, FIELDS), min_size=1, max_size=3).map(
    lambda parts: "".join(f"{text}{{0{field}}}" for text, field in parts)
)
VALUES = st.one_of(st.integers(), st.text(max_size=3))


@settings(database=None, deadline=None)
@given(fmt=FORMATS, value=VALUES, markup=st.booleans())
@example(fmt="{0.__class__}", value=0, markup=False)
@example(fmt="<{0.__class__}>", value=0, markup=True)
def test_attr_format_is_sandboxed(sandbox_render, as_markup, fmt, value, markup):
    text = as_markup(fmt) if markup else fmt
    direct = sandbox_render("{{ s.format(v) }}", s=text, v=value)
    via_attr = sandbox_render("{{ (s|attr('format'))(v) }}", s=text, v=value)
    assert isinstance(via_attr, str) and isinstance(direct, str)
'''

_DEPS_PROPERTY_PATH = f"{PROPERTIES_DIR}/test_sandbox_attr.py"
_DEPS_ID = "prop.sandbox_attr_format"
_DEPS_ORACLE = (
    "in a SandboxedEnvironment, (s|attr('format'))(v) renders exactly as s.format(v), "
    "for str and markupsafe.Markup format strings"
)

DEPS = AdoptionProject(
    key="deps",
    name="jinja2",
    layout="src",
    package="jinja2",
    import_root="src",
    old=Release("3.1.5", "8fefff8dc3034e27bb80d67c671eb8a9bc424c0ef4c0826edbff304cceff43bb"),
    new=Release("3.1.6", "0137fb05990d35f1275a587e9aee6d56da821fc83491a0fb838183be43f66d6d"),
    fixed_files=("src/jinja2/filters.py",),
    bug=(
        "The |attr filter returned getattr(obj, name) itself instead of going through the "
        "environment's getattr, so in a SandboxedEnvironment s|attr('format') got the raw "
        "str.format and a template could read attributes the sandbox hides: "
        "'{0.__class__}'|attr('format')(0) renders <class 'int'> in 3.1.5, '' in 3.1.6 "
        "(as s.format does in both)."
    ),
    changelog=(
        "CHANGES.rst, Version 3.1.6 (released 2025-03-05): 'The |attr filter does not bypass "
        "the environment's attribute lookup, allowing the sandbox to apply its checks. "
        "GHSA-cpwx-vrp4-4pq7' (the 3.1.5 and 3.1.6 sdists ship docs/changes.rst, which only "
        "includes CHANGES.rst; the entry is quoted from the project's release notes)"
    ),
    property_id=_DEPS_ID,
    property_oracle=_DEPS_ORACLE,
    property_path=_DEPS_PROPERTY_PATH,
    property_function="test_attr_format_is_sandboxed",
    property_source=_SANDBOX_PROPERTY,
    weakened_source=_SANDBOX_WEAKENED,
    conftest_path=f"{PROPERTIES_DIR}/conftest.py",
    conftest_source=_SANDBOX_CONFTEST,
    dependencies=("MarkupSafe==3.0.2",),
    dependencies_declared='pyproject.toml [project] dependencies = ["MarkupSafe>=2.0"] (flit)',
    contract_yaml=contract_yaml(
        _DEPS_ID, _DEPS_ORACLE, f"{_DEPS_PROPERTY_PATH}::test_attr_format_is_sandboxed"
    ),
    notes=(
        "MarkupSafe is not in patchwarden's venv: without an environment that has it, "
        "collection fails (jinja2 imports markupsafe; so do the project's tests/conftest.py "
        "and our tests/properties/conftest.py). MarkupSafe ships a compiled speed-up; its "
        "wheel installs it, and it has a pure-Python fallback.",
        "The project's pytest configuration is pyproject.toml [tool.pytest.ini_options]: "
        "testpaths = tests, filterwarnings = error. No pythonpath setting.",
        "The project's own tests/conftest.py is collected too (fixtures env, dict_loader, "
        "package_loader, ...): ours live in tests/properties/conftest.py, session-scoped, "
        "because Hypothesis refuses function-scoped fixtures in a @given test.",
        "The 3.1.5 and 3.1.6 sdists carry no CHANGES.rst (docs/changes.rst only includes it).",
    ),
)


PROJECTS: tuple[AdoptionProject, ...] = (FLAT, SRC, DEPS)
BY_KEY: dict[str, AdoptionProject] = {project.key: project for project in PROJECTS}
