"""The runner program (sandbox/_inside, ``ORACLE``) and the constants it shares with the host side.

The program is read as text and run inside the sandbox, where it imports nothing of ours, so
it keeps its own copy of what both sides must agree on; these tests hold each copy equal to
the host side's.
"""

from __future__ import annotations

import ast

from patchwarden.sandbox import TEST_MACHINERY
from patchwarden.sandbox._inside import ORACLE, program
from patchwarden.sandbox._pytest_runner import SENTINEL
from patchwarden.scorer.checks._suspicious import RUNNER_STRINGS
from patchwarden.server.tools._run_tests import FAILURE_TEXT_CHARS

PROGRAM_TEXT = program(ORACLE)


def program_constant(name: str) -> object:
    """The literal the runner program assigns to the module-level ``name``."""
    tree = ast.parse(PROGRAM_TEXT, filename="<the runner program>")
    values = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [t.id for t in node.targets if isinstance(t, ast.Name)] == [name]
    ]
    assert len(values) == 1, f"the runner program assigns {name} {len(values)} times"
    return values[0]


def test_the_end_of_output_sentinel_is_the_one_the_host_reads() -> None:
    assert program_constant("SENTINEL") == SENTINEL == "__patchwarden_sentinel__"
    assert SENTINEL in RUNNER_STRINGS  # product code naming it is a suspicious finding


def test_the_machinery_imported_first_is_the_host_side_list() -> None:
    assert program_constant("MACHINERY") == TEST_MACHINERY


def test_each_failure_form_is_built_in_the_bound_the_tool_shows() -> None:
    # The runner fits each form in its bound (sandbox/_inside/_failures.py); a larger bound
    # there would leave the tool to cut blindly.
    assert program_constant("AGENT_TEXT_CHARS") == FAILURE_TEXT_CHARS == 2000
