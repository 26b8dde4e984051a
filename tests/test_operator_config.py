"""The operator configuration file, its schema, and the doctor, through the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchwarden.server.cli import cli
from patchwarden.server.config import OperatorConfig, load_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["default.yaml", "strict.yaml"])
def test_shipped_configs_load(name: str) -> None:
    config = load_config(ROOT / "configs" / name)
    assert config.sandbox.backend == "bubblewrap"
    assert config.sandbox.network is False


def test_default_yaml_spells_out_the_defaults() -> None:
    shipped = load_config(ROOT / "configs" / "default.yaml")
    assert shipped.sandbox == OperatorConfig().sandbox
    assert shipped.agent == OperatorConfig().agent
    assert shipped.scorer.model_dump(exclude={"state_dir"}) == OperatorConfig().scorer.model_dump(
        exclude={"state_dir"}
    )


def test_strict_yaml_is_stricter() -> None:
    strict = load_config(ROOT / "configs" / "strict.yaml")
    default = OperatorConfig()
    assert strict.scorer.test_tampering == "reject"
    assert strict.sandbox.limits.processes < default.sandbox.limits.processes
    assert strict.sandbox.env_allow == ()
    assert strict.agent.max_submissions < default.agent.max_submissions


def test_committed_schema_matches_the_models() -> None:
    result = CliRunner().invoke(cli, ["config", "schema"])
    assert result.exit_code == 0
    assert json.loads(result.output) == json.loads((ROOT / "configs" / "schema.json").read_text())
    assert (
        "description"
        in json.loads(result.output)["$defs"]["SandboxConfig"]["properties"]["network"]
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sandbox:\n  netwrk: true\n", "CFG:2: sandbox.netwrk: unknown key"),
        (
            "sandbox:\n  limits:\n    cpu_s: lots\n",
            "CFG:3: sandbox.limits.cpu_s: Input should be a valid integer, "
            "unable to parse string as an integer",
        ),
        (
            "scorer:\n  test_tampering: maybe\n",
            "CFG:2: scorer.test_tampering: Input should be 'review' or 'reject'",
        ),
        (
            "agent: [1, 2]\n",
            "CFG:1: agent: Input should be a valid dictionary or instance of AgentConfig",
        ),
        (
            "sandbox: {\n",
            "CFG:2: not valid YAML: expected the node content, but found '<stream end>'",
        ),
        ("- a\n- b\n", "CFG: the configuration must be a mapping"),
    ],
)
def test_bad_config_is_one_line_exit_2(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    result = CliRunner().invoke(cli, ["config", "check", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"patchwarden: error: {message.replace('CFG', str(path))}\n"


def test_missing_config_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["config", "check", str(tmp_path / "nope.yaml")])
    assert (result.exit_code, result.stderr) == (
        2,
        f"patchwarden: error: {tmp_path / 'nope.yaml'}: configuration file not found\n",
    )


@pytest.mark.bwrap
def test_doctor_passes_here() -> None:
    proc = subprocess.run(["patchwarden", "doctor"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout
    assert "ok   sandboxed run" in proc.stdout
    assert "extra_seeds" not in proc.stdout  # one extra seed by default: nothing to say


@pytest.mark.bwrap
def test_doctor_names_extra_seeds_turned_off(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("scorer:\n  extra_seeds: 0\n")
    proc = subprocess.run(
        ["patchwarden", "doctor", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.splitlines()[-1] == (
        "note: scorer.extra_seeds is 0, the operator's choice: no secret seed runs, so a patch "
        "that recognises the inputs of the contract's seeds is tried on no other"
    )


def test_without_bubblewrap_every_run_fails_closed(tmp_path: Path, example_repo: Path) -> None:
    """No bwrap on PATH: doctor says what to do, score refuses with one line (exit 2)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("git", "setpriv"):
        found = shutil.which(tool)
        assert found
        (bindir / tool).symlink_to(found)
    patchwarden = shutil.which("patchwarden")
    assert patchwarden
    env = {**os.environ, "PATH": str(bindir), "XDG_STATE_HOME": str(tmp_path / "state")}
    doctor = subprocess.run([patchwarden, "doctor"], capture_output=True, text=True, env=env)
    assert doctor.returncode == 1
    assert "FAIL bwrap installed" in doctor.stdout
    assert "fix: install bubblewrap (apt install bubblewrap" in doctor.stdout
    score = subprocess.run(
        [
            patchwarden,
            "score",
            "--repo",
            str(example_repo),
            "--contract",
            "contract/differential-contract.yaml",
            "--parent",
            "base",
            "--patch",
            "patch-fix",
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert score.returncode == 2
    assert score.stdout == ""
    assert len(score.stderr.splitlines()) == 1
    assert score.stderr.startswith("patchwarden: error: ")
    assert "bubblewrap" in score.stderr
    assert not (tmp_path / "logs").exists()


def test_an_unusable_log_dir_is_one_line_exit_2(
    tmp_path: Path, example_repo: Path, scorer_env: dict[str, str]
) -> None:
    """An environment fault is exit 2 with one line, never exit 1 (which means reject)."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = subprocess.run(
        [
            "patchwarden",
            "score",
            "--repo",
            str(example_repo),
            "--contract",
            "contract/differential-contract.yaml",
            "--parent",
            "base",
            "--patch",
            "patch-fix",
            "--log-dir",
            str(blocker / "logs"),
        ],
        capture_output=True,
        text=True,
        env=scorer_env,
        timeout=120,
    )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"patchwarden: error: {blocker / 'logs'}: Not a directory\n"
