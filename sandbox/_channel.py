"""The authenticated result channel of a scorer run: its secret, its canaries, its verification.

Host side of docs/design/runner.md, "Unforgeable results". Per run the host draws

- an HMAC-SHA256 key and the exit status the run must end with (both random), handed to the
  reporter on a descriptor it reads and closes before anything of the tree is importable;
- two hidden canary properties with random names in a file outside the tree: one must
  pass, one must fail with a known witness.

The reporter's signer writes one line per row, then an end marker, each as
``<hex hmac> <json body>`` with ``{"seq": n, "row": {...}}`` or ``{"seq": n, "end": {...}}``.
`verify_channel` reads what came back and says, line by line, why the run is ``forged``
when it is: a line not authenticated by the key, a sequence number out of order, no end
marker or anything after it, another exit status, a canary that did not come back exactly.
Product code may know all of this; it does not hold the key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

KEY_BYTES = 32
"""The HMAC key's length; the reporter reads exactly this many bytes, then b"\\n" and JSON."""
EXIT_STATUS_RANGE = (10, 100)
"""The run's exit status is drawn from here: far from 0, 1-5 (pytest's) and 70 (ours), and
below the 128+N of a death by signal."""
CANARY_DIR = "/patchwarden-canary"
"""Where the canary file is mounted read-only inside the sandbox (outside /workspace)."""
OBSERVED = "observed: "
"""Lines the runner's audit hook writes when the project's own code reads a frame."""
EVIDENCE_LINE_CHARS = 200
FORGED_LINES_SHOWN = 20
"""Evidence lines kept per run; the count of the rest is added."""


@dataclass(frozen=True)
class Canary:
    """A hidden property of one run: it must come back with exactly this status and witness."""

    prop: str
    function: str
    status: str
    witness: str


@dataclass(frozen=True)
class RunSecret:
    """What one scorer run is told on its secret descriptor, and what the host checks."""

    key: bytes
    exit_status: int
    canary_file: str
    """The canary file's name, inside canary_dir."""
    canaries: tuple[Canary, ...]
    canary_dir: str = CANARY_DIR
    """Where the process sees the canary file's directory."""

    @property
    def canary_path(self) -> str:
        return f"{self.canary_dir}/{self.canary_file}"

    def payload(self) -> bytes:
        """The bytes written to the reporter's secret descriptor."""
        spec = {
            "exit": self.exit_status,
            "canaries": [[c.prop, self.canary_path, c.function] for c in self.canaries],
        }
        return self.key + b"\n" + json.dumps(spec).encode()


CANARY_SOURCE = '''\
"""Hidden canary properties of one patchwarden scorer run (not part of the tree)."""

from hypothesis import given
from hypothesis import strategies as st


def test_{passing}():
    assert sorted([3, 1, 2]) == [1, 2, 3]


@given(st.integers(min_value=0, max_value=1000))
def test_{failing}(value):
    assert value < 0
'''
CANARY_FAIL_LINE = 13
"""The line of the failing assertion in CANARY_SOURCE (the witness names it)."""


def new_secret(canary_dir: str = CANARY_DIR) -> RunSecret:
    """A fresh key, exit status and pair of canaries (names drawn at random per run)."""
    low, high = EXIT_STATUS_RANGE
    token = secrets.token_hex(6)
    passing, failing = f"pass_{secrets.token_hex(5)}", f"fail_{secrets.token_hex(5)}"
    canary_file = f"test_pw_{token}.py"
    fail_prop = f"canary.{failing}"
    return RunSecret(
        key=secrets.token_bytes(KEY_BYTES),
        exit_status=low + secrets.randbelow(high - low + 1),
        canary_file=canary_file,
        canaries=(
            Canary(f"canary.{passing}", f"test_{passing}", "pass", ""),
            Canary(
                fail_prop,
                f"test_{failing}",
                "fail",
                f"{fail_prop}|AssertionError|{canary_file}:{CANARY_FAIL_LINE}",
            ),
        ),
        canary_dir=canary_dir,
    )


def canary_source(secret: RunSecret) -> str:
    passing, failing = (c.function.removeprefix("test_") for c in secret.canaries)
    return CANARY_SOURCE.format(passing=passing, failing=failing)


@dataclass
class ChannelReading:
    """What an authenticated channel said, and every reason not to believe it."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    """Authenticated rows, in sequence (canaries included)."""
    end: dict[str, Any] | None = None
    """The authenticated end marker's body, when it came last and in sequence."""
    forged: list[str] = field(default_factory=list)
    observed: list[str] = field(default_factory=list)
    """Frame introspection the runner saw the project's code do (``observed:`` lines):
    not a forgery by itself; the scorer compares the patch's with the parent's."""


def _shown(line: str) -> str:
    line = line.replace("\r", " ")
    return line if len(line) <= EVIDENCE_LINE_CHARS else line[: EVIDENCE_LINE_CHARS - 3] + "..."


def _authenticated(line: str, key: bytes) -> dict[str, Any] | None:
    mac, _, body = line.partition(" ")
    if not body:
        return None
    expected = hmac.new(key, body.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, expected):
        return None
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def verify_channel(raw: bytes, secret: RunSecret, exit_code: int | None) -> ChannelReading:
    """Check every line of a scorer run's channel against the run's secret.

    The run-wide reasons (end marker, exit status, canaries) come first; then the lines
    that failed, at most FORGED_LINES_SHOWN of them.
    """
    reading = ChannelReading()
    lines_wrong: list[str] = []
    expected_seq = 0
    lines = raw.decode("utf-8", "surrogateescape").splitlines()
    for number, line in enumerate(lines, start=1):
        if line.startswith(OBSERVED):
            if line[len(OBSERVED) :] not in reading.observed:
                reading.observed.append(line[len(OBSERVED) :])
            continue
        body = _authenticated(line, secret.key)
        if body is None:
            lines_wrong.append(f"channel line {number} is not authenticated: {_shown(line)}")
            continue
        if reading.end is not None:
            lines_wrong.append(f"channel line {number} comes after the end marker")
            continue
        if body.get("seq") != expected_seq:
            lines_wrong.append(
                f"channel line {number} is out of sequence "
                f"(seq {body.get('seq')!r}, expected {expected_seq})"
            )
            continue
        expected_seq += 1
        if isinstance(body.get("row"), dict):
            reading.rows.append(body["row"])
        elif isinstance(body.get("end"), dict):
            reading.end = body["end"]
        else:
            lines_wrong.append(f"channel line {number} is neither a row nor the end marker")
    if reading.end is None:
        reading.forged.append("no authenticated end marker on the channel")
    elif reading.end.get("rows") != len(reading.rows):
        reading.forged.append(
            f"the end marker counts {reading.end.get('rows')!r} rows, the channel has "
            f"{len(reading.rows)}"
        )
    if exit_code != secret.exit_status:
        reading.forged.append(
            f"the run ended with exit status {exit_code}, not the run's own status "
            f"{secret.exit_status}"
        )
    reading.forged += canary_problems(reading.rows, secret.canaries)
    if len(lines_wrong) > FORGED_LINES_SHOWN:
        rest = len(lines_wrong) - FORGED_LINES_SHOWN
        lines_wrong = [*lines_wrong[:FORGED_LINES_SHOWN], f"... and {rest} more channel lines"]
    reading.forged += lines_wrong
    return reading


def canary_problems(rows: Sequence[dict[str, Any]], canaries: Sequence[Canary]) -> list[str]:
    """Each canary must come back exactly once with its status and witness."""
    problems = []
    for canary in canaries:
        found = [r for r in rows if r.get("prop") == canary.prop]
        if len(found) != 1:
            problems.append(f"canary {canary.prop}: {len(found)} rows, expected 1")
            continue
        status, witness = found[0].get("status"), found[0].get("witness")
        if (status, witness) != (canary.status, canary.witness):
            expected = canary.status + (f" with witness {canary.witness}" if canary.witness else "")
            problems.append(
                f"canary {canary.prop}: {status} {witness or ''}".rstrip()
                + f", expected {expected}"
            )
    return problems
