"""Check the ground truth in projects.py with plain pytest, without patchwarden.

Run it as ``python tests/adoption/verify_projects.py [--project KEY ...] [--keep]``.

For each project it fetches both sdists (cached, sha256-checked), makes a git repository of
the older release, commits the contract and the property on top (the parent), commits the
honest patch (the newer release's fixed files) and the weakening patch (the property file
rewritten) on branches from the parent, and runs the property's node id with plain pytest,
once per contract seed, in a fresh process each time:

- parent: fails on every seed, with one witness (exception and assert line);
- honest: passes on every seed;
- weakened: passes on every seed (what a gate that did not pin the property would accept).

Every one of those runs must have imported the project's package from the tree. The project's
import root (``.`` or ``src``) is put on ``PYTHONPATH`` and the working directory is kept off
``sys.path`` (``python -P``); the project with a dependency runs in a temporary venv holding
only pytest and Hypothesis (the versions of this interpreter) and that dependency.

One more run per project shows what a naive runner gets instead (an import error, or for the
src-layout project the installed copy, and a pass on the buggy parent).

Exit status 0 when every expectation holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import configparser
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests._git_repos import commit  # noqa: E402
from tests.adoption._pypi import (  # noqa: E402
    cache_dir,
    fetch_sdist,
    git_repo_from_sdist,
    unpack_sdist,
)
from tests.adoption.projects import BY_KEY, PROJECTS, AdoptionProject  # noqa: E402

RUN_TIMEOUT_S = 300
PLUGIN = "adoption_provenance"
PLUGIN_SOURCE = '''\
"""Records where the package under test was imported from (verify_projects.py)."""
import json
import os
import sys


def pytest_sessionfinish(session):
    module = sys.modules.get(os.environ["ADOPTION_PACKAGE"])
    with open(os.environ["ADOPTION_PROVENANCE_OUT"], "w", encoding="utf-8") as handle:
        json.dump({"file": getattr(module, "__file__", None)}, handle)
'''
_WITNESS_LINE = re.compile(r"^(?P<path>[^\s:]+\.py):(?P<line>\d+): (?P<exc>\w+)$", re.MULTILINE)
_ERROR_LINE = re.compile(r"^E\s+(\w+(?:Error|Exception)\b.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Outcome:
    status: str
    """``pass``, ``fail`` or ``error`` (anything but one test that passed or failed)."""
    detail: str
    """The witness of a fail, the reason of an error."""
    loaded_from: str | None
    configfile: str | None


@dataclass(frozen=True)
class Naive:
    """A run as a naive runner would make it, and what it gets."""

    label: str
    import_root: str | None
    dependency_env: bool
    expected: str
    explanation: str


NAIVE = {
    "flat": Naive(
        "pytest as the console script runs it: the root not on sys.path",
        None,
        True,
        "error",
        "a flat layout needs its root on sys.path too",
    ),
    "src": Naive(
        "src/ not on sys.path, patchwarden's own interpreter",
        None,
        False,
        "pass",
        "the installed click was tested, not the tree: the parent's bug is invisible",
    ),
    "deps": Naive(
        "tree on sys.path, patchwarden's own interpreter (no MarkupSafe)",
        "src",
        False,
        "error",
        "the project's dependency must come from an environment built for it",
    ),
}


class Checker:
    def __init__(self) -> None:
        self.unexpected: list[str] = []

    def expect(self, ok: bool, what: str) -> str:
        if not ok:
            self.unexpected.append(what)
        return "ok" if ok else "UNEXPECTED"


def _clean_env() -> dict[str, str]:
    drop = ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONSAFEPATH", "PYTEST_", "HYPOTHESIS")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def run_property(
    python: Path,
    tree: Path,
    project: AdoptionProject,
    seed: int,
    *,
    import_root: str | None,
    scratch: Path,
) -> Outcome:
    """One plain pytest process for the property at ``seed``."""
    scratch.mkdir(parents=True, exist_ok=True)
    plugin_dir = scratch.parent / "plugin"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    junit = scratch / "junit.xml"
    provenance = scratch / "provenance.json"
    for stale in (junit, provenance):
        stale.unlink(missing_ok=True)
    path = [str(tree / import_root)] if import_root is not None else []
    env = {
        **_clean_env(),
        "PYTHONPATH": os.pathsep.join([*path, str(plugin_dir)]),
        "PYTHONHASHSEED": str(seed),
        "PYTHONDONTWRITEBYTECODE": "1",
        "HYPOTHESIS_STORAGE_DIRECTORY": str(scratch / "hypothesis"),
        "ADOPTION_PACKAGE": project.package,
        "ADOPTION_PROVENANCE_OUT": str(provenance),
    }
    argv = [
        str(python),
        "-P",
        "-m",
        "pytest",
        project.node_id,
        "--rootdir",
        str(tree),
        "-p",
        "no:cacheprovider",
        "-p",
        PLUGIN,
        f"--hypothesis-seed={seed}",
        f"--junitxml={junit}",
        f"--basetemp={scratch / 'basetemp'}",
    ]
    try:
        done = subprocess.run(
            argv, cwd=tree, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return Outcome("error", f"timed out after {RUN_TIMEOUT_S}s", None, None)
    (scratch / "stdout.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    configfile = re.search(r"configfile: (\S+)", done.stdout)
    loaded = None
    if provenance.is_file():
        loaded = json.loads(provenance.read_text(encoding="utf-8")).get("file")
    status, detail = _status(done, junit, project)
    return Outcome(status, detail, loaded, configfile.group(1) if configfile else None)


def _status(
    done: subprocess.CompletedProcess[str], junit: Path, project: AdoptionProject
) -> tuple[str, str]:
    output = done.stdout + done.stderr
    errors = _ERROR_LINE.findall(output)
    fallback = errors[0] if errors else (output.strip().splitlines() or ["no output"])[-1]
    if not junit.is_file():
        return "error", f"exit {done.returncode}, no report: {fallback}"
    cases = ET.parse(junit).getroot().iter("testcase")
    results = [(case, [child.tag for child in case]) for case in cases]
    if len(results) != 1:
        return "error", f"{len(results)} tests ran: {fallback}"
    case, tags = results[0]
    if not tags and done.returncode == 0:
        return "pass", ""
    if tags == ["failure"] and done.returncode == 1:
        text = case.find("failure")
        body = "" if text is None else (text.text or "")
        hits = [m for m in _WITNESS_LINE.finditer(body) if m["path"] == project.property_path]
        if hits:
            last = hits[-1]
            return "fail", f"{last['exc']} at {last['path']}:{last['line']}"
        return "fail", "no assert line in the report"
    if tags == ["error"]:
        return "error", fallback
    return "error", f"{', '.join(tags) or 'exit ' + str(done.returncode)}: {fallback}"


def build_env(project: AdoptionProject, dest: Path) -> Path:
    """A venv with pytest and Hypothesis (our versions) and the project's dependencies."""
    subprocess.run([sys.executable, "-m", "venv", str(dest)], check=True)
    python = dest / "bin" / "python"
    pins = [
        f"pytest=={importlib.metadata.version('pytest')}",
        f"hypothesis=={importlib.metadata.version('hypothesis')}",
        *project.dependencies,
    ]
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"pip install {' '.join(pins)} failed:\n{done.stdout}{done.stderr}")
    return python


def _where(path: str | None, tree: Path) -> str:
    if path is None:
        return "not imported"
    resolved = Path(path).resolve()
    if resolved.is_relative_to(tree.resolve()):
        return f"<tree>/{resolved.relative_to(tree.resolve())}"
    return str(resolved)


def _in_tree(path: str | None, tree: Path) -> bool:
    return path is not None and Path(path).resolve().is_relative_to(tree.resolve())


def pytest_settings(tree: Path) -> str:
    """The pytest settings the project itself ships, as ``file [section]: keys``."""
    found = []
    pyproject = tree / "pyproject.toml"
    if pyproject.is_file():
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        table = data.get("tool", {}).get("pytest", {}).get("ini_options")
        if table is not None:
            found.append(f"pyproject.toml [tool.pytest.ini_options]: {', '.join(table)}")
    for name, section in (
        ("pytest.ini", "pytest"),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ):
        path = tree / name
        if not path.is_file():
            continue
        parser = configparser.ConfigParser(interpolation=None)
        parser.read(path, encoding="utf-8")
        if parser.has_section(section):
            found.append(f"{name} [{section}]: {', '.join(parser.options(section))}")
    return "; ".join(found) or "none"


def verify(project: AdoptionProject, work: Path, checker: Checker) -> None:
    contract = yaml.safe_load(project.contract_yaml)
    seeds: list[int] = contract["seeds"]
    (prop,) = contract["properties"]
    checker.expect(prop["test"] == project.node_id, f"{project.key}: contract test id")

    title = f"{project.name} {project.old.version} -> {project.new.version}"
    root_shown = "." if project.import_root == "." else f"{project.import_root}/"
    print(
        f"== {project.key}: {title} ({project.layout} layout, {project.package} from {root_shown})"
    )
    old = fetch_sdist(project.name, project.old.version, project.old.sha256)
    new = fetch_sdist(project.name, project.new.version, project.new.sha256)
    print(
        f"   sdists    {old.name} {project.old.sha256[:12]}  {new.name} {project.new.sha256[:12]}"
    )

    repo, release = git_repo_from_sdist(old, work / "repo")
    _, again = git_repo_from_sdist(old, work / "repo-again")
    stable = checker.expect(release == again, f"{project.key}: release sha stable")
    parent = commit(repo, project.contract_files(), f"Contract and property {project.property_id}")
    new_root = unpack_sdist(new, work / "new")
    repo.git.checkout("-q", "-b", "honest")
    honest = commit(
        repo,
        project.honest_files(new_root),
        f"Honest patch: {', '.join(project.fixed_files)} as {project.new.version} ships it",
    )
    repo.git.checkout("-q", "-b", "weakened", parent)
    weakened = commit(repo, project.weakened_files(), f"Weakening patch: {project.property_path}")
    print(
        f"   commits   release {release[:10]} (same on a second build: {stable})  "
        f"parent {parent[:10]}  honest {honest[:10]}  weakened {weakened[:10]}"
    )
    diffstat = repo.git.diff("--shortstat", parent, honest).strip()
    print(f"   honest    {', '.join(project.fixed_files)}: {diffstat}")

    if project.dependencies:
        python = build_env(project, work / "venv")
        where = f"temporary venv + {', '.join(project.dependencies)}"
    else:
        python = Path(sys.executable)
        where = f"this interpreter, {sys.executable}"
    versions = subprocess.run(
        [
            str(python),
            "-c",
            "import pytest, hypothesis; print(pytest.__version__, hypothesis.__version__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    print(f"   python    {where} (pytest {versions[0]}, hypothesis {versions[1]})")

    tree = Path(repo.working_tree_dir or work / "repo")
    configfiles: set[str] = set()
    places: set[str] = set()
    for variant, sha, expected in (
        ("parent", parent, "fail"),
        ("honest", honest, "pass"),
        ("weakened", weakened, "pass"),
    ):
        repo.git.checkout("-q", "--force", sha)
        repo.git.clean("-q", "-f", "-d", "-x")
        outcomes = [
            run_property(
                python,
                tree,
                project,
                seed,
                import_root=project.import_root,
                scratch=work / "runs" / f"{variant}-{seed}",
            )
            for seed in seeds
        ]
        for outcome in outcomes:
            configfiles.add(outcome.configfile or "none")
            places.add(_where(outcome.loaded_from, tree))
        statuses = "  ".join(f"{seed} {o.status}" for seed, o in zip(seeds, outcomes, strict=True))
        details = sorted({o.detail for o in outcomes if o.detail})
        ok = all(o.status == expected for o in outcomes)
        ok = ok and all(_in_tree(o.loaded_from, tree) for o in outcomes)
        if expected == "fail":
            ok = ok and len(details) == 1
        verdict = checker.expect(ok, f"{project.key}: {variant} expected {expected} on every seed")
        shown = f"   witness {' | '.join(details)}" if details else ""
        print(f"   {variant:<9} {statuses}{shown}   {verdict}")
    print(f"   imported  {' | '.join(sorted(places))}")
    print(
        f"   config    pytest's configfile: {', '.join(sorted(configfiles))}; "
        f"pytest settings the project ships: {pytest_settings(tree)}"
    )

    naive = NAIVE[project.key]
    repo.git.checkout("-q", "--force", parent)
    repo.git.clean("-q", "-f", "-d", "-x")
    run_python = python if naive.dependency_env else Path(sys.executable)
    outcome = run_property(
        run_python,
        tree,
        project,
        seeds[0],
        import_root=naive.import_root,
        scratch=work / "runs" / "naive",
    )
    verdict = checker.expect(
        outcome.status == naive.expected, f"{project.key}: naive run expected {naive.expected}"
    )
    detail = outcome.detail or f"{project.package} from {_where(outcome.loaded_from, tree)}"
    print(f"   naive     {naive.label}: parent, seed {seeds[0]}: {outcome.status} ({detail})")
    print(f"             -> {naive.explanation}   {verdict} (expected {naive.expected})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--project", action="append", choices=sorted(BY_KEY), default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    chosen = [BY_KEY[key] for key in args.project] if args.project else list(PROJECTS)
    checker = Checker()
    work = Path(tempfile.mkdtemp(prefix="pw-adoption-"))
    print(f"sdist cache: {cache_dir()}")
    try:
        for project in chosen:
            verify(project, work / project.key, checker)
    finally:
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if checker.unexpected:
        print(f"{len(checker.unexpected)} unexpected: " + "; ".join(checker.unexpected))
        return 1
    print("all expectations hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
