"""Where the project's code is imported from (sandbox/_layout.py), and provenance.

The layout table is pure (files in a temporary tree, nothing run). The runner tests use
real bubblewrap and pytest processes with ``click``, which patchwarden's own interpreter has
installed: a tree's ``src/click`` must win over that copy, and a run that imports the
installed copy as the project's code fails closed, naming both paths.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from pathlib import Path

import click
import pytest

from patchwarden.sandbox import (
    MACHINERY_NAMES,
    PropertyTarget,
    SandboxConfig,
    detect_layout,
    prepare_writable_tree,
    run_agent_tests,
    run_properties,
)

FLIT = '[build-system]\nrequires = ["flit_core"]\nbuild-backend = "flit_core.buildapi"\n'

LAYOUTS: list[tuple[str, Mapping[str, str], str, tuple[str, ...], tuple[str, ...]]] = [
    # id, files, start, expected roots, packages that must be among the project's
    ("flat", {"pkg/__init__.py": ""}, ".", (".",), ("pkg",)),
    ("src-convention", {"src/pkg/__init__.py": ""}, ".", ("src", "."), ("pkg",)),
    ("src-module", {"src/single.py": ""}, ".", ("src", "."), ("single",)),
    (
        "pytest-ini",
        {"pytest.ini": "[pytest]\npythonpath = lib extra\n", "lib/a.py": "", "extra/b.py": ""},
        ".",
        ("lib", "extra", "."),
        ("a", "b"),
    ),
    (
        "pyproject-pytest",
        {
            "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["code"]\n',
            "code/pkg/__init__.py": "",
        },
        ".",
        ("code", "."),
        ("pkg",),
    ),
    (
        "setup-cfg-pytest",
        {"setup.cfg": "[tool:pytest]\npythonpath = lib\n", "lib/pkg/__init__.py": ""},
        ".",
        ("lib", "."),
        ("pkg",),
    ),
    (
        "tox-ini-pytest",
        {"tox.ini": "[tox]\n[pytest]\npythonpath = lib\n", "lib/pkg/__init__.py": ""},
        ".",
        ("lib", "."),
        ("pkg",),
    ),
    (
        "pytest-rootdir-below",
        {"tests/pytest.ini": "[pytest]\npythonpath = ../lib\n", "lib/pkg/__init__.py": ""},
        "tests",
        ("lib", "."),
        ("pkg",),
    ),
    (
        "pytest-ini-wins-over-pyproject",
        {
            "pytest.ini": "[pytest]\n",
            "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["nowhere"]\n',
            "pkg/__init__.py": "",
        },
        ".",
        (".",),
        ("pkg",),
    ),
    (
        "setuptools-package-dir",
        {
            "pyproject.toml": '[tool.setuptools.package-dir]\n"" = "lib"\n',
            "lib/pkg/__init__.py": "",
        },
        ".",
        ("lib", "."),
        ("pkg",),
    ),
    (
        "setuptools-named-package-dir",
        {
            "pyproject.toml": '[tool.setuptools.package-dir]\n"pkg" = "code/pkg"\n',
            "code/pkg/__init__.py": "",
        },
        ".",
        ("code", "."),
        ("pkg",),
    ),
    (
        "setuptools-find-where",
        {
            "pyproject.toml": '[tool.setuptools.packages.find]\nwhere = ["python"]\n',
            "python/pkg/__init__.py": "",
        },
        ".",
        ("python", "."),
        ("pkg",),
    ),
    (
        "setup-cfg-package-dir",
        {
            "setup.cfg": "[options]\npackages = find:\npackage_dir =\n    = src\n",
            "src/pkg/__init__.py": "",
        },
        ".",
        ("src", "."),
        ("pkg",),
    ),
    (
        "setup-cfg-find-where",
        {"setup.cfg": "[options.packages.find]\nwhere = lib\n", "lib/pkg/__init__.py": ""},
        ".",
        ("lib", "."),
        ("pkg",),
    ),
    (
        "hatch-packages",
        {
            "pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["lib/pkg"]\n',
            "lib/pkg/__init__.py": "",
        },
        ".",
        ("lib", "."),
        ("pkg",),
    ),
    (
        "hatch-sources",
        {
            "pyproject.toml": '[tool.hatch.build.targets.wheel]\nsources = ["code"]\n',
            "code/pkg/__init__.py": "",
        },
        ".",
        ("code", "."),
        ("pkg",),
    ),
    (
        "flit-module-src",
        {
            "pyproject.toml": FLIT + '[tool.flit.module]\nname = "pkg"\n',
            "src/pkg/__init__.py": "",
        },
        ".",
        ("src", "."),
        ("pkg",),
    ),
    (
        "flit-project-name",
        {"pyproject.toml": FLIT + '[project]\nname = "my-pkg"\n', "my_pkg/__init__.py": ""},
        ".",
        (".",),
        ("my_pkg",),
    ),
    (
        "pdm-package-dir",
        {"pyproject.toml": '[tool.pdm.build]\npackage-dir = "lib"\n', "lib/pkg/__init__.py": ""},
        ".",
        ("lib", "."),
        ("pkg",),
    ),
    (
        "poetry-from",
        {
            "pyproject.toml": (
                '[tool.poetry]\nname = "x"\npackages = [{include = "pkg", from = "lib"}]\n'
            ),
            "lib/pkg/__init__.py": "",
        },
        ".",
        ("lib", "."),
        ("pkg",),
    ),
    (
        "namespace-under-src",
        {"src/ns/pkg/__init__.py": "", "src/ns/pkg/mod.py": ""},
        ".",
        ("src", "."),
        ("ns.pkg",),
    ),
]


def make_tree(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "start", "roots", "packages"),
    [case[1:] for case in LAYOUTS],
    ids=[case[0] for case in LAYOUTS],
)
def test_layouts_need_no_configuration(
    tmp_path: Path,
    files: Mapping[str, str],
    start: str,
    roots: tuple[str, ...],
    packages: tuple[str, ...],
) -> None:
    layout = detect_layout(make_tree(tmp_path, files), start=start)
    assert layout.roots == roots
    assert set(packages) <= set(layout.packages)
    assert len(layout.sources) == len(roots) - 1


def test_the_operator_override_replaces_the_roots_not_the_packages(tmp_path: Path) -> None:
    tree = make_tree(tmp_path, {"src/pkg/__init__.py": "", "code/other.py": ""})
    layout = detect_layout(tree, override=["code"])
    assert layout.roots == ("code", ".")
    assert {"pkg", "other"} <= set(layout.packages)  # pkg still belongs to the project
    assert layout.sources == ("code (sandbox.import_roots)",)


@pytest.mark.parametrize(
    ("files", "note"),
    [
        ({"pytest.ini": "[pytest]\npythonpath = ../outside\n"}, "not a directory inside"),
        ({"pytest.ini": "[pytest]\npythonpath = /usr/lib\n"}, "not a directory inside"),
        ({"pytest.ini": "[pytest]\npythonpath = missing\n"}, "missing does not exist"),
        ({"pyproject.toml": "[tool.pytest.ini_options\n"}, "not readable TOML"),
        (
            {"pyproject.toml": '[tool.setuptools.package-dir]\npatchwarden = "package"\n'},
            "under another name",
        ),
    ],
    ids=["dotdot", "absolute", "missing", "bad-toml", "renamed-package"],
)
def test_what_cannot_be_used_is_skipped_with_a_note(
    tmp_path: Path, files: Mapping[str, str], note: str
) -> None:
    layout = detect_layout(make_tree(tmp_path, files))
    assert layout.roots == (".",)
    assert any(note in n for n in layout.notes), layout.notes


def test_a_root_through_a_symlink_is_refused(tmp_path: Path) -> None:
    outside = make_tree(tmp_path / "outside", {"pkg/__init__.py": ""})
    tree = make_tree(tmp_path / "tree", {"pytest.ini": "[pytest]\npythonpath = lib\n"})
    (tree / "lib").symlink_to(outside)
    layout = detect_layout(tree)
    assert layout.roots == (".",)
    assert any("symlink" in n for n in layout.notes)


def test_machinery_and_stdlib_names_are_not_project_packages(tmp_path: Path) -> None:
    names = ["src/json/__init__.py", "src/pytest.py", "src/_hypothesis_pytestplugin.py"]
    tree = make_tree(tmp_path, {name: "" for name in [*names, "src/mine/__init__.py"]})
    assert detect_layout(tree).packages == ("mine",)


def test_the_scorecard_page_names_every_machinery_name() -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "design" / "scorecard.md"
    row = next(line for line in page.read_text().splitlines() if line.startswith("| `shadowing`"))
    assert sorted(name for name in MACHINERY_NAMES if f"`{name}`" not in row) == []


# --- real runs -------------------------------------------------------------------------------

INSTALLED_CLICK = os.path.dirname(click.__file__)
PROPERTY = textwrap.dedent(
    """
    import click

    def test_tree_copy():
        assert click.ORIGIN == "tree"
    """
)


@pytest.fixture(scope="module")
def src_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A src-layout project named click (also installed in patchwarden's interpreter)."""
    root = tmp_path_factory.mktemp("srclayout")
    root.chmod(0o755)
    return make_tree(
        root,
        {
            "setup.cfg": "[options]\npackage_dir =\n    = src\n",
            "src/click/__init__.py": 'ORIGIN = "tree"\n',
            "tests/properties/test_origin.py": PROPERTY,
        },
    )


TARGET = PropertyTarget(
    prop="prop.origin", node_id="tests/properties/test_origin.py::test_tree_copy"
)


@pytest.mark.bwrap
def test_the_tree_wins_over_an_installed_copy(src_tree: Path) -> None:
    run = run_properties(src_tree, [TARGET], 11, SandboxConfig())
    assert run.complete, run.problems
    assert [(r.prop, r.status, r.witness) for r in run.records] == [("prop.origin", "pass", "")]
    prepare_writable_tree(src_tree, SandboxConfig())
    agent = run_agent_tests(src_tree, ["-p", "no:cacheprovider"], 11, SandboxConfig())
    assert [(o.node_id, o.outcome) for o in agent.outcomes] == [(TARGET.node_id, "passed")]


@pytest.mark.bwrap
def test_an_installed_copy_of_the_project_fails_closed(src_tree: Path, tmp_path: Path) -> None:
    """The parent's layout says click is the project's; a tree without it (a patch that
    deleted it) would import the installed copy: every property fails, naming both paths."""
    layout = detect_layout(src_tree)
    assert "click" in layout.packages
    shadowed = make_tree(tmp_path / "patch", {"tests/properties/test_origin.py": PROPERTY})
    for path in (tmp_path, shadowed, shadowed / "tests", shadowed / "tests/properties"):
        path.chmod(0o755)
    run = run_properties(shadowed, [TARGET], 11, SandboxConfig(), layout=layout)
    assert run.complete, run.problems
    [record] = run.records
    assert record.status == "fail"
    prop, kind, why = record.witness.split("|", 2)
    assert (prop, kind) == ("prop.origin", "ForeignModule")
    assert why.startswith(f"click from {INSTALLED_CLICK}/__init__.py, not ")
    assert "provenance" in run.process.stderr
    prepare_writable_tree(shadowed, SandboxConfig())
    agent = run_agent_tests(
        shadowed, ["-p", "no:cacheprovider"], 11, SandboxConfig(), layout=layout
    )
    assert [(o.node_id, o.outcome) for o in agent.outcomes] == [("<provenance>", "error")]
    assert INSTALLED_CLICK in agent.outcomes[0].text
