"""Adoption acceptance on three real, published projects (tests/adoption/README.md).

For each project, as an operator adopting patchwarden on it would: a git repository of the
older release, the contract and the Hypothesis property committed on top, ``contract check``,
then ``score`` of the honest patch (the newer release's fixed file: accept, the property
``parent_fail_cleared``) and of a patch that weakens the property (never a clean accept).
The jinja2 project needs MarkupSafe: ``env build`` makes its venv, cached between runs like the
sdists. On click, which patchwarden's own interpreter has installed, a misspelt test id is
refused by ``contract check`` and by ``serve``, and a patch that takes the tree's package away
(so the installed copy would be measured) fails closed.

Real sdists from the package index (sha256-checked, cached), real git, bubblewrap and pytest,
through the console script. Every scored repository is built once per session.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import git
import pytest

from tests._git_repos import GIT_ENV, commit, patchwarden
from tests.adoption._pypi import fetch_sdist, git_repo_from_sdist, unpack_sdist
from tests.adoption.projects import BY_KEY, CONTRACT_PATH, PROJECTS, SRC, AdoptionProject

pytestmark = pytest.mark.bwrap

ENV_CACHE_VAR = "PATCHWARDEN_ENV_CACHE"
DEFAULT_ENV_CACHE = Path("~/.cache/patchwarden/adoption-state")
"""The scorer state directory env build uses for the adoption tests: its envs/ survive
between runs on one machine, as the sdist cache does (a rebuild would cost the index and
half a minute)."""


def env_cache() -> Path:
    configured = os.environ.get(ENV_CACHE_VAR)
    return Path(configured).expanduser() if configured else DEFAULT_ENV_CACHE.expanduser()


@dataclass
class Adopted:
    """One project adopted: its repository, the commits, the operator config."""

    project: AdoptionProject
    repo: Path
    config: Path
    env: dict[str, str]
    parent: str
    honest: str
    weakened: str
    scored: dict[str, tuple[int, dict[str, object]]] = field(default_factory=dict)

    def run(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        return patchwarden(*args, "--config", str(self.config), env=self.env, timeout=timeout)

    def score(self, patch: str) -> tuple[int, dict[str, object]]:
        """Exit code and decision object of ``score`` (each patch scored once per session)."""
        if patch not in self.scored:
            proc = self.run(
                "score",
                "--repo",
                str(self.repo),
                "--contract",
                CONTRACT_PATH,
                "--parent",
                self.parent,
                "--patch",
                patch,
                "--json",
            )
            assert proc.returncode in (0, 1, 3), proc.stderr
            self.scored[patch] = (proc.returncode, json.loads(proc.stdout))
        return self.scored[patch]


def _python_line(output: str) -> str:
    """The interpreter ``env build`` says to put in sandbox.python."""
    lines = output.splitlines()
    assert "sandbox:" in lines, output
    python = lines[lines.index("sandbox:") + 1].strip()
    assert python.startswith("python: "), output
    return python.removeprefix("python: ")


def _adopt(project: AdoptionProject, root: Path) -> Adopted:
    old = fetch_sdist(project.name, project.old.version, project.old.sha256)
    new = fetch_sdist(project.name, project.new.version, project.new.sha256)
    new_root = unpack_sdist(new, root / "new")
    repo, _release = git_repo_from_sdist(old, root / "repo")
    with repo.git.custom_environment(**GIT_ENV):
        parent = commit(repo, project.contract_files(), "contract and property (the operator)")
        honest = commit(repo, project.honest_files(new_root), f"the fix of {project.new.version}")
        repo.git.checkout("--quiet", parent)
        weakened = commit(repo, project.weakened_files(), "make the property pass")
        repo.create_tag("weakened")
        repo.git.checkout("--quiet", "--detach", parent)
    env = {**os.environ, "XDG_STATE_HOME": str(root / "xdg")}
    lines = [
        "scorer:",
        f"  state_dir: {json.dumps(str(root / 'state'))}",
        f"  log_dir: {json.dumps(str(root / 'logs'))}",
    ]
    if project.dependencies:
        built = patchwarden(
            "env",
            "build",
            "--repo",
            str(root / "repo"),
            "--config",
            str(_env_build_config(root)),
            env=env,
            timeout=1800,
        )
        assert built.returncode == 0, built.stdout + built.stderr
        assert "declared in: pyproject.toml [project] dependencies" in built.stdout
        lines += ["sandbox:", f"  python: {json.dumps(_python_line(built.stdout))}"]
    config = root / "config.yaml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Adopted(project, root / "repo", config, env, parent, honest, weakened)


def _env_build_config(root: Path) -> Path:
    path = root / "env-build.yaml"
    path.write_text(f"scorer:\n  state_dir: {json.dumps(str(env_cache()))}\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Adopted]]:
    """Projects adopted on first use, shared by every test of the session."""
    cache: dict[str, Adopted] = {}

    class Lazy(dict[str, Adopted]):
        def __missing__(self, key: str) -> Adopted:
            cache[key] = _adopt(BY_KEY[key], tmp_path_factory.mktemp(f"adopt-{key}"))
            self[key] = cache[key]
            return cache[key]

    yield Lazy()


KEYS = [project.key for project in PROJECTS]


@pytest.mark.parametrize("key", KEYS)
def test_contract_check_shows_the_bug_on_every_seed(adopted: dict[str, Adopted], key: str) -> None:
    project = adopted[key]
    proc = project.run("contract", "check", "--repo", str(project.repo), "--base", project.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{project.project.property_id} collected on the base" in proc.stdout
    row = next(
        line for line in proc.stdout.splitlines() if line.startswith(project.project.property_id)
    )
    cells = row.split("  fail: ")
    assert len(cells) == 4, row  # the property, then one failure per seed (11, 29, 47)
    assert all(cell.strip().split()[0].endswith(("Error", "Exception")) for cell in cells[1:]), row
    assert "warning:" not in proc.stdout
    # The property runs under the isolated oracle on every adoption project, no fallback.
    isolation = [line for line in proc.stdout.splitlines() if line.startswith("isolation: ")]
    assert isolation == [f"isolation: {project.project.property_id}: isolated"], isolation
    roots = next(line for line in proc.stdout.splitlines() if line.startswith("import roots: "))
    if project.project.import_root == "src":  # found with no configuration
        assert roots.startswith("import roots: src ("), roots
    else:
        assert roots == "import roots: . (the tree)", roots


@pytest.mark.parametrize("key", KEYS)
def test_the_honest_fix_is_accepted_as_parent_fail_cleared(
    adopted: dict[str, Adopted], key: str
) -> None:
    project = adopted[key]
    code, decision = project.score(project.honest)
    assert (code, decision["decision"]) == (0, "accept"), decision
    assert decision["results"] == [
        {
            "prop": project.project.property_id,
            "decision": "accept",
            "reason": "parent_fail_cleared",
        }
    ]
    counts = decision["counts"]
    assert isinstance(counts, dict)
    assert (counts["parent"]["lines"], counts["parent"]["fail"]) == (3, 3)
    assert (counts["patch"]["lines"], counts["patch"]["pass"]) == (3, 3)


@pytest.mark.parametrize("key", KEYS)
def test_a_patch_weakening_the_property_is_not_a_clean_accept(
    adopted: dict[str, Adopted], key: str
) -> None:
    project = adopted[key]
    code, decision = project.score(project.weakened)
    assert (code, decision["decision"]) == (1, "reject"), decision
    outcomes = {c["check"]: c["outcome"] for c in decision["scorecard"]}  # type: ignore[union-attr]
    assert outcomes["contract_tampered"] == "reject"
    assert outcomes["oracle_pin"] == "reject"


def test_one_contract_hash_across_verdicts(adopted: dict[str, Adopted]) -> None:
    project = adopted[SRC.key]
    _, honest = project.score(project.honest)
    _, weakened = project.score(project.weakened)
    assert honest["contract_hash"] == weakened["contract_hash"]
    assert honest["resolved_contract_hash"] != weakened["resolved_contract_hash"]


def test_a_misspelt_id_is_refused_by_check_and_by_serve(
    adopted: dict[str, Adopted], tmp_path: Path
) -> None:
    project = adopted[SRC.key]
    repo = git.Repo(project.repo)
    typo = project.project.node_id.replace("test_completion_function_name", "test_completion_fn")
    text = project.project.contract_yaml.replace(project.project.node_id, typo)
    with repo.git.custom_environment(**GIT_ENV):
        base = commit(repo, {CONTRACT_PATH: text}, "a typo in the contract")
        repo.create_tag("typo")  # the scorer's clone fetches what refs reach
        repo.git.checkout("--quiet", "--detach", project.parent)
    line = next(n for n, text_line in enumerate(text.splitlines(), 1) if typo in text_line)
    expected = (
        f"patchwarden: error: {CONTRACT_PATH}:{line}: property {project.project.property_id}: "
        f"test id {typo} is not collected on the base (did you mean "
        f"{project.project.node_id}?)\n"
    )
    check = project.run("contract", "check", "--repo", str(project.repo), "--base", base)
    assert (check.returncode, check.stdout, check.stderr) == (2, "", expected)
    serve = subprocess.run(
        [
            "patchwarden",
            "serve",
            "--config",
            str(project.config),
            "--repo",
            str(project.repo),
            "--base",
            base,
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        capture_output=True,
        text=True,
        env=project.env,
        stdin=subprocess.DEVNULL,
        timeout=300,
        check=False,
    )
    assert (serve.returncode, serve.stdout, serve.stderr) == (2, "", expected)


def test_the_installed_copy_of_the_project_fails_closed(adopted: dict[str, Adopted]) -> None:
    """click is installed beside patchwarden. A patch that takes the tree's package away would
    have the properties import that copy (already fixed): both_pass, an accept of code nobody
    wrote. The runner sees where click came from and the verdict is a reject naming both
    paths."""
    project = adopted[SRC.key]
    repo = git.Repo(project.repo)
    with repo.git.custom_environment(**GIT_ENV):
        away = commit(repo, {"src/click/__init__.py": None}, "click from elsewhere")
        repo.create_tag("away")
        repo.git.checkout("--quiet", "--detach", project.parent)
    code, decision = project.score(away)
    assert (code, decision["decision"]) == (1, "reject"), decision
    shadowing = next(c for c in decision["scorecard"] if c["check"] == "shadowing")  # type: ignore[union-attr]
    assert shadowing["outcome"] == "reject"
    import click

    installed = os.path.dirname(click.__file__)
    # One line for the schedule's runs of the patch, one for its secret extra seed's.
    evidence = shadowing["evidence"]
    assert sorted(line.split(": project code")[0] for line in evidence) == [
        "at run time: extra_seeds:patch",
        "at run time: patch",
    ], evidence
    for line in evidence:
        assert f"loaded from outside the tree: click from {installed}/" in line, line
        assert line.endswith(", not /workspace/src/click"), line
    assert decision["results"][0]["reason"] != "parent_fail_cleared"  # type: ignore[index]


def test_the_env_holds_the_dependency_and_no_copy_of_the_project(
    adopted: dict[str, Adopted],
) -> None:
    project = adopted["deps"]
    proc = project.run("doctor", "--repo", str(project.repo), timeout=300)
    assert proc.returncode == 0, proc.stdout
    assert "ok   test machinery: pytest " in proc.stdout
    assert "ok   no copy of the project: none of jinja2" in proc.stdout
    again = patchwarden(
        "env",
        "build",
        "--repo",
        str(project.repo),
        "--config",
        str(_env_build_config(project.repo.parent)),
        env=project.env,
    )
    assert again.returncode == 0 and "(up to date)" in again.stdout, again.stdout + again.stderr
