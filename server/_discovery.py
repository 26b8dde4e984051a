"""Record the answers the stdio front gives while the SDK loads (server/_front.py).

    python -m patchwarden.server._discovery [--check]

Starts ``serve`` on the bundled example with the front off (``PATCHWARDEN_FRONT=0``) and
asks it what a client asks first, over raw JSON-RPC lines: ``server/discover`` and
``tools/list`` of the stateless protocol; ``initialize`` (each handshake version the SDK
supports) and ``tools/list`` of the handshake. Writes ``server/_discovery.json`` with the
fingerprint of the code it was recorded from (server/_front.py ``fingerprint``), or with
``--check`` exits 1 when the file differs from what the server answers now. Nothing here is
imported by ``serve``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._demo import build_demo, server_parameters
from ._front import ANSWERS_FILE, fingerprint

CLIENT_INFO = {"name": "patchwarden-discovery", "version": "0"}


def _exchange(
    params: Any, messages: list[dict[str, Any]], timeout_s: float = 120
) -> dict[int, dict[str, Any]]:
    """Send ``messages`` to a new ``serve`` with the front off; the results by request id."""
    env = {**os.environ, **(params.env or {}), "PATCHWARDEN_FRONT": "0"}
    process = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=params.cwd,
    )
    assert process.stdin is not None and process.stdout is not None
    results: dict[int, dict[str, Any]] = {}
    try:
        for message in messages:  # one at a time: each answer before the next request
            process.stdin.write(json.dumps(message) + "\n")
            process.stdin.flush()
            if "id" not in message:
                continue
            while message["id"] not in results:
                line = process.stdout.readline()
                if not line:
                    raise SystemExit(f"serve exited before answering {message['method']}")
                answer = json.loads(line)
                if "id" in answer and "method" not in answer:
                    if "result" not in answer:
                        raise SystemExit(f"serve answered an error: {line.strip()}")
                    results[answer["id"]] = answer["result"]
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
    return results


def record(params: Any, handshakes: Sequence[str] | None = None) -> dict[str, Any]:
    """The answers; ``handshakes``: the handshake versions to ask (default: all the SDK's)."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    versions = list(HANDSHAKE_PROTOCOL_VERSIONS if handshakes is None else handshakes)
    stateless = MODERN_PROTOCOL_VERSIONS[-1]
    meta = {
        "io.modelcontextprotocol/protocolVersion": stateless,
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    modern = _exchange(
        params,
        [
            {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}},
        ],
    )
    answered = []
    for version in versions:
        init = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO}
        answered.append(
            _exchange(
                params,
                [
                    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                ],
            )
        )
    latest = answered[-1]
    template = {k: v for k, v in latest[1].items() if k != "protocolVersion"}
    for version, answers in zip(versions, answered, strict=True):
        # One template for every version: only the negotiated version differs.
        if answers[1] != {**template, "protocolVersion": version} or answers[2] != latest[2]:
            raise SystemExit(f"the handshake at {version} answers differently: record it apart")
    return {
        "fingerprint": fingerprint(),
        "stateless": {"version": stateless, "discover": modern[1], "tools": modern[2]},
        "handshake": {
            "versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
            "initialize": template,
            "tools": latest[2],
        },
    }


def render(answers: dict[str, Any]) -> str:
    return json.dumps(answers, indent=1, sort_keys=True) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="patchwarden-discovery-") as work:
        workdir = Path(work)
        _, config, env = build_demo(workdir / "demo")
        text = render(record(server_parameters(config, env, workdir / "demo")))
    if options.check:
        try:
            recorded = ANSWERS_FILE.read_text(encoding="utf-8")
        except OSError as exc:
            print(f"{ANSWERS_FILE}: cannot read it ({exc.strerror or exc}): run python -m "
                  "patchwarden.server._discovery")  # fmt: skip
            sys.exit(1)
        if recorded != text:
            print(f"{ANSWERS_FILE} is stale: run python -m patchwarden.server._discovery")
            sys.exit(1)
        return
    ANSWERS_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {ANSWERS_FILE}")


if __name__ == "__main__":
    main()
