"""The product process of an isolated scorer run (docs/design/isolated-oracle.md), host side.

One sandboxed process per (tree, seed) run, started next to the oracle process with the same
bubblewrap profile and limits (no idle limit: it is silent while it waits for calls), its own
deadline, and nothing of the run's secrets: no result channel, no secret, no canary, the
held-out tests and the canaries not mounted. It runs the program ``PRODUCT`` of
sandbox/_inside on stdin.

It sees its tree as the agent's ``run_tests`` sees a worktree: writable, the contract paths
mounted read-only over it (the visible contract, which the agent reads anyway). The
writable tree is a copy of the run's own, made for this process and removed after it, so
what product code writes there reaches neither the oracle's tree nor another run.

Three pipes join it to the oracle: requests (oracle to product), replies (product to
oracle) and a status pipe on which this side writes, once the product process is gone, how
it ended (exit status, killed at the wall time, output past the limit), so the oracle fails
the call it was waiting on with a witness that names it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from ._argv import LaunchSpec
from ._config import Limits, SandboxConfig
from ._entropy import RunEntropy
from ._errors import SandboxError
from ._inside import PRODUCT, program
from ._launch import launch
from ._layout import ImportLayout
from ._runtime import python_runtime
from ._supervise import ProcessResult
from ._trees import run_copy

PRODUCT_SOURCE = program(PRODUCT)
PROBES_MAX_BYTES = 1 << 20  # far above what PROBES_WRITTEN lines take; the rest is dropped


def runner_env(hash_seed: int) -> dict[str, str]:
    """The environment of every runner process: the agent's, the oracle's, the product's.
    A scored run's ``hash_seed`` is its ``RunEntropy``'s, never a contract seed
    (sandbox/_entropy.py)."""
    return {
        "PYTHONHASHSEED": str(hash_seed),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "HYPOTHESIS_STORAGE_DIRECTORY": "/tmp/.hypothesis",
    }


class ProductProcess:
    """Start, watch and stop the product process of one run."""

    def __init__(self, contract_paths: Sequence[str], call_timeout_s: float) -> None:
        self.contract_paths = tuple(contract_paths)
        self.call_timeout_s = call_timeout_s
        self.result: ProcessResult | None = None
        self._cancel = threading.Event()
        self._flooded = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: SandboxError | None = None
        """The tree could not be copied for it (raised by ``stop``: no verdict on that)."""
        self.probes: list[str] = []
        """The probes product code made (``KIND TARGET from FILE:LINE (FUNCTION)``, written
        by the product process as each was made; docs/design/isolated-oracle.md, "Probes")."""
        self._probe_reader: threading.Thread | None = None

    def start(
        self,
        tree: Path,
        entropy: RunEntropy,
        config: SandboxConfig,
        limits: Limits,
        layout: ImportLayout,
    ) -> tuple[int, int, int]:
        """Launch it (in a thread); returns the oracle's ends: requests, replies, status.

        It learns nothing of the contract's seed: its hash seed and ``random`` seed are the
        run's ``entropy`` (sandbox/_entropy.py).

        The thread copies the tree first, while the oracle process starts (it asks for
        nothing before it collects), then launches the product process on the copy."""
        req_read, req_write = os.pipe()
        rep_read, rep_write = os.pipe()
        status_read, status_write = os.pipe()
        probe_read, probe_write = os.pipe()
        for fd in (req_read, rep_write, req_write, rep_read, status_read):
            os.set_inheritable(fd, True)
        os.set_inheritable(probe_write, True)
        self._probe_reader = threading.Thread(
            target=self._read_probes, args=(probe_read,), name="patchwarden-probes", daemon=True
        )
        self._probe_reader.start()
        quiet = limits.model_copy(update={"idle_time_s": limits.wall_time_s})
        budget = limits.output_bytes

        def count(chunk: bytes, seen: list[int] = [0]) -> None:  # noqa: B006
            seen[0] += len(chunk)
            if seen[0] >= budget:
                self._flooded.set()
                self._cancel.set()

        spec = LaunchSpec(
            argv=[
                python_runtime(config).executable,
                "-s",
                "-P",
                "-",
                "--req-fd",
                str(req_read),
                "--rep-fd",
                str(rep_write),
                "--probe-fd",
                str(probe_write),
                "--seed",
                str(entropy.random_seed),
                "--layout",
                json.dumps(layout.to_json()),
                "--call-timeout",  # how long it waits for the oracle to answer a callback
                f"{self.call_timeout_s:g}",
            ],
            tree=tree,  # replaced by the copy's path once it is made
            tree_writable=True,
            contract_paths=self.contract_paths,
            env=runner_env(entropy.hash_seed),
            pass_fds=(req_read, rep_write, probe_write),
            limits=quiet,
            stdin=PRODUCT_SOURCE.encode(),
        )

        def run() -> None:
            try:
                with run_copy(tree, config) as copy:
                    if not self._cancel.is_set():
                        launch_spec = dataclasses.replace(spec, tree=copy)
                        self.result = launch(
                            launch_spec, config, cancel=self._cancel, on_output=count
                        )
            except SandboxError as exc:
                self.error = exc
            finally:
                # Gone: the oracle's writes fail and its reads end; then say how it ended.
                os.close(req_read)
                os.close(rep_write)
                os.close(probe_write)
                status = self._status()
                try:
                    os.write(status_write, json.dumps(status).encode())
                except OSError:
                    pass  # the oracle is gone already: nobody waits for the answer
                finally:
                    os.close(status_write)

        self._thread = threading.Thread(target=run, name="patchwarden-product", daemon=True)
        self._thread.start()
        return req_write, rep_read, status_read

    def _read_probes(self, fd: int) -> None:
        """Collect the probe lines until every writer is gone (bounded: the product process
        writes each distinct probe once, at most ``PROBES_WRITTEN`` of them)."""
        buffered = b""
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(1 << 16):
                if len(buffered) < PROBES_MAX_BYTES:
                    buffered += chunk
        lines = buffered[:PROBES_MAX_BYTES].decode("utf-8", "replace").split("\n")
        self.probes = [line for line in lines[:-1] if line]

    def _status(self) -> dict[str, object]:
        result = self.result
        if result is None:
            return {"exit": None, "error": str(self.error) if self.error is not None else None}
        return {
            "exit": result.exit_code,
            "timed_out": result.timed_out,
            "flooded": self._flooded.is_set(),
            "cancelled": result.cancelled and not self._flooded.is_set(),
        }

    def stop(self) -> None:
        """The oracle process is gone: end the product process and wait for it. Raises the
        ``SandboxError`` of a tree that could not be copied for it."""
        self._cancel.set()
        if self._thread is not None:
            self._thread.join()
        if self._probe_reader is not None:
            self._probe_reader.join()
        if self.error is not None:
            raise self.error
