"""Conformance on a few published projects (docs/design/isolated-oracle.md, "Conformance"):
the whole own test suite of each, run by its own pytest and by the scorer's runner
in-process and isolated, as bench/conformance.py does on the whole corpus.

The projects here need no pytest plugin beyond Hypothesis and keep their tests outside the
package; on them no test disagrees: each agrees with the project's own pytest or falls back
in-process with its named reason.
The figures are exact: a test that starts to disagree, falls back, or changes outcome in
the project's own run fails this. Real sdists (sha256-checked, cached), real env builds
(cached beside the sdists), bubblewrap and pytest.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from conformance import envs_dir_default, run_project  # noqa: E402
from conformance_corpus import BY_NAME  # noqa: E402

pytestmark = pytest.mark.bwrap

BUDGET_S = 240.0

RECHECKED = (
    "it fails isolated and passes in-process on the parent as on the patch (a limit of the "
    "isolated oracle, not the patch's answer)"
)


def _counts(tests: int, agree: int, reasons: dict[str, int]) -> dict[str, Any]:
    fallback = sum(reasons.values())
    assert agree + fallback == tests
    return {
        "tests": tests,
        "agree": agree,
        "fallback": fallback,
        "fallback_reasons": reasons,
        "disagree": 0,
        "incomplete": 0,
    }


EXPECTED: dict[str, dict[str, dict[str, Any]]] = {
    # Every test module subclasses a product class at import (addict's Dict, overrides'
    # EnforceOverrides): the class is made in the product (0 of 128 and 0 of 67 ran isolated
    # while it was refused). addict's two json tests hand a product dict subclass to json's C
    # encoder (a real dict there): they fail isolated and are judged in-process.
    "addict": {
        "isolated": _counts(128, 126, {RECHECKED: 2}),
        "in-process": _counts(128, 128, {}),
    },
    "overrides": {
        "isolated": _counts(
            67,
            19,
            {
                # Tests that walk frames to find the class being defined (overrides' own
                # @overrides, @final) fail isolated and pass in-process. test_final.py's 8
                # among them: its class now crosses as a stand-in (it stopped at "cannot send
                # class" before), and @final's frame walk is what fails.
                RECHECKED: 47,
                # A TypedDict class: not a plain class, still not sent.
                "cannot send class Typed3 of the oracle to the product": 1,
            },
        ),
        "in-process": _counts(67, 67, {}),
    },
    # Generators seen as generators (its streaming parser reads a generator of chunks);
    # a test that traces memory allocations falls back, named (the product's are not here).
    "xmltodict": {
        "isolated": _counts(
            119,
            118,
            {"the property traces memory allocations, which the product process does not share": 1},
        ),
        "in-process": _counts(119, 119, {}),
    },
    # Tests inside the package (glom/test), a snippet test module that runs doc examples in
    # copy.copy(glom.__dict__): 0 of 200 ran isolated before that copy was the test's own.
    # Its test that patches glom.core.PATH_STAR runs isolated (the patch made in the
    # product process serving that test alone), T.__star__ through its __getattr__, re.match
    # handed to Regex as the product's own, and the test classes it hands glom (Call(F),
    # register(...)) as stand-in classes there: 8 were "cannot send class", 4 now agree and
    # 4 fail isolated (glom's registry looks up type(target) exactly) and are rechecked.
    # test_pae_api's `err.path.__class__ is Path` holds: Path is a real class here.
    # One CLI test (face's CommandChecker swaps the oracle's sys.stdin) fails isolated since
    # a call reads pytest's refused stdin, as in run_tests, and is rechecked. An
    # UnregisteredTarget's repr names type(target).__name__ of the test's object(): the
    # proxy class bears its class's names now (test_types_bare agrees): 174 / 26.
    "glom": {
        "isolated": _counts(200, 174, {RECHECKED: 26}),
        "in-process": _counts(200, 200, {}),
    },
    # A datetime.timezone by value with its name; a zone stand-in that is a tzinfo.
    "iso8601": {
        "isolated": _counts(47, 47, {}),
        "in-process": _counts(47, 47, {}),
    },
}
"""Per project and scorer mode: the counts ``ProjectResult.counts`` gives (measured with
bench/conformance.py; docs/design/isolated-oracle.md, "Conformance")."""

OWN: dict[str, dict[str, int]] = {
    "addict": {"passed": 128},
    "overrides": {"passed": 67},
    "glom": {"passed": 199, "failed": 1},
    "iso8601": {"passed": 47},
    "xmltodict": {"passed": 119},
}
"""Per project: the project's own pytest's outcomes."""


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_scorer_judges_the_whole_suite_as_its_own_pytest(name: str, tmp_path: Path) -> None:
    result = run_project(BY_NAME[name], tmp_path, BUDGET_S, None, envs_dir_default())
    assert result.problems == []
    assert result.collection_errors == {}
    own: dict[str, int] = {}
    for test in result.tests:
        own[test.own] = own.get(test.own, 0) + 1
    assert own == OWN[name]
    disagreeing = [
        (t.node_id, t.own, t.isolated) for t in result.tests if t.isolated_class == "disagree"
    ]
    assert disagreeing == []
    for mode in ("isolated", "in-process"):
        assert result.counts(mode) == EXPECTED[name][mode], mode
