"""Where tests leave artefacts for people (screenshots): lines printed at the end of a run.

The key lives in its own module because test modules import ``tests.conftest`` as a
second copy of the one pytest loaded, and a stash key must be one object.
"""

from __future__ import annotations

import pytest

ARTEFACT_LINES = pytest.StashKey[list[str]]()
