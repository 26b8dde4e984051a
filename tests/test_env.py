"""The project's environment: what a project declares, what an env holds, what doctor says.

Reading declarations is pure (files in a temporary tree). Building an env for real needs
the package index and takes seconds: the adoption tests build (and cache) one for Jinja2;
here only a build that pip refuses runs, to show nothing half-built is left behind.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from patchwarden import ConfigError, InputError
from patchwarden.sandbox import build_env, read_declarations
from patchwarden.sandbox._env import (
    Declarations,
    _write_own_metadata,
    find_project_copies,
    own_metadata_name,
    runner_requirements,
)
from tests._git_repos import init_repo

PYPROJECT = """\
[project]
name = "My-Project"
version = "1"
dependencies = ["attrs>=22", "idna; python_version >= '3.8'"]

[project.optional-dependencies]
speed = ["ujson"]
test = ["my_project[speed]", "pytest>=8"]

[dependency-groups]
lint = ["ruff"]
dev = [{include-group = "lint"}, "coverage", "my-project"]
loop = [{include-group = "loop"}]
"""

SETUP_CFG = """\
[metadata]
name = other
[options]
install_requires =
    six
    requests>=2 ; python_version >= "3"
[options.extras_require]
docs = sphinx
"""


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_pyproject_dependencies_extras_and_groups(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"pyproject.toml": PYPROJECT})
    found = read_declarations(tree, extras=["test"], groups=["dev"])
    assert found.requirements == (
        "attrs>=22",
        'idna; python_version >= "3.8"',
        "pytest>=8",
        "ruff",
        "coverage",
    )
    assert found.project == "my-project"
    assert [d.split(" (")[0] for d in found.dropped] == ["my_project[speed]", "my-project"]
    assert all("the project itself comes from the tree" in d for d in found.dropped)
    assert found.sources == (
        "pyproject.toml [project] dependencies",
        "pyproject.toml [project.optional-dependencies] test",
        "pyproject.toml [dependency-groups] dev",
    )


def test_setup_cfg_and_requirements_files(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "setup.cfg": SETUP_CFG,
            "requirements/test.txt": "-r base.txt\n-e .\nhypothesis  # the runner's\n",
            "requirements/base.txt": "# pinned\nurllib3==2.0.0\n--index-url https://x\n",
        },
    )
    found = read_declarations(tree, extras=["docs"], requirement_files=["requirements/test.txt"])
    assert found.requirements == (
        "six",
        'requests>=2; python_version >= "3"',
        "sphinx",
        "urllib3==2.0.0",
        "hypothesis",
    )
    assert found.dropped == (
        "--index-url https://x (requirements/base.txt:3): pip options are not passed on",
        "-e . (requirements/test.txt:2): paths and URLs are not installed",
    )


@pytest.mark.parametrize(
    ("files", "version"),
    [
        ({"pyproject.toml": PYPROJECT}, "1"),
        ({"setup.cfg": SETUP_CFG.replace("name = other", "name = other\nversion = 2.5")}, "2.5"),
        (
            {
                "pyproject.toml": '[project]\nname = "p"\ndynamic = ["version"]\n',
                "PKG-INFO": "Metadata-Version: 2.4\nName: p\nVersion: 3.0.1\n\nVersion: 9\n",
            },
            "3.0.1",
        ),
        (
            {"setup.cfg": SETUP_CFG.replace("name = other", "name = other\nversion = attr: o.v")},
            None,
        ),
        ({"pyproject.toml": '[project]\nname = "p"\ndynamic = ["version"]\n'}, None),
    ],
)
def test_the_declared_version_is_read_where_the_tree_states_it(
    tmp_path: Path, files: dict[str, str], version: str | None
) -> None:
    assert read_declarations(_tree(tmp_path, files)).version == version


@pytest.mark.parametrize(("declared", "expected"), [("2.6.3", "2.6.3"), (None, "0+unknown")])
def test_the_env_holds_the_projects_metadata_and_no_code(
    tmp_path: Path, declared: str | None, expected: str
) -> None:
    """What ``pip install -e .`` gives a developer: ``importlib.metadata.version`` of the
    project answers (portion reads its ``__version__`` so), and the env still holds no copy of
    its code (no file, no top-level package listed)."""
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    declarations = Declarations((), (), project="my-project", version=declared)
    assert own_metadata_name(declarations) == f"my-project-{expected}"
    _write_own_metadata(python, declarations)
    probe = subprocess.run(
        [str(python), "-I", "-c", "import importlib.metadata as m;"
         "print(m.version('My_Project'), m.packages_distributions().get('my_project'))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.split() == [expected, "None"]
    assert find_project_copies(python, ["my_project"]) == {}
    assert own_metadata_name(Declarations((), ())) is None


def test_a_package_named_as_the_standard_librarys_is_no_copy(tmp_path: Path) -> None:
    """toposort's tests sit in a ``test`` package: the standard library's ``test`` is not a
    copy of the project's (pip cannot remove it, and the tree's comes first); the env build
    stopped on it. What an env's site-packages holds still is."""
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    assert find_project_copies(python, ["test", "json", "email"]) == {}
    site = next((tmp_path / "venv").glob("lib/python*/site-packages"))
    (site / "myproject").mkdir()
    (site / "myproject" / "__init__.py").write_text("")
    assert find_project_copies(python, ["test", "myproject"]) == {
        "myproject": str(site / "myproject" / "__init__.py")
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"extras": ["nope"]}, "extra 'nope' is not declared"),
        (
            {"groups": ["nope"]},
            "dependency group 'nope' is not declared (declared: dev, lint, loop)",
        ),
        ({"groups": ["loop"]}, "dependency group 'loop' includes itself (loop -> loop)"),
        ({"requirement_files": ["missing.txt"]}, "requirements file not found"),
    ],
)
def test_what_is_not_declared_is_an_error(
    tmp_path: Path, kwargs: dict[str, list[str]], message: str
) -> None:
    tree = _tree(tmp_path / "repo", {"pyproject.toml": PYPROJECT})
    (tmp_path / "outside.txt").write_text("six\n")
    with pytest.raises(InputError) as info:
        read_declarations(tree, **kwargs)  # type: ignore[arg-type]
    assert message in info.value.message


def test_a_requirements_file_outside_the_repository_is_read(tmp_path: Path) -> None:
    """Projects keep their test requirements in tox.ini: the operator writes them to a file
    of their own, outside the repository (relative or absolute), and env build reads it."""
    tree = _tree(tmp_path / "repo", {"pyproject.toml": PYPROJECT})
    (tmp_path / "test-reqs.txt").write_text("pytest-mock==3.14.0\n-r more.txt\n")
    (tmp_path / "more.txt").write_text("six\n")
    for given in ("../test-reqs.txt", str(tmp_path / "test-reqs.txt")):
        found = read_declarations(tree, requirement_files=[given])
        assert found.requirements[-2:] == ("pytest-mock==3.14.0", "six")
        assert found.sources[-2:] == (str(tmp_path / "test-reqs.txt"), str(tmp_path / "more.txt"))


def test_the_runner_pins_its_machinery_unless_the_project_names_it() -> None:
    pinned = runner_requirements(["attrs"])
    assert [r.split("==")[0] for r in pinned] == ["pytest", "hypothesis"]
    assert all("==" in r for r in pinned)
    ranged = runner_requirements(["pytest>=8.1"])
    assert ranged[0] == "pytest<10,>=8" and ranged[1].startswith("hypothesis==")


def test_a_build_pip_refuses_leaves_nothing_behind(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path / "repo",
        {"pyproject.toml": '[project]\nname = "p"\ndependencies = ["patchwarden-no-such-dist"]\n'},
    )
    envs = tmp_path / "envs"
    with pytest.raises(ConfigError) as info:
        build_env(envs, read_declarations(tree))
    assert info.value.message.startswith("pip install failed: ")
    assert "patchwarden-no-such-dist" in info.value.message
    assert [p.name for p in envs.iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.bwrap
def test_doctor_finds_the_copy_of_the_project_in_the_interpreter(tmp_path: Path) -> None:
    """patchwarden's own interpreter has click installed: for a project named click that is a
    copy the runs would measure if the tree were not first on sys.path."""
    init_repo(tmp_path / "repo")
    _tree(tmp_path / "repo", {"src/click/__init__.py": ""})
    proc = subprocess.run(
        ["patchwarden", "doctor", "--repo", str(tmp_path / "repo")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout
    assert "ok   test machinery: pytest " in proc.stdout
    line = next(x for x in proc.stdout.splitlines() if "no copy of the project" in x)
    assert line.startswith("FAIL no copy of the project: ")
    assert "holds its own copy of the project's code: click at " in line
    assert "fix: build an env that does not (`patchwarden env build --repo R`)" in proc.stdout
