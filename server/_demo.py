"""The scripted agent session of ``patchwarden demo``: a bundled example (orders, pytest; or
paths, CMake and ctest), three patches, three verdicts, played through a real MCP client
against ``patchwarden serve``."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

DEMO_CONTRACT = "contract/differential-contract.yaml"
DEMO_BASE = "base"


@dataclass(frozen=True)
class DemoPatch:
    name: str
    """Overlay directory under examples/orders/patches/."""
    decision: str
    reasons: frozenset[str]
    """Reason codes at least one property must give."""


DEMO_PATCHES = (
    DemoPatch("fix", "accept", frozenset({"parent_fail_cleared"})),
    DemoPatch("regression", "reject", frozenset({"regression"})),
    DemoPatch("refactor", "propose_freeze", frozenset({"shared_variant_fail"})),
)
EXAMPLES = {"orders": "*.py", "paths": "*.cpp"}
"""The bundled examples the demo plays (examples/<name>), each with the files it lists; both
have the three patches of ``DEMO_PATCHES``."""
DEFAULT_EXAMPLE = "orders"


# -- demo ---------------------------------------------------------------------


def _examples_dir(example: str = DEFAULT_EXAMPLE) -> Path:
    """The example ships as package data (patchwarden.examples), in a wheel as in a checkout."""
    import patchwarden.examples
    from patchwarden.sandbox import ConfigError

    here = Path(patchwarden.examples.__file__).resolve().parent / example
    if not (here / "make_repo.py").is_file():
        raise ConfigError(
            f"the installed package has no example (examples/{example})", where=str(here)
        )
    return here


def build_demo(workdir: Path, example: str = DEFAULT_EXAMPLE) -> tuple[Path, Path, dict[str, str]]:
    """The example repository and a config; returns (repo, config, env for the server)."""
    import subprocess

    from patchwarden.sandbox import ConfigError

    examples = _examples_dir(example)
    workdir.mkdir(parents=True, exist_ok=True)
    repo = workdir / example
    built = subprocess.run(
        [sys.executable, str(examples / "make_repo.py"), str(repo)],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        raise ConfigError(f"make_repo.py failed: {built.stderr.strip()}", where=str(repo))
    state, logs = workdir / "state", workdir / "logs"
    config = workdir / "demo-config.yaml"
    config.write_text(
        "scorer:\n"
        f"  state_dir: {json.dumps(str(state / 'scorer'))}\n"
        f"  log_dir: {json.dumps(str(logs))}\n"
        "agent:\n"
        f"  repo: {json.dumps(str(repo))}\n"
        f"  base: {DEMO_BASE}\n"
        f"  contract: {DEMO_CONTRACT}\n",
        encoding="utf-8",
    )
    env = {"XDG_STATE_HOME": str(state)}
    for name in ("LANG", "LC_ALL", "TZ"):
        if name in os.environ:
            env[name] = os.environ[name]
    return repo, config, env


def server_parameters(config: Path, env: dict[str, str], cwd: Path) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-P",
            "-m",
            "patchwarden",
            "serve",
            "--config",
            str(config),
        ],
        env=env,
        cwd=str(cwd),
    )


def _structured(result: Any, tool: str) -> dict[str, Any]:
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise RuntimeError(f"{tool} failed: {text}")
    return dict(result.structured_content or {})


def _say(line: str) -> None:
    click.echo(line)


def _verdict_line(name: str, summary: dict[str, Any]) -> str:
    reasons = ", ".join(f"{r['prop']}={r['reason']}" for r in summary["results"])
    findings = ", ".join(
        f"{c['check']}={c['outcome']}" for c in summary["scorecard"] if c["outcome"] != "pass"
    )
    counts = " ".join(
        f"{side}:{c['pass']}/{c['lines']} pass" for side, c in summary["counts"].items()
    )
    line = f"  {name:<11} {summary['decision']:<15} {reasons}; rows {counts}"
    return line + (f"; findings: {findings}" if findings else "")


async def run_demo(workdir: Path | None, example: str = DEFAULT_EXAMPLE) -> bool:
    from mcp import Client

    if workdir is None:
        workdir = Path(tempfile.mkdtemp(prefix="patchwarden-demo-"))
    workdir = workdir.resolve()
    repo, config, env = build_demo(workdir, example)
    examples = _examples_dir(example)
    _say(f"demo: example repository {repo} (base tag '{DEMO_BASE}')")
    all_ok = True
    async with Client(server_parameters(config, env, workdir)) as client:
        contract = _structured(await client.call_tool("get_contract", {}), "get_contract")
        _say(
            f"get_contract: {len(contract['properties'])} properties "
            f"({', '.join(p['id'] for p in contract['properties'])}), "
            f"{len(contract['seeds'])} seeds, read-only: {', '.join(contract['read_only_paths'])}"
        )
        pattern = EXAMPLES[example]
        listing = _structured(
            await client.call_tool("list_files", {"pattern": pattern}), "list_files"
        )
        _say(f"list_files: {len(listing['entries'])} {pattern} files")
        overlays = {p.name: _overlay(examples / "patches" / p.name) for p in DEMO_PATCHES}
        touched = sorted({path for files in overlays.values() for path in files})
        base_files = {}
        for path in touched:
            read = _structured(await client.call_tool("read_file", {"path": path}), "read_file")
            base_files[path] = read["content"]
        _say(
            "read_file: "
            + ", ".join(f"{p} ({len(c.splitlines())} lines)" for p, c in base_files.items())
        )
        run = _structured(await client.call_tool("run_tests", {}), "run_tests")
        _say(f"run_tests on the base: {run['counts']} in {run['duration_s']:.1f}s")
        failing = [t for t in run["tests"] if t["outcome"] in ("failed", "error")]
        if failing:
            first = (failing[0]["failure_text"].strip().splitlines() or [""])[0]
            _say(f"  first failure: {failing[0]['node_id']}: {first[:160]}")
        _say("submit_patch:")
        for patch in DEMO_PATCHES:
            for path, content in base_files.items():
                await client.call_tool("write_file", {"path": path, "content": content})
            for path, content in overlays[patch.name].items():
                _structured(
                    await client.call_tool("write_file", {"path": path, "content": content}),
                    "write_file",
                )
            message = (examples / "patches" / patch.name / "message.txt").read_text(
                encoding="utf-8"
            )
            summary = _structured(
                await client.call_tool("submit_patch", {"message": message}), "submit_patch"
            )
            reasons = {r["reason"] for r in summary["results"]}
            ok = summary["decision"] == patch.decision and patch.reasons <= reasons
            all_ok &= ok
            _say(
                _verdict_line(patch.name, summary)
                + (
                    ""
                    if ok
                    else f"   <-- expected {patch.decision} with {', '.join(sorted(patch.reasons))}"
                )
            )
            _say(f"  {'':<11} evidence: {workdir / 'logs' / 'verdicts' / summary['verdict_id']}")
    _say(f"demo: audit log {workdir / 'logs' / 'audit.jsonl'}")
    _say("demo: " + ("all three verdicts as expected" if all_ok else "UNEXPECTED verdicts"))
    return all_ok


def _overlay(directory: Path) -> dict[str, str]:
    """Files of a patch overlay (full contents), without its message.txt."""
    return {
        path.relative_to(directory).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != "message.txt" and "__pycache__" not in path.parts
    }
