"""``patchwarden score-batch``: score many requests with one executor (docs/scale.md).

One result line per request on stdout (``--json``: ``{"id", "decision", "verdict_id", ...}``
or ``{"id", "error"}``), a live progress line on stderr when it is a terminal, a summary
line on stderr at the end. Exit 0 when every request got a verdict or an error line, 2 when
the requests file itself cannot be read (nothing is scored), 70 when a request hit an
internal error (its line names the traceback file; the other requests are still scored).
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import click

from patchwarden.sandbox import require_sandbox
from patchwarden.scorer import (
    BatchResult,
    ConfigError,
    Executor,
    LocalExecutor,
    RunUnit,
    make_executor,
    read_requests,
    score_batch,
    with_fetch_urls,
)

from ..config import load_config
from ._base import EXIT_INTERNAL, OneLineCommand, config_option, write_traceback
from ._progress import Bar, progress

EXIT_INTERRUPTED = 130


@click.command("score-batch", cls=OneLineCommand)
@click.argument("requests_file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--log-dir",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Where bundles and the index go; ids with a verdict here are not scored again.",
)
@click.option(
    "--executor",
    "executor_name",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="local: sandboxed processes on this machine; ray: Ray tasks (patchwarden[ray]).",
)
@click.option(
    "--ray-address",
    help="A running Ray cluster (e.g. ray://head:10001); default: a local Ray for this command.",
)
@click.option(
    "--fetch-url",
    "fetch_urls",
    multiple=True,
    metavar="REPO=URL",
    help="With --executor ray: workers fetch REPO's commits from URL instead of getting git "
    "bundles from this machine (repeat for each repository; a request's fetch_url wins).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    help="Sandboxed runs at once (default: scorer.jobs, else the core count; with Ray and no "
    "address, the CPUs of the local Ray).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per request.")
@config_option
def score_batch_cmd(
    requests_file: Path,
    log_dir: Path,
    executor_name: str,
    ray_address: str | None,
    fetch_urls: tuple[str, ...],
    jobs: int | None,
    as_json: bool,
    config_path: Path | None,
) -> None:
    """Score every request of REQUESTS_FILE (one JSON object per line: id, repo, parent,
    patch, and optionally contract, held_out, fetch_url) into the log directory."""
    if ray_address is not None and executor_name != "ray":
        raise ConfigError("--ray-address needs --executor ray", where="score-batch")
    if fetch_urls and executor_name != "ray":
        raise ConfigError("--fetch-url needs --executor ray", where="score-batch")
    urls = dict(_repo_and_url(option) for option in fetch_urls)
    config = load_config(config_path)
    # Absolute, so the bundle paths in the result lines and the index work from anywhere.
    scorer_config = config.scorer.model_copy(update={"log_dir": str(log_dir.resolve())})
    if jobs is not None:
        scorer_config = scorer_config.model_copy(update={"jobs": jobs})
    requests, errors = read_requests(requests_file)
    requests = with_fetch_urls(requests, urls)
    executor: Executor
    if executor_name == "local":
        require_sandbox(config.sandbox)  # a machine that cannot isolate runs scores nothing
        executor = LocalExecutor(scorer_config.worker_count(), config.sandbox)
    else:  # each node checks its own sandbox before any work is sent
        executor = make_executor(
            "ray", scorer_config, config.sandbox, address=ray_address, jobs=jobs
        )
    printer = _Printer(as_json)
    for result in errors:
        printer.emit(result)
    total = len(requests) + len(errors)
    try:
        with executor, progress("scoring", total=total) as bar:
            bar.advance(len(errors))
            runs = _RunCounter(bar)

            def on_result(result: BatchResult) -> None:
                printer.emit(result)
                bar.advance(note=runs.text())

            score_batch(requests, scorer_config, executor, on_result=on_result, on_unit=runs.done)
    except KeyboardInterrupt:
        click.echo(
            f"patchwarden: interrupted; {printer.summary(total)}; run again to resume", err=True
        )
        sys.exit(EXIT_INTERRUPTED)
    click.echo(f"patchwarden: score-batch: {printer.summary(total)}", err=True)
    if printer.crashes:
        sys.exit(EXIT_INTERNAL)


def _repo_and_url(option: str) -> tuple[Path, str]:
    repo, sep, url = option.partition("=")
    if not (sep and repo and url) or url.startswith("-") or any(c.isspace() for c in url):
        raise ConfigError(
            f"expected REPO=URL (a URL of one word, not starting with '-'), got {option!r}",
            where="--fetch-url",
        )
    return Path(repo), url


class _Printer:
    """Result lines on stdout, one write each, from whichever thread finished."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.counts = {"scored": 0, "resumed": 0, "errors": 0}
        self.crashes = 0
        self._lock = threading.Lock()

    def emit(self, result: BatchResult) -> None:
        if result.crash is not None:
            where = write_traceback(result.crash)
            result = BatchResult(
                result.line, result.id, error=f"{result.error}; traceback in {where}"
            )
            self.crashes += 1
        line = json.dumps(result.to_json()) if self.as_json else _text(result)
        with self._lock:
            kind = "errors" if result.error else "resumed" if result.resumed else "scored"
            self.counts[kind] += 1
            click.echo(line)
            sys.stdout.flush()

    def summary(self, total: int) -> str:
        done = sum(self.counts.values())
        parts = ", ".join(f"{n} {kind}" for kind, n in self.counts.items())
        return f"{done} of {total} requests: {parts}"


def _text(result: BatchResult) -> str:
    who = result.id if result.id is not None else f"(line {result.line})"
    if result.verdict is None:
        return f"{who}  error  {result.error}"
    resumed = "  (resumed)" if result.resumed else ""
    return f"{who}  {result.verdict.decision}  {result.verdict.verdict_id}{resumed}"


class _RunCounter:
    """Sandboxed runs finished so far, and the last one, for the progress line."""

    def __init__(self, bar: Bar) -> None:
        self._count = 0
        self._lock = threading.Lock()
        self._bar = bar

    def done(self, unit: RunUnit) -> None:
        with self._lock:
            self._count += 1
        self._bar.note(self.text(f"{unit.label}: {unit.tree_name} seed {unit.seed}"))

    def text(self, last: str = "") -> str:
        with self._lock:
            count = self._count
        tail = f" · {last}" if last else ""
        return f"{count} runs{tail}"
