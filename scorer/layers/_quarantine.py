"""The flake quarantine list (docs/design/contract-layers.md): which tests the agent's loop leaves
out, and why.

The list is a contract path (read-only to the agent), at the contract's
``quarantine_list`` or ``contract/quarantine.json``. ``patchwarden sweep``
writes it into the operator's working tree for review and commit::

    {"base": "<sha>", "runs": 3,
     "tests": [{"test_id": "tests/test_x.py::test_y", "failures": 1, "runs": 3,
                "since": "2026-11-05T10:00:00Z", "release_checks": [...]}],
     "broken": [{"test_id": "...", "failures": 3, "runs": 3}],
     "incomplete_runs": [], "released": []}

A quarantined test leaves the list only through ``release_check``: ten
consecutive clean runs, each its own sandboxed process on a clean checkout,
on this machine; every attempt is recorded with the machine and the time.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from patchwarden._documents import parse_document, validate_document
from patchwarden.sandbox import AgentRun, SandboxConfig, file_at, resolve_commit

from .._checkout import contract_at, run_pytest_once, scorer_clone, working_tree
from .._config import ScorerConfig
from .._contract import DEFAULT_CONTRACT_PATH, Contract
from .._errors import InputError

RELEASE_RUNS = 10
"""Consecutive clean runs a quarantined test needs before it returns
(docs/design/contract-layers.md)."""
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")

_MODEL = ConfigDict(extra="forbid", frozen=True)


def utc_stamp(moment: datetime | None = None) -> str:
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ReleaseCheck(BaseModel):
    """One ``quarantine release-check`` attempt, kept in the list whatever its outcome."""

    model_config = _MODEL

    at: str
    machine_id: str
    hostname: str
    base: str
    """The commit the runs checked out."""
    required: int
    """Consecutive clean runs asked for (at least RELEASE_RUNS)."""
    runs: int
    """Runs made: the first unclean run stops the check."""
    clean: int
    released: bool
    failure: str = ""
    """What the unclean run showed (empty when released)."""


class QuarantinedTest(BaseModel):
    model_config = _MODEL

    test_id: str = Field(min_length=1)
    failures: int = Field(ge=0)
    """Runs of the last sweep that found it failing (or missing)."""
    runs: int = Field(ge=1)
    since: str
    """When a sweep first quarantined it."""
    release_checks: list[ReleaseCheck] = []


class BrokenTest(BaseModel):
    """A test that failed in every run of the sweep: the base is broken."""

    model_config = _MODEL

    test_id: str = Field(min_length=1)
    failures: int = Field(ge=1)
    runs: int = Field(ge=1)


class ReleasedTest(BaseModel):
    model_config = _MODEL

    test_id: str
    since: str
    released_at: str
    check: ReleaseCheck


class QuarantineList(BaseModel):
    model_config = _MODEL

    base: str
    """The commit of the last sweep."""
    runs: int = Field(ge=1)
    tests: list[QuarantinedTest] = []
    broken: list[BrokenTest] = []
    incomplete_runs: list[str] = []
    """Sweep runs that did not finish (crash, timeout, collection error)."""
    released: list[ReleasedTest] = []

    def test_ids(self) -> list[str]:
        return [t.test_id for t in self.tests]

    def entry(self, test_id: str) -> QuarantinedTest | None:
        return next((t for t in self.tests if t.test_id == test_id), None)


@dataclass(frozen=True)
class Tally:
    """How often one test failed in a series of runs."""

    test_id: str
    failures: int
    runs: int


def quarantine_list_path(contract: Contract) -> str:
    """Tree-relative path of the contract's quarantine list (a contract path)."""
    return contract.quarantine_list_path()


def read_quarantine_list(path: Path) -> QuarantineList | None:
    """The list at ``path``; None when there is no file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the quarantine list: {exc}", where=str(path)) from None
    return parse_quarantine_list(text, str(path))


def parse_quarantine_list(text: str, where: str) -> QuarantineList:
    data = parse_document(text, where, json_only=True)
    return validate_document(QuarantineList, data, text, where, what="quarantine list")


def write_json_atomic(path: Path, value: object) -> None:
    """Write ``value`` as JSON beside ``path`` and rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(json.dumps(value, indent=2) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_quarantine_list(path: Path, qlist: QuarantineList) -> None:
    write_json_atomic(path, qlist.model_dump(mode="json"))


def merge_sweep(
    existing: QuarantineList | None,
    *,
    base: str,
    runs: int,
    flaky: Sequence[Tally],
    broken: Sequence[Tally],
    incomplete: Sequence[str],
    now: datetime | None = None,
) -> QuarantineList:
    """The list after a sweep of ``base``.

    Flaky tests join (or have their counts refreshed, keeping ``since``);
    tests quarantined earlier stay until a release check lets them go, even
    when this sweep saw them pass. ``broken`` and ``incomplete_runs`` describe
    this sweep's base only.
    """
    stamp = utc_stamp(now)
    kept = {t.test_id: t for t in existing.tests} if existing else {}
    for tally in flaky:
        previous = kept.get(tally.test_id)
        kept[tally.test_id] = QuarantinedTest(
            test_id=tally.test_id,
            failures=tally.failures,
            runs=tally.runs,
            since=previous.since if previous else stamp,
            release_checks=previous.release_checks if previous else [],
        )
    return QuarantineList(
        base=base,
        runs=runs,
        tests=sorted(kept.values(), key=lambda t: t.test_id),
        broken=[BrokenTest(test_id=t.test_id, failures=t.failures, runs=t.runs) for t in broken],
        incomplete_runs=list(incomplete),
        released=existing.released if existing else [],
    )


def machine_identity() -> tuple[str, str]:
    """(machine id, hostname) of this machine; the id falls back to the hostname."""
    hostname = socket.gethostname()
    for name in MACHINE_ID_FILES:
        try:
            value = Path(name).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if value:
            return value, hostname
    return f"hostname:{hostname}", hostname


def unclean_reason(run: AgentRun, test_id: str) -> str:
    """Why one run of ``test_id`` is not clean; empty when it is (exit 0, every case passed)."""
    process = run.process
    if process.exit_code is None:
        limit = "the idle limit" if process.idle_timed_out else "the wall-clock limit"
        return f"killed at {limit}" if not process.cancelled else "cancelled"
    ours = [o for o in run.outcomes if o.node_id == test_id or o.node_id.startswith(test_id + "[")]
    bad = [f"{o.node_id} {o.outcome}" for o in ours if o.outcome != "passed"]
    if bad:
        return f"exit code {process.exit_code}: {', '.join(bad[:3])}"
    if process.exit_code != 0:
        return f"exit code {process.exit_code}"
    if not ours:
        return "the test did not run"
    if not run.complete:
        return "the run did not finish (no sentinel)"
    return ""


def release_check(
    repo: Path,
    test_id: str,
    config: ScorerConfig,
    sandbox_config: SandboxConfig,
    *,
    base: str = "HEAD",
    contract: str = DEFAULT_CONTRACT_PATH,
    runs: int = RELEASE_RUNS,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    on_run: Callable[[int, str], None] | None = None,
) -> ReleaseCheck:
    """Run ``test_id`` up to ``runs`` times on clean checkouts of ``base``; release it if
    every run is clean, else keep it. The attempt is recorded in the list either way.

    ``on_run(number, unclean_reason)`` is called after each run ("" = clean).
    """
    if runs < RELEASE_RUNS:
        raise InputError(f"a release check needs at least {RELEASE_RUNS} runs, got {runs}")
    if not test_id.strip() or test_id.startswith("-"):
        raise InputError(f"--test-id must be a pytest node id, got {test_id!r}")
    tree = working_tree(repo)
    base_sha = resolve_commit(repo, base)
    contract_obj, contract_file = contract_at(repo, base_sha, contract)
    list_rel = quarantine_list_path(contract_obj)
    list_path = tree / list_rel
    qlist = read_quarantine_list(list_path)
    if qlist is None:
        raise InputError("no quarantine list (run patchwarden sweep first)", where=str(list_path))
    entry = qlist.entry(test_id)
    if entry is None:
        raise InputError(f"{test_id} is not quarantined", where=str(list_path))
    clone = scorer_clone(tree, [base_sha], config)
    contract_paths = list(dict.fromkeys([*contract_obj.contract_paths(contract_file), list_rel]))
    clean, failure = 0, ""
    for number in range(1, runs + 1):
        run = run_pytest_once(
            clone,
            base_sha,
            [test_id],
            contract_obj.seeds[0],
            config,
            sandbox_config,
            contract_paths=contract_paths,
        )
        failure = unclean_reason(run, test_id)
        if on_run is not None:
            on_run(number, failure)
        if failure:
            failure = f"run {number}: {failure}"
            break
        clean += 1
    machine_id, hostname = machine_identity()
    moment = now()
    check = ReleaseCheck(
        at=utc_stamp(moment),
        machine_id=machine_id,
        hostname=hostname,
        base=base_sha,
        required=runs,
        runs=clean + (1 if failure else 0),
        clean=clean,
        released=not failure,
        failure=failure,
    )
    # Re-read: a sweep may have rewritten the list while the runs went on.
    current = read_quarantine_list(list_path) or qlist
    current_entry = current.entry(test_id) or entry
    others = [t for t in current.tests if t.test_id != test_id]
    if check.released:
        released = ReleasedTest(
            test_id=test_id, since=current_entry.since, released_at=check.at, check=check
        )
        updated = current.model_copy(
            update={"tests": others, "released": [*current.released, released]}
        )
    else:
        kept = current_entry.model_copy(
            update={"release_checks": [*current_entry.release_checks, check]}
        )
        updated = current.model_copy(
            update={"tests": sorted([*others, kept], key=lambda t: t.test_id)}
        )
    write_quarantine_list(list_path, updated)
    return check


def read_quarantine_at(repo: Path, sha: str, contract: Contract) -> list[str]:
    """Test ids of the quarantine list committed at ``sha``; none without one.

    A list that does not parse is an input error, never an empty quarantine.
    """
    rel = quarantine_list_path(contract)
    data = file_at(repo, sha, rel)
    if data is None:
        return []
    return parse_quarantine_list(data.decode("utf-8", "replace"), f"{sha[:12]}:{rel}").test_ids()
