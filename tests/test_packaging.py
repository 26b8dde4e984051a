"""A wheel works as well as the checkout: one import name, and `patchwarden demo` from a
fresh venv outside the checkout (the example ships as package data)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding only the built wheel; its dependencies come from this interpreter's
    site-packages through a .pth line (a line adds a directory, it does not run the
    editable install's import hook, so the checkout cannot leak in)."""
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(base / "dist"),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (base / "dist").glob("patchwarden-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {
        "patchwarden",
        wheel.name.rsplit("-", 3)[0] + ".dist-info",
    }
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def test_the_wheel_installs_one_import_name(wheel_venv: Path, tmp_path: Path) -> None:
    python = str(wheel_venv / "bin" / "python")
    for name in ("server", "scorer", "sandbox", "configs", "examples", "package"):
        done = subprocess.run([python, "-c", f"import {name}"], cwd=tmp_path, capture_output=True)
        assert done.returncode == 1, name
    done = subprocess.run(
        [python, "-c", "import patchwarden.server.cli, patchwarden.scorer.gate; print('ok')"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.stdout == "ok\n", done.stderr


@pytest.mark.bwrap
def test_the_demo_runs_from_the_wheel_outside_the_checkout(
    wheel_venv: Path, tmp_path: Path
) -> None:
    done = subprocess.run(
        [str(wheel_venv / "bin" / "patchwarden"), "demo", "--workdir", str(tmp_path / "demo")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("demo: all three verdicts as expected")
    for decision in ("accept", "reject", "propose_freeze"):
        assert f" {decision} " in done.stdout
    assert str(ROOT) not in done.stdout  # nothing of the checkout was used


def test_the_view_renders_from_the_wheel(wheel_venv: Path, tmp_path: Path) -> None:
    """The view's templates and stylesheet are package data: the export's pages render
    from the wheel alone."""
    logs, out = tmp_path / "logs", tmp_path / "site"
    logs.mkdir()
    done = subprocess.run(
        [
            str(wheel_venv / "bin" / "patchwarden"),
            "verdicts",
            "export",
            "--log-dir",
            str(logs),
            "--html",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "No verdicts yet" in (out / "index.html").read_text()
    assert ".badge" in (out / "view.css").read_text()


def test_every_imported_distribution_is_declared() -> None:
    """A module our code imports but pyproject does not declare works here only because some
    other dependency happens to bring it."""
    import ast
    import re
    import tomllib
    from importlib.metadata import packages_distributions

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        requirements += extra

    def canonical(name: str) -> str:  # PEP 503: pydantic_core and pydantic-core are one
        return re.sub(r"[-_.]+", "-", name).lower()

    declared = {canonical(re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0]) for r in requirements}
    distributions = packages_distributions()
    undeclared = set()
    for folder in ("package", "server", "scorer", "sandbox", "configs"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    tops = [alias.name.split(".")[0] for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    tops = [node.module.split(".")[0]]
                else:
                    continue
                for top in tops:
                    if top in sys.stdlib_module_names or top == "patchwarden":
                        continue
                    names = {canonical(d) for d in distributions.get(top, [top])}
                    if not names & declared:
                        undeclared.add(f"{path.relative_to(ROOT)}: {top}")
    assert sorted(undeclared) == []
