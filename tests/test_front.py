"""The stdio front answers discovery while the SDK loads, and is otherwise a wire.

In memory: a real ``Front`` on two pipes, this test playing both the client and the SDK.
Through the real server: the recorded answers are what ``serve`` answers with the front off
(a stale server/_discovery.json fails here, with the command that rewrites it).
tests/test_startup.py starts a real client against ``serve`` on a loaded machine.
"""

from __future__ import annotations

import json
import os
import select
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from patchwarden.server._front import ANSWERS_FILE, Front, fingerprint, load_answers

ANSWERS: dict[str, Any] = json.loads(ANSWERS_FILE.read_text(encoding="utf-8"))
STALE = f"{ANSWERS_FILE} is stale: run python -m patchwarden.server._discovery"
STATELESS = ANSWERS["stateless"]["version"]
META = {"_meta": {"io.modelcontextprotocol/protocolVersion": STATELESS}}


@dataclass
class Wire:
    """The client's ends and the SDK's ends of a front."""

    front: Front
    client_w: int
    client_r: int
    sdk_r: int
    sdk_w: int

    def client_sends(self, message: dict[str, Any]) -> None:
        os.write(self.client_w, json.dumps(message).encode() + b"\n")

    def sdk_sends(self, message: dict[str, Any]) -> None:
        os.write(self.sdk_w, json.dumps(message).encode() + b"\n")

    def client_reads(self, timeout_s: float = 5.0) -> dict[str, Any] | None:
        return _read_line(self.client_r, timeout_s)

    def sdk_reads(self, timeout_s: float = 5.0) -> dict[str, Any] | None:
        return _read_line(self.sdk_r, timeout_s)


def _read_line(fd: int, timeout_s: float) -> dict[str, Any] | None:
    data = b""
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], timeout_s)
        if not ready:
            return None
        chunk = os.read(fd, 1)
        if not chunk:
            return None
        data += chunk
    message: dict[str, Any] = json.loads(data)
    return message


@pytest.fixture
def wire() -> Iterator[Wire]:
    client_to_server_r, client_w = os.pipe()
    client_r, server_to_client_w = os.pipe()
    front = Front(ANSWERS)
    # The front takes the server's stdin/stdout descriptors; the SDK then reads and writes
    # the same numbers, now the front's pipes.
    front.start(stdin_fd=client_to_server_r, stdout_fd=server_to_client_w)
    yield Wire(front, client_w, client_r, client_to_server_r, server_to_client_w)
    os.close(client_w)
    front.close()
    for fd in (client_r, client_to_server_r, server_to_client_w):
        os.close(fd)


def test_discovery_is_answered_at_once_and_the_sdk_still_sees_it(wire: Wire) -> None:
    discover = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": META}
    wire.client_sends(discover)
    assert wire.client_reads() == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": ANSWERS["stateless"]["discover"],
    }
    assert wire.sdk_reads() == discover  # passed on unchanged
    wire.sdk_sends({"jsonrpc": "2.0", "id": 1, "result": {"late": True}})  # dropped
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": META}
    wire.client_sends(listing)
    answer = wire.client_reads()
    assert answer is not None and answer["id"] == 2
    assert [t["name"] for t in answer["result"]["tools"]][:3] == [
        "get_contract",
        "list_files",
        "search_text",
    ]
    assert wire.sdk_reads() == listing


def test_a_tool_call_waits_for_the_sdk_and_its_answer_passes(wire: Wire) -> None:
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "diff", **META}}
    wire.client_sends(call)
    assert wire.sdk_reads() == call
    assert wire.client_reads(timeout_s=0.3) is None  # the front does not answer it
    wire.sdk_sends({"jsonrpc": "2.0", "id": 7, "result": {"ok": 1}})
    assert wire.client_reads() == {"jsonrpc": "2.0", "id": 7, "result": {"ok": 1}}


def test_once_the_sdk_serves_the_front_answers_nothing(wire: Wire) -> None:
    wire.front.serving()
    discover = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": META}
    wire.client_sends(discover)
    assert wire.sdk_reads() == discover
    assert wire.client_reads(timeout_s=0.3) is None
    wire.sdk_sends({"jsonrpc": "2.0", "id": 1, "result": {"from": "sdk"}})
    assert wire.client_reads() == {"jsonrpc": "2.0", "id": 1, "result": {"from": "sdk"}}


def test_the_handshake_is_answered_in_the_version_asked(wire: Wire) -> None:
    version = ANSWERS["handshake"]["versions"][0]
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t"}},
    }
    wire.client_sends(init)
    answer = wire.client_reads()
    assert answer is not None
    assert answer["result"]["protocolVersion"] == version
    assert answer["result"]["serverInfo"]["name"] == "patchwarden"
    wire.client_sends({"jsonrpc": "2.0", "method": "notifications/initialized"})
    wire.client_sends({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    answer = wire.client_reads()
    assert answer is not None and answer["id"] == 1 and "tools" in answer["result"]
    assert [m.get("method") for m in (wire.sdk_reads(), wire.sdk_reads(), wire.sdk_reads())] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
    ]


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "1999"}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},  # no handshake before it
        {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": {}}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/list",
            "params": {"cursor": "x", **META},  # a page the recording does not hold
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}},
        },
    ],
    ids=["unknown-version", "before-handshake", "no-version", "cursor", "other-version"],
)
def test_what_the_recording_does_not_hold_goes_to_the_sdk(
    wire: Wire, message: dict[str, Any]
) -> None:
    wire.client_sends(message)
    assert wire.sdk_reads() == message
    assert wire.client_reads(timeout_s=0.3) is None


def test_a_server_request_reusing_an_answered_id_is_not_dropped(wire: Wire) -> None:
    wire.client_sends({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": META})
    assert wire.client_reads() is not None
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}  # the server's own request, id 1
    wire.sdk_sends(ping)
    assert wire.client_reads() == ping
    wire.sdk_sends({"jsonrpc": "2.0", "id": 1, "result": {}})  # the SDK's late answer: dropped
    wire.sdk_sends({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
    assert wire.client_reads() == {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {},
    }


def test_the_client_leaving_ends_the_sdks_input_and_its_last_lines_go_out(wire: Wire) -> None:
    os.close(wire.client_w)
    wire.client_w = os.open(os.devnull, os.O_WRONLY)  # the fixture closes this one
    assert wire.sdk_reads() is None  # end of input
    wire.sdk_sends({"jsonrpc": "2.0", "id": 9, "result": {"last": True}})
    wire.front.close()
    assert wire.client_reads() == {"jsonrpc": "2.0", "id": 9, "result": {"last": True}}


def test_the_recording_is_of_this_code() -> None:
    assert ANSWERS["fingerprint"] == fingerprint(), STALE
    assert load_answers() == ANSWERS


def test_a_recording_of_other_code_is_not_used(tmp_path: Path) -> None:
    """A tool changed and the file not rewritten: no front (the SDK answers), not the old
    tool list."""
    other = tmp_path / "answers.json"
    other.write_text(json.dumps({**ANSWERS, "fingerprint": "0" * 64}))
    assert load_answers(other) is None
    other.write_text("{not json")
    assert load_answers(other) is None
    assert load_answers(tmp_path / "missing.json") is None


@pytest.mark.bwrap
def test_the_recorded_answers_are_what_serve_answers(tmp_path: Path) -> None:
    from patchwarden.server._demo import build_demo, server_parameters
    from patchwarden.server._discovery import record

    _, config, env = build_demo(tmp_path / "demo")
    latest = ANSWERS["handshake"]["versions"][-1]
    now = record(server_parameters(config, env, tmp_path / "demo"), handshakes=[latest])
    assert now["fingerprint"] == ANSWERS["fingerprint"], STALE
    assert now["stateless"] == ANSWERS["stateless"], STALE
    assert now["handshake"]["initialize"] == ANSWERS["handshake"]["initialize"], STALE
    assert now["handshake"]["tools"] == ANSWERS["handshake"]["tools"], STALE
