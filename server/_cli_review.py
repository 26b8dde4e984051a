"""The reviewer and operator commands of the CLI (SPEC sections 5, 7, 8, 9, 11).

``fixtures pin|guard``, ``sweep``, ``quarantine release-check``,
``freeze propose|check|approve|list|expire`` and ``verdicts list|show``.
``server/cli.py`` calls :func:`register` at import.

Every error is one line on stderr and exit 2, usage errors included; a
check that does not hold is exit 1 with one line per finding on stdout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import wraps
from pathlib import Path
from typing import IO, Any, TypeVar

import click
import git

from patchwarden.sandbox import AgentRun, PatchwardenError

# Details of the review side that the facade does not need to carry.
from patchwarden.scorer import (
    DEFAULT_CONTRACT_PATH,
    DEFAULT_RECORD,
    DEFAULT_SWEEP_RUNS,
    RELEASE_RUNS,
    InputError,
    Manifest,
    Ticket,
    VerdictBundle,
    approve_ticket,
    expire_tickets,
    freeze_check,
    guard_fixtures,
    list_tickets,
    load_contract,
    load_verdict,
    parse_expiry,
    pin_fixtures,
    propose_freeze,
    read_index,
    read_manifest,
    release_check,
    sweep,
    working_tree,
    write_json_atomic,
)

from .config import OperatorConfig, load_config

EXIT_HOLDS = 0
EXIT_FAILS = 1
EXIT_USAGE = 2
DEFAULT_MANIFEST = "tests/fixtures/manifest.json"
EVIDENCE_LINES_SHOWN = 12
"""Evidence lines per check in ``verdicts show``; scorecard.json has them all."""

F = TypeVar("F", bound=Callable[..., Any])


# -- one-line errors ----------------------------------------------------------


class OneLineUsageError(click.UsageError):
    """A usage error shown as one line (no usage block), exit 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"patchwarden: error: {self.format_message()}", err=True)


def _one_line_usage(ctx: click.Context, exc: click.UsageError) -> OneLineUsageError:
    if isinstance(exc, OneLineUsageError):
        return exc
    return OneLineUsageError(f"{ctx.command_path}: {exc.format_message()}")


class OneLineCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _one_line_usage(ctx, exc) from None


class OneLineGroup(click.Group):
    command_class = OneLineCommand

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _one_line_usage(ctx, exc) from None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            raise _one_line_usage(ctx, exc) from None


def one_line_errors(func: F) -> F:
    """Our errors, file system errors and git failures: one stderr line, exit 2."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except PatchwardenError as exc:
            message = str(exc)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            message = f"{where}{exc.strerror or exc}"
        except git.GitCommandError as exc:
            stderr = (exc.stderr or "").strip().splitlines()
            message = f"git {exc.command[1] if len(exc.command) > 1 else ''}: " + (
                stderr[-1] if stderr else f"exit status {exc.status}"
            )
        click.echo(f"patchwarden: error: {message}", err=True)
        sys.exit(EXIT_USAGE)

    return wrapper  # type: ignore[return-value]


# -- shared options and helpers ------------------------------------------------

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Operator configuration (YAML). Without it the safe defaults apply.",
)
log_dir_option = click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="The reviewers' log directory (default: the config's scorer.log_dir).",
)
repo_option = click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="The repository (its working tree).",
)
contract_option = click.option(
    "--contract",
    default=DEFAULT_CONTRACT_PATH,
    show_default=True,
    help="Contract path inside the repository (read from the commit).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead.")


def _config(config_path: Path | None) -> OperatorConfig:
    return load_config(config_path)


def _log_dir(config_path: Path | None, log_dir: Path | None) -> Path:
    return log_dir if log_dir is not None else Path(_config(config_path).scorer.log_dir)


def _now() -> datetime:
    return datetime.now(UTC)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain terminal table: padded columns, the last one left ragged."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers), *[list(r) for r in rows]]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _printable(text: str) -> str:
    """Text from files we did not write: keep it on one line, show control characters."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


# -- fixtures -------------------------------------------------------------------


def _manifest_path(tree: Path, manifest: str | None) -> Path:
    if manifest is not None:
        return (tree / manifest) if not Path(manifest).is_absolute() else Path(manifest)
    contract = tree / DEFAULT_CONTRACT_PATH
    if contract.is_file():
        named = load_contract(contract).fixture_manifest
        if named:
            return tree / named
    return tree / DEFAULT_MANIFEST


def _in_repo(tree: Path, value: str) -> str:
    path = Path(value)
    absolute = (path if path.is_absolute() else tree / path).resolve()
    if absolute != tree and tree not in absolute.parents:
        raise InputError("fixture is outside the repository", where=value)
    return absolute.relative_to(tree).as_posix()


def _fixtures_commands(group: click.Group) -> None:
    @group.group("fixtures", cls=OneLineGroup)
    def fixtures_group() -> None:
        """Pin fixtures in the manifest, or check them against it (SPEC section 8)."""

    @fixtures_group.command("pin")
    @repo_option
    @click.option(
        "--manifest",
        help="Manifest path in the repository (default: the contract's fixture_manifest, "
        f"else {DEFAULT_MANIFEST}).",
    )
    @click.option(
        "--covers", "covers", multiple=True, help="Property id the fixtures feed (repeatable)."
    )
    @click.argument("fixtures", nargs=-1, required=True)
    @one_line_errors
    def pin_cmd(
        repo: Path, manifest: str | None, covers: tuple[str, ...], fixtures: tuple[str, ...]
    ) -> None:
        """Write FIXTURE... into the manifest with their SHA-256 and the time; other
        entries stay. The manifest is a contract path: commit it for review."""
        tree = working_tree(repo)
        path = _manifest_path(tree, manifest)
        existing = read_manifest(path) if path.exists() else Manifest()
        rels = [_in_repo(tree, f) for f in fixtures]
        previous = {e.fixture: e for e in existing.fixtures}
        cover_map = {
            rel: list(covers) if covers else list(previous[rel].covers if rel in previous else [])
            for rel in rels
        }
        pinned = pin_fixtures(tree, rels, cover_map)
        merged = {**previous, **{e.fixture: e for e in pinned.fixtures}}
        result = Manifest(fixtures=[merged[k] for k in sorted(merged)])
        write_json_atomic(path, result.model_dump(mode="json"))
        for entry in pinned.fixtures:
            feeds = f" covers {', '.join(entry.covers)}" if entry.covers else ""
            click.echo(f"pinned {entry.fixture} sha256 {entry.sha256}{feeds}")
        click.echo(f"manifest: {path} ({len(result.fixtures)} fixtures)")

    @fixtures_group.command("guard")
    @repo_option
    @click.option("--manifest", help="Manifest path in the repository.")
    @one_line_errors
    def guard_cmd(repo: Path, manifest: str | None) -> None:
        """Exit 0 when every manifest fixture matches its SHA-256, else 1 with one
        ``fixture drifted`` line per fixture."""
        tree = working_tree(repo)
        path = _manifest_path(tree, manifest)
        loaded = read_manifest(path)
        drifts = guard_fixtures(tree, loaded)
        for drift in drifts:
            click.echo(drift.message())
        if drifts:
            sys.exit(EXIT_FAILS)
        click.echo(f"ok: {len(loaded.fixtures)} fixtures match {path}")


# -- sweep and quarantine -------------------------------------------------------


def _run_line(number: int, runs: int, run: AgentRun) -> str:
    counts: dict[str, int] = {}
    for outcome in run.outcomes:
        counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
    shown = ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "no tests"
    code = run.process.exit_code
    return f"run {number}/{runs}: {shown} (exit {code if code is not None else 'killed'})"


def _sweep_commands(group: click.Group) -> None:
    @group.command("sweep", cls=OneLineCommand)
    @repo_option
    @click.option("--base", required=True, help="The base commit agents will start from.")
    @click.option(
        "--runs", type=click.IntRange(min=2), default=DEFAULT_SWEEP_RUNS, show_default=True
    )
    @contract_option
    @config_option
    @one_line_errors
    def sweep_cmd(
        repo: Path, base: str, runs: int, contract: str, config_path: Path | None
    ) -> None:
        """Run the suite RUNS times on a clean checkout of BASE, each run its own sandboxed
        process. Flaky tests go into the quarantine list; a test failing every run means the
        base is broken (exit 1), and serve refuses it unless agent.waive_broken_base."""
        config = _config(config_path)
        result = sweep(
            repo,
            base,
            config.scorer,
            config.sandbox,
            runs=runs,
            contract=contract,
            on_run=lambda n, run: click.echo(_run_line(n, runs, run)),
        )
        click.echo(
            f"swept {result.base[:12]}: {result.tests_seen} tests, {result.runs} runs, "
            f"seed {result.seed}"
        )
        for test in result.flaky:
            click.echo(
                f"flaky (quarantined): {test.test_id} failed {test.failures} of {test.runs} runs"
            )
        for test in result.broken:
            click.echo(f"broken: {test.test_id} failed {test.failures} of {test.runs} runs")
        for reason in result.incomplete_runs:
            click.echo(f"incomplete: {reason}")
        click.echo(f"quarantine list: {result.quarantine_list} (review and commit it)")
        if result.base_broken:
            click.echo(
                "base broken: serve refuses this base until it is fixed "
                "or agent.waive_broken_base is set"
            )
            sys.exit(EXIT_FAILS)

    @group.group("quarantine", cls=OneLineGroup)
    def quarantine_group() -> None:
        """The flake quarantine (SPEC section 7)."""

    @quarantine_group.command("release-check")
    @repo_option
    @click.option("--test-id", required=True, help="The quarantined pytest node id.")
    @click.option(
        "--runs",
        type=click.IntRange(min=RELEASE_RUNS),
        default=RELEASE_RUNS,
        show_default=True,
        help="Consecutive clean runs required.",
    )
    @click.option("--base", default="HEAD", show_default=True, help="Commit to run the test on.")
    @contract_option
    @config_option
    @one_line_errors
    def release_check_cmd(
        repo: Path,
        test_id: str,
        runs: int,
        base: str,
        contract: str,
        config_path: Path | None,
    ) -> None:
        """Release a quarantined test after RUNS consecutive clean runs, each its own
        sandboxed process on a clean checkout, on this machine. The first unclean run stops
        the check and the test stays quarantined (exit 1). Every attempt is recorded in the
        list."""
        config = _config(config_path)

        def progress(number: int, failure: str) -> None:
            click.echo(f"run {number}/{runs}: {failure or 'clean'}")

        check = release_check(
            repo,
            test_id,
            config.scorer,
            config.sandbox,
            base=base,
            contract=contract,
            runs=runs,
            on_run=progress,
        )
        if check.released:
            click.echo(
                f"released: {test_id} after {check.clean} consecutive clean runs on "
                f"{check.hostname} ({check.machine_id})"
            )
            return
        click.echo(f"kept in quarantine: {test_id} ({check.failure})")
        sys.exit(EXIT_FAILS)


# -- freeze: records and tickets ------------------------------------------------


def _ticket_rows(tickets: Sequence[Ticket]) -> list[list[str]]:
    return [
        [
            t.ticket_id,
            t.status,
            t.patch_sha[:12],
            t.expires or "-",
            t.reason_code or "-",
            _printable(", ".join(t.properties)) or "-",
        ]
        for t in tickets
    ]


TICKET_HEADERS = ("TICKET", "STATUS", "PATCH", "EXPIRES", "REASON", "PROPERTIES")


def _freeze_commands(group: click.Group) -> None:
    @group.group("freeze", cls=OneLineGroup)
    def freeze_group() -> None:
        """Freeze records (SPEC section 9) and freeze tickets (SPEC section 5)."""

    @freeze_group.command("propose")
    @repo_option
    @click.option("--test-id", required=True, help="The pytest node id to freeze.")
    @click.option("--fixture", required=True, help="The fixture, a path in the repository.")
    @click.option("--oracle", required=True, help="The property file that checks it.")
    @click.option("--contract", help=f"Contract path (default: {DEFAULT_CONTRACT_PATH} if any).")
    @click.option("--reason", default="", help="Why the test should be frozen (kept in notes).")
    @config_option
    @one_line_errors
    def propose_cmd(
        repo: Path,
        test_id: str,
        fixture: str,
        oracle: str,
        contract: str | None,
        reason: str,
        config_path: Path | None,
    ) -> None:
        """Run the five steps; write .freeze/record.json only when every step holds.
        Exit 0: proposed for review; 1: rejected (the step, the field and why)."""
        config = _config(config_path)
        proposal = propose_freeze(
            repo,
            test_id,
            fixture,
            oracle,
            config.scorer,
            config.sandbox,
            contract=contract,
            reason=reason,
            say=click.echo,
        )
        if proposal.status == "proposed_for_review":
            click.echo(f"proposed_for_review: {proposal.record}")
            return
        click.echo(f"rejected at step {proposal.step}: {proposal.reason}")
        sys.exit(EXIT_FAILS)

    @freeze_group.command("check")
    @repo_option
    @click.option(
        "--record",
        type=click.Path(path_type=Path, dir_okay=False),
        help=f"The record (default: {DEFAULT_RECORD} in the repository).",
    )
    @config_option
    @one_line_errors
    def check_cmd(repo: Path, record: Path | None, config_path: Path | None) -> None:
        """Exit 0 only when all six fields of the record hold (HEAD is the patch, HEAD^ its
        parent); else 1 with one line per field that does not."""
        config = _config(config_path)
        problems = freeze_check(repo, config.scorer, config.sandbox, record_path=record)
        for problem in problems:
            click.echo(_printable(problem.line()))
        if problems:
            sys.exit(EXIT_FAILS)
        click.echo("ok: every field of the freeze record holds")

    @freeze_group.command("approve")
    @click.argument("ticket_id")
    @click.option("--expires", required=True, help="YYYY-MM-DD (through that day, UTC).")
    @click.option("--reason-code", required=True, help="snake_case, e.g. known_flake.")
    @log_dir_option
    @config_option
    @one_line_errors
    def approve_cmd(
        ticket_id: str,
        expires: str,
        reason_code: str,
        log_dir: Path | None,
        config_path: Path | None,
    ) -> None:
        """Approve a proposed freeze ticket with an expiry and a reason code. The ticket
        covers its own patch commit only."""
        ticket = approve_ticket(
            _log_dir(config_path, log_dir),
            ticket_id,
            expires=parse_expiry(expires),
            reason_code=reason_code,
            now=_now(),
        )
        click.echo(
            f"approved {ticket.ticket_id} for patch {ticket.patch_sha} until {ticket.expires} "
            f"({ticket.reason_code}, by {ticket.approved_by})"
        )

    @freeze_group.command("list")
    @log_dir_option
    @json_option
    @config_option
    @one_line_errors
    def list_cmd(log_dir: Path | None, as_json: bool, config_path: Path | None) -> None:
        """Every freeze ticket: proposed or approved, with patch, expiry and reason."""
        tickets = list_tickets(_log_dir(config_path, log_dir))
        if as_json:
            click.echo(json.dumps([t.model_dump(mode="json") for t in tickets], indent=2))
            return
        if not tickets:
            click.echo("no freeze tickets")
            return
        click.echo(table(TICKET_HEADERS, _ticket_rows(tickets)))

    @freeze_group.command("expire")
    @log_dir_option
    @config_option
    @one_line_errors
    def expire_cmd(log_dir: Path | None, config_path: Path | None) -> None:
        """Delete every ticket whose expiry has passed; print what was deleted."""
        deleted = expire_tickets(_log_dir(config_path, log_dir), _now())
        for ticket in deleted:
            click.echo(
                f"deleted {ticket.ticket_id} (patch {ticket.patch_sha[:12]}, "
                f"expired {ticket.expires})"
            )
        if not deleted:
            click.echo("no expired tickets")


# -- verdicts -------------------------------------------------------------------


def _reasons(results: Any) -> str:
    if not isinstance(results, list):
        return "-"
    counts: dict[str, int] = {}
    for result in results:
        if isinstance(result, dict):
            reason = str(result.get("reason", "?"))
            counts[reason] = counts.get(reason, 0) + 1
    return ", ".join(f"{n} {r}" for r, n in counts.items()) or "-"


def _show_text(bundle: VerdictBundle) -> str:
    d = bundle.decision
    gate = d.get("gate_decision", d.get("decision"))
    head = [
        ["verdict", bundle.verdict_id],
        ["decision", f"{d.get('decision')} (gate: {gate})"],
        ["contract", str(d.get("contract_hash", "-"))],
        ["parent", str(d.get("parent_sha", "-"))],
        ["patch", str(d.get("patch_sha", "-"))],
    ]
    if bundle.ticket is not None:
        t = bundle.ticket
        expiry = f", expires {t.expires}, {t.reason_code}" if t.expires else ""
        head.append(["ticket", f"{t.ticket_id} ({t.status}{expiry}) {bundle.ticket_file}"])
    elif bundle.ticket_file is not None:
        head.append(["ticket", f"deleted (expired): {bundle.ticket_file}"])
    parts = ["\n".join(f"{k:<9} {_printable(v)}" for k, v in head)]
    results = [r for r in d.get("results", []) if isinstance(r, dict)]
    parts.append(
        table(
            ("PROPERTY", "DECISION", "REASON"),
            [
                [_printable(str(r.get(k, "-"))) for k in ("prop", "decision", "reason")]
                for r in results
            ],
        )
        if results
        else "properties: none (gate skipped)"
    )
    counts = d.get("counts", {})
    parts.append(
        table(
            ("ROWS", "LINES", "PASS", "FAIL", "IGNORED"),
            [
                [
                    side,
                    *(
                        str(counts.get(side, {}).get(k, "-"))
                        for k in ("lines", "pass", "fail", "ignored")
                    ),
                ]
                for side in ("parent", "patch")
            ],
        )
    )
    rows = []
    for check in bundle.scorecard:
        evidence = [str(e) for e in check.get("evidence", [])]
        shown = evidence[:EVIDENCE_LINES_SHOWN] or ["-"]
        if len(evidence) > EVIDENCE_LINES_SHOWN:
            shown.append(f"(+{len(evidence) - EVIDENCE_LINES_SHOWN} more in scorecard.json)")
        for i, line in enumerate(shown):
            first = i == 0
            rows.append(
                [
                    str(check.get("check", "?")) if first else "",
                    str(check.get("outcome", "?")) if first else "",
                    _printable(line),
                ]
            )
    parts.append(table(("CHECK", "OUTCOME", "EVIDENCE"), rows))
    parts.append(
        "review note (review-note.txt):\n" + "\n".join(f"  {_printable(n)}" for n in bundle.note)
    )
    parts.append(f"files: {bundle.path}\n" + "\n".join(f"  {f}" for f in bundle.files))
    return "\n\n".join(parts)


def _verdicts_commands(group: click.Group) -> None:
    @group.group("verdicts", cls=OneLineGroup)
    def verdicts_group() -> None:
        """Read the verdicts in the log directory (SPEC section 11)."""

    @verdicts_group.command("list")
    @log_dir_option
    @json_option
    @config_option
    @one_line_errors
    def list_cmd(log_dir: Path | None, as_json: bool, config_path: Path | None) -> None:
        """Every verdict in verdicts.jsonl, oldest first."""
        directory = _log_dir(config_path, log_dir)
        entries = read_index(directory)
        if as_json:
            click.echo(json.dumps(entries, indent=2))
            return
        if not entries:
            click.echo(f"no verdicts in {directory}")
            return
        rows = [
            [
                _printable(str(e["verdict_id"])),
                str(e.get("decision", "-")),
                str(e.get("gate_decision", "-")),
                str(e.get("patch_sha", "-"))[:12],
                str(e.get("parent_sha", "-"))[:12],
                _printable(_reasons(e.get("results"))),
            ]
            for e in entries
        ]
        click.echo(table(("VERDICT", "DECISION", "GATE", "PATCH", "PARENT", "REASONS"), rows))
        click.echo(f"{len(entries)} verdicts; bundles under {directory / 'verdicts'}")

    @verdicts_group.command("show")
    @click.argument("verdict_id")
    @log_dir_option
    @json_option
    @config_option
    @one_line_errors
    def show_cmd(
        verdict_id: str, log_dir: Path | None, as_json: bool, config_path: Path | None
    ) -> None:
        """One verdict: decision, reasons per property, row counts, the scorecard with its
        evidence, the review note and where the files are. VERDICT_ID may be a prefix."""
        bundle = load_verdict(_log_dir(config_path, log_dir), verdict_id)
        if as_json:
            out: dict[str, Any] = {
                "verdict_id": bundle.verdict_id,
                "bundle": str(bundle.path),
                "decision": bundle.decision,
                "scorecard": bundle.scorecard,
                "review_note": bundle.note,
                "files": bundle.files,
            }
            if bundle.ticket is not None:
                out["ticket"] = bundle.ticket.model_dump(mode="json")
            click.echo(json.dumps(out, indent=2))
            return
        click.echo(_show_text(bundle))


def register(group: click.Group) -> None:
    """Add the reviewer and operator commands to the ``patchwarden`` group."""
    _fixtures_commands(group)
    _sweep_commands(group)
    _freeze_commands(group)
    _verdicts_commands(group)


__all__ = ["register", "table"]
