"""``python -m patchwarden.scorer``: the scorer process, started by the MCP server.

It imports the scorer and the sandbox only, never the server: the trusted process does
not load the agent-facing code (tests/test_architecture.py checks the real child).
Its settings arrive on the channel (the ``Start`` line), not from argv or files.
"""

from __future__ import annotations

import sys

from ._process import serve_scorer

if __name__ == "__main__":
    sys.exit(serve_scorer())
