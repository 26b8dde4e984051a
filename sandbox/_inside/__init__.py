"""The programs that run INSIDE the sandbox, kept as source by job.

None of these modules is imported by patchwarden: each program is the concatenation of its
parts' source, handed to ``python -s -P -`` on stdin, so nothing in the tree can shadow it
and it never imports patchwarden (docs/design/runner.md). The parts are separate files so
each can be read, and type-checked, on its own; a part sees the names the parts before it
define (its ``TYPE_CHECKING`` imports say which), exactly as one script would.

- ``ORACLE``: the trusted runner (bootstrap, the tamper and provenance checks, the agent's
  failure summaries, the pytest plugin, the session, the signer, the audit hook, the
  top-level start), and in isolated scorer runs the wire and the proxies of the product's
  modules;
- ``PRODUCT``: the product process of an isolated scorer run;
- ``RUN_PYTHON``: the agent's ``run_python`` (a snippet or a script of the tree).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
FUTURE = "from __future__ import annotations"

ORACLE = (
    "_paths", "_boot", "_guard", "_wire", "_proxy", "_failures", "_plugin", "_session", "_signer",
    "_audit", "_start",
)  # fmt: skip
"""The runner's parts in program order; ``_start`` runs it and must come last."""

PRODUCT = ("_paths", "_wire", "_seal", "_probes", "_product")
"""The product process of an isolated run (docs/design/isolated-oracle.md)."""

RUN_PYTHON = ("_paths", "_python")
"""The agent's snippets and scripts (sandbox/_python_runner.py); the host appends ``main(...)``."""


def program(parts: tuple[str, ...]) -> str:
    """One script of ``parts``: each part's source in order, the ``__future__`` import
    once at the top (it must be the script's first statement)."""
    chunks = [FUTURE + "\n"]
    for part in parts:
        text = (HERE / f"{part}.py").read_text(encoding="utf-8")
        lines = [line for line in text.split("\n") if line != FUTURE]
        chunks.append(f"# -- {part} " + "-" * (80 - len(part)) + "\n" + "\n".join(lines))
    return "\n".join(chunks)
