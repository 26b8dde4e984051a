"""The agent's test runs load Hypothesis only when a test imports it, and then only the
interpreter's copy with the runner's profile (sandbox/_inside/_boot.py, ``_hypothesis_on_demand``).

Real bubblewrap and real pytest processes, in one tree that also holds a planted
``hypothesis`` package: it must never be the one a test gets.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from patchwarden.sandbox import SandboxConfig, prepare_writable_tree, run_agent_tests

pytestmark = pytest.mark.bwrap

PLAIN = textwrap.dedent(
    """
    import sys

    def test_nothing_loaded_hypothesis():
        assert "hypothesis" not in sys.modules
    """
)

USES_HYPOTHESIS = textwrap.dedent(
    """
    import hypothesis
    from hypothesis import given, settings, strategies as st

    def test_the_interpreters_hypothesis():
        assert not hypothesis.__file__.startswith("/workspace"), hypothesis.__file__
        assert not getattr(hypothesis, "PLANTED", False)

    def test_the_runners_profile_is_loaded():
        assert settings._current_profile == "patchwarden"
        assert settings.default.database is None
        assert settings.default.deadline is None

    @given(st.integers())
    def test_a_property_runs(n):
        assert isinstance(n, int)
    """
)

PLANTED = "PLANTED = True\nraise SystemExit('the planted hypothesis ran')\n"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agent-loop")
    os.chmod(root, 0o755)
    (root / "tests").mkdir()
    (root / "tests" / "test_plain.py").write_text(PLAIN)
    (root / "tests" / "test_uses_hypothesis.py").write_text(USES_HYPOTHESIS)
    (root / "hypothesis").mkdir()
    (root / "hypothesis" / "__init__.py").write_text(PLANTED)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    prepare_writable_tree(root, SandboxConfig())
    return root


def _outcomes(tree: Path, *selection: str) -> dict[str, str]:
    run = run_agent_tests(tree, ["-p", "no:cacheprovider", *selection], 0, SandboxConfig())
    assert run.complete, run.process.stderr
    return {o.node_id.rsplit("::", 1)[1]: o.outcome for o in run.outcomes}


def test_a_run_that_needs_no_hypothesis_does_not_import_it(tree: Path) -> None:
    assert _outcomes(tree, "tests/test_plain.py") == {"test_nothing_loaded_hypothesis": "passed"}


def test_hypothesis_comes_from_the_interpreter_with_the_runners_profile(tree: Path) -> None:
    assert _outcomes(tree, "tests/test_uses_hypothesis.py") == {
        "test_the_interpreters_hypothesis": "passed",
        "test_the_runners_profile_is_loaded": "passed",
        "test_a_property_runs": "passed",
    }
