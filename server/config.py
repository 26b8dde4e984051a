"""The operator configuration: one YAML file with sandbox, scorer and agent sections.

Strict: an unknown key, a bad type or a missing file is a one-line
ConfigError naming the key and the file line. With no file at all the safe
defaults apply (bubblewrap, no network, bounded limits).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from patchwarden._documents import parse_document, validate_document
from patchwarden.sandbox import ConfigError, SandboxConfig
from patchwarden.scorer import ScorerConfig

DEFAULT_MAX_WAIT_S = 300.0
"""``agent.max_wait_s`` unless the operator sets it."""


class AgentConfig(BaseModel):
    """What the agent's session may do."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    repo: str = "."
    """The repository the agent works on."""
    base: str = "HEAD"
    """The base commit of the session; every patch is scored against it."""
    contract: str = "contract/differential-contract.yaml"
    """The contract, a path inside the repository (read from the base commit)."""
    worktree_dir: str | None = None
    """Where the agent worktree is created; default: inside the server's state directory."""
    max_submissions: int = Field(default=20, ge=1)
    """Judged submissions (those that got a verdict) allowed per session."""
    uncounted_faults: int = Field(default=3, ge=0)
    """Submissions per session that got no verdict because the scorer failed (crashed, was
    killed, hung or answered an error) and that do not count against max_submissions. Past
    this many they count too, so crashing the scorer on purpose cannot buy unlimited tries."""
    max_wait_s: float = Field(default=DEFAULT_MAX_WAIT_S, gt=0)
    """The longest ``wait_s`` submit_patch and get_verdict accept: how long one call may
    hold a client waiting for a verdict (a longer scoring answers ``pending``)."""
    max_file_bytes: int = Field(default=1_000_000, ge=1)
    """Largest file read_file returns or write_file accepts."""
    waive_broken_base: bool = False
    """Start a session even when the sweep found tests failing on every run of the base."""
    http_token: str | None = None
    """Bearer token for the HTTP transport; generated and printed when unset."""
    http_port: int = Field(default=8765, ge=1, le=65535)
    """Port on 127.0.0.1 for the HTTP transport."""


class OperatorConfig(BaseModel):
    """The whole operator configuration file."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    sandbox: SandboxConfig = SandboxConfig()
    """Isolation of every process started for the agent or the scorer."""
    scorer: ScorerConfig = ScorerConfig()
    """How patches are scored and where evidence goes."""
    agent: AgentConfig = AgentConfig()
    """The agent session served over MCP."""


def parse_config(text: str, where: str) -> OperatorConfig:
    data: Any = parse_document(text, where, error=ConfigError)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a mapping", where=where)
    return validate_document(OperatorConfig, data, text, where, error=ConfigError)


def load_config(path: Path | None) -> OperatorConfig:
    """The configuration in ``path``, or the safe defaults when ``path`` is None."""
    if path is None:
        return OperatorConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("configuration file not found", where=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read configuration: {exc}", where=str(path)) from None
    return parse_config(text, str(path))


def config_schema() -> str:
    return json.dumps(OperatorConfig.model_json_schema(), indent=2) + "\n"
