"""The project's own pytest configuration, read from the parent, in every run of the runner
(docs/design/runner.md, "The project's pytest configuration").

The unit tests read configurations and split ``addopts``; the real-process tests run a small
project whose env (built by ``env build``'s own code, cached like the adoption tests' envs)
holds pytest-mock, pytest-asyncio, pytest-xdist and pytest-cov, under bubblewrap, in both
oracle modes, through the scorer's runs, the agent's runs and a whole ``score``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from patchwarden.sandbox import (
    Declarations,
    PropertyTarget,
    SandboxConfig,
    build_env,
    configuration_problems,
    detect_layout,
    prepare_writable_tree,
    pytest_config_at,
    run_agent_tests,
    run_properties,
)
from patchwarden.sandbox._pytest_config import plugin_args, split_addopts
from patchwarden.scorer import ScorerConfig, ScoreRequest, score
from tests._git_repos import commit, init_repo, patchwarden, write_files

PLUGINS = (
    "pytest-mock==3.17.0",
    "pytest-asyncio==1.5.0",
    "pytest-xdist==3.8.0",
    "pytest-cov==7.1.0",
)
"""What the project declares for its tests (pinned: the outcomes below are these versions')."""

ENV_CACHE_VAR = "PATCHWARDEN_ENV_CACHE"
DEFAULT_ENV_CACHE = Path("~/.cache/patchwarden/plugin-envs")
"""Where the plugin env is kept between runs on one machine (a build costs half a minute)."""

PYPROJECT = """\
[project]
name = "shop"
version = "0"

[tool.pytest.ini_options]
addopts = "-n auto --cov=shop --cov-report=term-missing --strict-markers"
filterwarnings = ["error"]
markers = ["money: a property about money"]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
"""

SHOP = """\
import warnings


def total(prices):
    return sum(prices[1:])


def with_fee(fetch_fee, amount):
    return amount + fetch_fee()
"""
FIXED = SHOP.replace("sum(prices[1:])", "sum(prices)")
FIXED_WARNING = FIXED.replace(
    "    return sum(prices)",
    '    warnings.warn("total() will take a currency", DeprecationWarning)\n    return sum(prices)',
)

PROPERTIES = """\
import asyncio

import pytest
from hypothesis import given, strategies as st

import shop


@pytest.mark.money
@given(st.lists(st.integers(0, 1000), max_size=5))
def test_total(prices):
    assert shop.total(prices) == sum(prices)


def test_fee_from_a_mock(mocker):
    fetch = mocker.Mock(return_value=5)
    assert shop.with_fee(fetch, 10) == 15
    fetch.assert_called_once_with()


async def test_fee_in_a_coroutine():
    await asyncio.sleep(0)
    assert shop.with_fee(lambda: 1, 2) == 3
"""
TARGETS = [
    PropertyTarget("prop.total", "tests/properties/test_shop.py::test_total"),
    PropertyTarget("prop.mocker", "tests/properties/test_shop.py::test_fee_from_a_mock"),
    PropertyTarget("prop.async", "tests/properties/test_shop.py::test_fee_in_a_coroutine"),
]
CONTRACT = """\
seeds: [3]
spec_paths: [tests/properties]
properties:
  - id: prop.total
    test: tests/properties/test_shop.py::test_total
  - id: prop.mocker
    test: tests/properties/test_shop.py::test_fee_from_a_mock
  - id: prop.async
    test: tests/properties/test_shop.py::test_fee_in_a_coroutine
"""
LEFT_OUT = [
    "-n auto (pytest-xdist: only spreads the tests over processes)",
    "--cov=shop (pytest-cov: only measures coverage)",
    "--cov-report=term-missing (pytest-cov: only measures coverage)",
    "plugin pytest_cov from pytest-cov (pytest-cov: only measures coverage)",
    "plugin xdist from pytest-xdist (pytest-xdist: only spreads the tests over processes)",
    "plugin xdist.looponfail from pytest-xdist (pytest-xdist: only spreads the tests over "
    "processes)",
]


# --- reading the configuration ---------------------------------------------------------------


def test_addopts_keep_what_decides_outcomes_and_name_what_is_dropped() -> None:
    split = split_addopts(
        [
            "-n", "auto", "--dist=loadscope", "--cov", "src", "--cov-report", "xml", "-ra",
            "-vv", "--strict-markers", "-W", "error::UserWarning", "-p", "no:randomly",
            "--hypothesis-profile=ci", "-k", "not slow", "tests", "--frobnicate",
        ]
    )  # fmt: skip
    assert split.kept == (
        "--strict-markers", "-W", "error::UserWarning", "-p", "no:randomly",
        "--hypothesis-profile=ci", "--frobnicate",
    )  # fmt: skip
    assert split.selection == ("-k", "not slow", "tests")
    assert split.dropped == (
        "-n auto (pytest-xdist: only spreads the tests over processes)",
        "--dist=loadscope (pytest-xdist: only spreads the tests over processes)",
        "--cov src (pytest-cov: only measures coverage)",
        "--cov-report xml (pytest-cov: only measures coverage)",
        "-ra (output or scheduling: pytest's own (the runner sets its own))",
        "-vv (output or scheduling: pytest's own (the runner sets its own))",
    )
    assert split.disabled == ("randomly",) and split.profile == "ci"


def test_a_benchmark_option_that_skips_tests_is_kept() -> None:
    # portion's addopts: --benchmark-skip skips the tests that use the benchmark fixture;
    # dropped, the scorer ran and passed 11 tests its own pytest skipped (disagreements).
    split = split_addopts(["--benchmark-skip", "--benchmark-min-rounds=5", "--benchmark-only"])
    assert split.kept == ("--benchmark-skip", "--benchmark-only")
    assert split.dropped == (
        "--benchmark-min-rounds=5 (pytest-benchmark options: only change timing runs "
        "(--benchmark-skip and --benchmark-only, which skip tests, are kept))",
    )


def test_an_option_of_pytests_own_keeps_its_value() -> None:
    # semver's addopts: "--doctest-report ndiff" lost its value to the default selection
    # (dropped in scorer runs), and every run ended in a usage error, every property missing.
    split = split_addopts(
        ["--doctest-glob", "*.rst", "--doctest-modules", "--doctest-report", "ndiff", "src"]
    )
    assert split.kept == (
        "--doctest-glob", "*.rst", "--doctest-modules", "--doctest-report", "ndiff",
    )  # fmt: skip
    assert split.selection == ("src",)


def test_the_config_file_pytest_would_use_is_read_with_the_layout(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "setup.cfg": "[tool:pytest]\nxfail_strict = true\nlog_cli = true\n"
            "required_plugins = pytest-mock pytest-xdist>=3\n"
            "filterwarnings =\n    error\n    ignore::ImportWarning\n",
            "tests/test_x.py": "",
        },
    )
    config = detect_layout(tmp_path, start="tests").pytest
    assert config.source == "setup.cfg" and config.directory == "."
    assert dict(config.ini) == {
        "xfail_strict": "true",
        "required_plugins": ("pytest-mock",),
        "filterwarnings": "\nerror\nignore::ImportWarning",
    }
    assert config.dropped == (
        "ini log_cli (output or scheduling: pytest's own (the runner sets its own))",
        "required plugin pytest-xdist>=3 (pytest-xdist: only spreads the tests over processes)",
    )
    write_files(tmp_path, {"pytest.ini": "[pytest\nbroken"})
    broken = detect_layout(tmp_path, start="tests").pytest
    assert broken.problems[0].startswith("pytest.ini: not a readable ini file (")
    assert broken.problems[0].endswith("): pytest stops on it")


def test_the_envs_plugins_are_loaded_but_those_that_only_schedule_or_report() -> None:
    entry_points = [
        ("pytest_mock", "pytest_mock", "pytest-mock"),
        ("asyncio", "pytest_asyncio.plugin", "pytest_asyncio"),
        ("xdist.plugin", "xdist.plugin", "pytest-xdist"),
        ("hypothesispytest", "_hypothesis_pytestplugin", "hypothesis"),
        ("randomly", "pytest_randomly", "pytest-randomly"),
        ("anyio", "anyio.pytest_plugin:x", "anyio"),
    ]
    config = detect_layout(Path("/nonexistent")).pytest
    names, modules, dropped = plugin_args(entry_points, config)
    assert names == ["pytest_mock", "asyncio", "anyio"]
    assert modules == ["pytest_mock", "pytest_asyncio.plugin", "anyio.pytest_plugin"]
    assert dropped == [
        "plugin xdist.plugin from pytest-xdist (pytest-xdist: only spreads the tests over "
        "processes)",
        "plugin randomly from pytest-randomly (pytest-randomly: reorders tests and reseeds "
        "random; the contract's seed decides)",
    ]


# --- real runs ---------------------------------------------------------------------------------


def _env_cache() -> Path:
    return Path(os.environ.get(ENV_CACHE_VAR) or DEFAULT_ENV_CACHE).expanduser()


@pytest.fixture(scope="module")
def plugin_python() -> str:
    declarations = Declarations(requirements=PLUGINS, sources=(), project="shop", version="0")
    built = build_env(_env_cache() / "envs", declarations)
    return str(built.python)


def test_env_build_says_which_plugins_the_runs_load(plugin_python: str, tmp_path: Path) -> None:
    """The same declarations, the same env (reused by key); ``env build`` names the plugins
    and what the runs leave out, with the project's ``-p no:`` applied."""
    root = tmp_path / "repo"
    repo = init_repo(root)
    dependencies = ", ".join(f'"{p}"' for p in PLUGINS)
    pyproject = PYPROJECT.replace(
        'version = "0"', f'version = "0"\ndependencies = [{dependencies}]'
    )
    commit(repo, {"pyproject.toml": pyproject.replace("--strict-markers", "-p no:asyncio")}, "b")
    config = tmp_path / "config.yaml"
    config.write_text(f"scorer:\n  state_dir: {json.dumps(str(_env_cache()))}\n")
    proc = patchwarden("env", "build", "--repo", str(root), "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"env: {Path(plugin_python).parent.parent} (up to date)"
    assert lines[3:9] == [
        "own metadata: shop-0, no code: the code comes from the tree",
        "pytest plugins the runs load: pytest_mock",
        "left out of the runs: plugin asyncio from pytest-asyncio (the project disables it "
        "(-p no:asyncio))",
        "left out of the runs: plugin pytest_cov from pytest-cov (pytest-cov: only measures "
        "coverage)",
        "left out of the runs: plugin xdist from pytest-xdist (pytest-xdist: only spreads the "
        "tests over processes)",
        "left out of the runs: plugin xdist.looponfail from pytest-xdist (pytest-xdist: only "
        "spreads the tests over processes)",
    ]


def _project(root: Path, shop: str = SHOP) -> Path:
    write_files(root, _files(shop))
    return root


def _outcomes(python: str, tree: Path, oracle: str) -> tuple[dict[str, str], list[str]]:
    # The layout (and the configuration) of the tree as it is now, the parent's; then the
    # patch adds a module named as a plugin's: the env's plugin is the one loaded.
    layout = detect_layout(tree)
    write_files(tree, {"pytest_mock.py": "raise ImportError('the tree cannot shadow a plugin')\n"})
    run = run_properties(
        tree, TARGETS, 3, SandboxConfig(python=python, oracle=oracle), layout=layout
    )
    assert run.complete and not run.forged and not run.shadowed, (run.forged, run.shadowed)
    return {r.prop: f"{r.status} {r.witness}" for r in run.records}, run.configuration


@pytest.mark.bwrap
@pytest.mark.parametrize("oracle", ["isolated", "in-process"])
def test_the_scorer_runs_the_projects_configuration(
    plugin_python: str, tmp_path: Path, oracle: str
) -> None:
    """pytest-mock's ``mocker`` and pytest-asyncio's ``asyncio_mode = auto`` work, the
    product's DeprecationWarning fails under ``filterwarnings = error``, and the run
    works with ``-n auto --cov`` in addopts, naming both dropped."""
    fixed, left_out = _outcomes(plugin_python, _project(tmp_path / "fixed", FIXED), oracle)
    assert fixed == {"prop.total": "pass ", "prop.mocker": "pass ", "prop.async": "pass "}
    assert left_out == LEFT_OUT
    warned, _ = _outcomes(plugin_python, _project(tmp_path / "warned", FIXED_WARNING), oracle)
    assert warned == {
        "prop.total": "fail prop.total|DeprecationWarning|tests/properties/test_shop.py:12",
        "prop.mocker": "pass ",
        "prop.async": "pass ",
    }


@pytest.mark.bwrap
def test_run_tests_runs_the_same_configuration(plugin_python: str, tmp_path: Path) -> None:
    """The agent's runs get the same ini keys, plugins and dropped options: the same
    outcomes (no exit 4 on ``-n auto``), the same list of what was left out."""
    config = SandboxConfig(python=plugin_python)
    tree = _project(tmp_path / "tree", FIXED_WARNING)
    prepare_writable_tree(tree, config)
    run = run_agent_tests(tree, ["-p", "no:cacheprovider", "-v"], 3, config)
    assert run.complete, run.process.stdout[-2000:]
    assert {o.node_id: o.outcome for o in run.outcomes} == {
        "tests/properties/test_shop.py::test_total": "failed",
        "tests/properties/test_shop.py::test_fee_from_a_mock": "passed",
        "tests/properties/test_shop.py::test_fee_in_a_coroutine": "passed",
    }
    assert "DeprecationWarning: total() will take a currency" in run.outcomes[0].summary
    assert run.configuration == LEFT_OUT
    assert run.problems == []


@pytest.mark.bwrap
def test_a_configuration_that_cannot_be_honoured_says_so(tmp_path: Path) -> None:
    """patchwarden's own interpreter has no pytest-mock: a required plugin and a conftest's
    pytest_plugins naming a module nobody has are each named."""
    tree = _project(tmp_path / "tree")
    write_files(
        tree,
        {
            "pyproject.toml": PYPROJECT + 'required_plugins = ["pytest-mock"]\n',
            "tests/conftest.py": 'pytest_plugins = ["shop_fixtures_nowhere"]\n',
        },
    )
    config = SandboxConfig()
    problems = configuration_problems(tree, config, detect_layout(tree))
    assert problems == [
        "pyproject.toml: required plugin pytest-mock is not in the env (add it to the "
        "declarations and run `patchwarden env build`)",
        "tests/conftest.py: pytest_plugins names shop_fixtures_nowhere, which the env lacks",
    ]
    prepare_writable_tree(tree, config)
    run = run_agent_tests(tree, ["-p", "no:cacheprovider"], 3, config)
    assert run.problems[0] == (
        "the project's pytest configuration cannot be honoured: pyproject.toml: required "
        "plugin pytest-mock is not in the env (add it to the declarations and run "
        "`patchwarden env build`) (and 1 more)"
    )


@pytest.mark.bwrap
@pytest.mark.parametrize("oracle", ["isolated", "in-process"])
def test_a_fix_that_adds_a_warning_the_project_makes_an_error_is_rejected(
    plugin_python: str, tmp_path: Path, oracle: str
) -> None:
    """Scored with the parent's configuration: the fix clears prop.total under plain
    warnings, but the project's filterwarnings = error fails it (accepted before)."""
    root = tmp_path / "repo"
    repo = init_repo(root)
    commit(repo, {**_files(SHOP), "contract.yaml": CONTRACT}, "base")
    repo.create_tag("base")
    commit(repo, {"shop.py": FIXED_WARNING}, "fix that warns")
    repo.create_tag("warns")
    config = ScorerConfig(state_dir=str(tmp_path / "state"), log_dir=str(tmp_path / "logs"))
    sandbox = SandboxConfig(python=plugin_python, oracle=oracle)
    verdict = score(ScoreRequest(root, "contract.yaml", "base", "warns"), config, sandbox)
    assert (verdict.decision, verdict.gate.decision) == ("reject", "reject")
    assert [(r.prop, r.decision, r.reason) for r in verdict.gate.results] == [
        ("prop.total", "reject", "witness_mismatch"),  # AssertionError on the base
        ("prop.mocker", "accept", "both_pass"),
        ("prop.async", "accept", "both_pass"),
    ]
    # The bundle keeps what each run left out of the configuration.
    evidence = json.loads((verdict.bundle / "runs" / "patch-seed3.json").read_text())
    assert evidence["configuration"] == LEFT_OUT
    if oracle == "isolated":
        commit(repo, {"shop.py": FIXED}, "honest fix")
        repo.create_tag("honest")
        honest = score(ScoreRequest(root, "contract.yaml", "base", "honest"), config, sandbox)
        assert honest.gate.decision == "accept"


def _files(shop: str) -> dict[str, str]:
    return {
        "pyproject.toml": PYPROJECT,
        "shop.py": shop,
        "tests/properties/test_shop.py": PROPERTIES,
    }


def test_run_tests_reads_the_configuration_of_the_base_commit(tmp_path: Path) -> None:
    """As the scorer reads the parent's: a worktree edit of the configuration changes nothing."""
    root = tmp_path / "repo"
    repo = init_repo(root)
    base = commit(repo, {"tests/pytest.ini": "[pytest]\nxfail_strict = true\n"}, "base")
    write_files(root, {"tests/pytest.ini": "[pytest]\nxfail_strict = false\naddopts = -p evil\n"})
    config = pytest_config_at(root, base, start="tests")
    assert (config.source, config.directory) == ("tests/pytest.ini", "tests")
    assert (config.ini, config.addopts) == ((("xfail_strict", "true"),), ())


PROFILE_CONFTEST = """\
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=7, deadline=50, database=None, suppress_health_check=[HealthCheck.too_slow]
)
"""
PROFILE_PROPERTY = """\
from hypothesis import given, strategies as st


@given(st.integers())
def test_any(n):
    assert isinstance(n, int)
"""


@pytest.mark.bwrap
@pytest.mark.parametrize("oracle", ["isolated", "in-process"])
def test_the_projects_hypothesis_profile_is_the_parent_of_the_runners(
    tmp_path: Path, oracle: str
) -> None:
    """``--hypothesis-profile`` in addopts: its max_examples and health checks are taken,
    its deadline is not (the runner forces none); run_tests runs it too (exit 4 before)."""
    tree = tmp_path / "tree"
    write_files(
        tree,
        {
            "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--numprocesses=auto '
            '--hypothesis-profile=ci"\n',
            "tests/conftest.py": PROFILE_CONFTEST,
            "tests/test_any.py": PROFILE_PROPERTY,
        },
    )
    config = SandboxConfig(oracle=oracle)
    target = PropertyTarget("prop.any", "tests/test_any.py::test_any")
    run = run_properties(tree, [target], 3, config)
    [record] = run.records
    assert (record.status, record.settings) == (
        "pass",
        "max_examples=7;derandomize=False;database=None;deadline=None;phases=(Phase.explicit, "
        "Phase.reuse, Phase.generate, Phase.target, Phase.shrink);suppress_health_check="
        "(HealthCheck.too_slow,);stateful_step_count=50;report_multiple_bugs=True",
    )
    assert run.configuration[0] == (
        "--numprocesses=auto (pytest-xdist: only spreads the tests over processes)"
    )
    if oracle == "isolated":
        prepare_writable_tree(tree, config)
        agent = run_agent_tests(tree, ["-p", "no:cacheprovider"], 3, config)
        assert agent.process.exit_code == 0, agent.process.stdout[-2000:]
        assert [(o.node_id, o.outcome) for o in agent.outcomes] == [
            ("tests/test_any.py::test_any", "passed")
        ]


@pytest.mark.bwrap
def test_contract_check_says_in_one_line_that_the_configuration_cannot_be_honoured(
    tmp_path: Path,
) -> None:
    """patchwarden's own interpreter has no pytest-mock; the base requires it: one line, exit
    2, before any run (every run would stop on pytest's usage error)."""
    root = tmp_path / "repo"
    repo = init_repo(root)
    pyproject = PYPROJECT + 'required_plugins = ["pytest-mock>=3"]\n'
    commit(repo, {**_files(SHOP), "pyproject.toml": pyproject, "contract.yaml": CONTRACT}, "b")
    config = tmp_path / "config.yaml"
    config.write_text(f"scorer:\n  state_dir: {json.dumps(str(tmp_path / 'state'))}\n")
    proc = patchwarden(
        "contract", "check", "--repo", str(root), "--base", "main", "--contract",
        "contract.yaml", "--config", str(config),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        "patchwarden: error: pyproject.toml: the project's pytest configuration cannot be "
        "honoured: pyproject.toml: required plugin pytest-mock is not in the env (add it to "
        "the declarations and run `patchwarden env build`)"
    ]
