"""Sandbox configuration: defaults, strict validation, one-line errors, the JSON Schema."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from patchwarden.sandbox import ConfigError, Limits, SandboxConfig, parse_sandbox_config


def _error(data: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_sandbox_config(data, where="patchwarden.yaml:sandbox")
    return info.value


def test_defaults_are_the_safe_ones() -> None:
    config = parse_sandbox_config({})
    assert config.backend == "bubblewrap"
    assert config.network is False
    assert config.python is None
    assert config.env_allow == ("LANG", "LC_ALL", "TZ")
    assert config.sandbox_uid == 65534
    assert config.limits == Limits(
        wall_time_s=300,
        idle_time_s=120,
        cpu_s=300,
        memory_mb=4096,
        processes=512,
        file_size_mb=256,
        output_bytes=1_000_000,
    )


def test_a_full_config_is_accepted() -> None:
    config = parse_sandbox_config(
        {
            "backend": "none",
            "python": "/usr/bin/python3",
            "pythonpath": ["/opt/lib"],
            "writable_paths": ["/srv/cache"],
            "readonly_paths": ["/srv/data"],
            "hidden_paths": ["/etc/patchwarden"],
            "env_allow": ["LANG"],
            "network": True,
            "run_as_uid": 1000,
            "limits": {"wall_time_s": 1.5, "processes": 64},
        }
    )
    assert config.pythonpath == ("/opt/lib",)
    assert config.limits.wall_time_s == 1.5
    assert config.limits.cpu_s == 300
    assert config.sandbox_uid == 1000


@pytest.mark.parametrize(
    ("data", "key", "says"),
    [
        ({"bakend": "none"}, "bakend", "unknown key"),
        ({"limits": {"wal_time_s": 1}}, "limits.wal_time_s", "unknown key"),
        ({"limits": {"cpu_s": "lots"}}, "limits.cpu_s", "valid integer"),
        ({"network": "maybe"}, "network", "valid boolean"),
        ({"backend": "docker"}, "backend", "'bubblewrap' or 'none'"),
        ({"limits": {"memory_mb": 0}}, "limits.memory_mb", "greater than 0"),
        ({"limits": {"wall_time_s": -1}}, "limits.wall_time_s", "greater than 0"),
        ({"readonly_paths": ["relative/dir"]}, "readonly_paths", "absolute path"),
        ({"writable_paths": ["/srv/../etc"]}, "writable_paths", "absolute path"),
        ({"hidden_paths": ["/"]}, "hidden_paths", "not '/'"),
        ({"env_allow": ["A=B"]}, "env_allow", "not an environment variable name"),
        ({"run_as_uid": 0}, "run_as_uid", "greater than or equal to 1"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(data: Any, key: str, says: str) -> None:
    error = _error(data)
    assert "\n" not in str(error)
    assert str(error).startswith(f"patchwarden.yaml:sandbox: {key}: ")
    assert says in str(error)
    assert error.where == "patchwarden.yaml:sandbox"


def test_not_a_mapping_is_a_config_error() -> None:
    assert "valid dictionary" in str(_error(["backend", "none"]))


def test_models_are_frozen_and_hashable() -> None:
    config = SandboxConfig()
    with pytest.raises(ValidationError):
        config.network = True  # type: ignore[misc]
    assert hash(config) == hash(SandboxConfig())


def test_json_round_trip() -> None:
    config = SandboxConfig(readonly_paths=("/srv/data",), limits=Limits(cpu_s=7))
    assert SandboxConfig.model_validate_json(config.model_dump_json()) == config


def test_every_field_is_described_in_the_schema() -> None:
    schema = SandboxConfig.model_json_schema()
    models = [schema, schema["$defs"]["Limits"]]
    for model in models:
        assert model["additionalProperties"] is False
        for name, field in model["properties"].items():
            assert field.get("description"), name
