"""``python -m patchwarden``: the same command line as the ``patchwarden`` script."""

from __future__ import annotations

from patchwarden.server.cli import main

if __name__ == "__main__":
    main()
