"""Conformance on a few published projects (docs/design/isolated-oracle.md, "Conformance"):
the whole own test suite of each, run by its own pytest and by the scorer's runner
in-process and isolated, as bench/conformance.py does on the whole corpus.

The projects here need no pytest plugin beyond Hypothesis and keep their tests outside the
package. Each test agrees with the project's own pytest, falls back in-process with its
named reason, or is one of the disagreements listed here with its cause (overrides'
decorators read their caller's frames, which the isolated oracle's product process does not
have: a known limit, docs/design/isolated-oracle.md).
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

SUBCLASSES = "the property subclasses a product class"


def _at_import(module: str, line: int, why: str = SUBCLASSES) -> str:
    """The reason a test module that cannot import isolated (it subclasses a product class
    at its top level) falls back: named with the module and the line."""
    return (
        f"the test module {module} does not import isolated: IsolationRefused: "
        f"{why} ({module}:{line})"
    )


def _counts(tests: int, agree: int, reasons: dict[str, int], disagree: int = 0) -> dict[str, Any]:
    fallback = sum(reasons.values())
    assert agree + fallback + disagree == tests
    return {
        "tests": tests,
        "agree": agree,
        "fallback": fallback,
        "fallback_reasons": reasons,
        "disagree": disagree,
        "incomplete": 0,
    }


EXPECTED: dict[str, dict[str, dict[str, Any]]] = {
    # Every test module subclasses a product class at import (addict's Dict, overrides'
    # EnforceOverrides): each test falls back, with its reason, and nothing disagrees.
    "addict": {
        "isolated": _counts(128, 0, {_at_import("test_addict.py", 9): 128}),
        "in-process": _counts(128, 128, {}),
    },
    "overrides": {
        "isolated": _counts(
            67,
            0,
            {
                _at_import("tests/test_enforce__py38.py", 8): 27,
                _at_import("tests/test_named_and_positional__py38.py", 7): 11,
                # @final now marks the test's method (a new attribute of the function's
                # own); the module then stops at the class it hands the product.
                _at_import(
                    "tests/test_final.py",
                    15,
                    "cannot send class SuperClass.SomeFinalClass of the oracle to the product",
                ): 8,
                "cannot send class Typed3 of the oracle to the product": 1,
            },
            disagree=20,
        ),
        "in-process": _counts(67, 67, {}),
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
    "iso8601": {"passed": 47},
}
"""Per project: the project's own pytest's outcomes."""


def _not_run(node: str) -> tuple[str, str]:
    return node, f"fail (NotRun|{node}) [isolated]"


def _key_error(node: str, line: int) -> tuple[str, str]:
    return node, f"fail (KeyError|{node.split('::')[0]}:{line}) [isolated]"


DISAGREE: dict[str, list[tuple[str, str]]] = {
    # overrides' @override and @overrides walk up their caller's frames to the class body
    # being defined (sys._getframe); in the product process the caller is the product
    # server, so they raise KeyError: in a test (6) or while a test module's classes are
    # defined, which then does not import (14, NotRun). An exception product code raises
    # never selects the in-process fallback (a product could choose it so), so these stay
    # disagreements until frames cross (docs/design/isolated-oracle.md, "What remains").
    # They were hidden until now: a refusal in another module's top sent every test of
    # the run in-process.
    "overrides": [
        _key_error("tests/test_decorator_params.py::test_my_func", 27),
        _key_error("tests/test_new_union__py3_10.py::test_should_allow_reducing_type", 16),
        _key_error("tests/test_new_union__py3_10.py::test_should_not_allow_increasing_type", 28),
        _not_run(
            "tests/test_overrides.py::OverridesTests::test_assertion_error_is_thrown_when_method_not_in_superclass"
        ),
        _not_run("tests/test_overrides.py::OverridesTests::test_can_override_builtin"),
        _not_run("tests/test_overrides.py::OverridesTests::test_override_inner_class"),
        _not_run(
            "tests/test_overrides.py::OverridesTests::test_overrides_builtin_method_correct_signature"
        ),
        _not_run(
            "tests/test_overrides.py::OverridesTests::test_overrides_builtin_method_incorrect_signature"
        ),
        _not_run("tests/test_overrides.py::OverridesTests::test_overrides_check_at_runtime"),
        _not_run(
            "tests/test_overrides.py::OverridesTests::test_overrides_does_not_override_method_doc"
        ),
        _not_run(
            "tests/test_overrides.py::OverridesTests::test_overrides_method_from_generic_subclass"
        ),
        _not_run(
            "tests/test_overrides.py::OverridesTests::test_overrides_passes_for_same_package_superclass"
        ),
        _not_run(
            "tests/test_overrides.py::OverridesTests::test_overrides_passes_for_superclass_in_another_package"
        ),
        _not_run("tests/test_overrides.py::OverridesTests::test_static_method"),
        _not_run("tests/test_signatures.py::test_typed_subclass_in_same_package_is_an_error"),
        _not_run("tests/test_signatures.py::test_that_this_file_is_ok"),
        _not_run("tests/test_signatures.py::test_self_typed_overrides"),
        _key_error("tests/test_special_cases.py::test_future_is_fine", 23),
        _key_error("tests/test_special_cases.py::test_callable_is_fine", 30),
        _key_error(
            "tests/test_special_cases.py::test_overriding_untyped_from_other_package_is_fine", 39
        ),
    ],
}
"""Per project: the tests whose isolated outcome differs from the project's own pytest, with
that outcome (exact: a new disagreement, or one that goes away, fails the test)."""


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
    assert disagreeing == [(n, "passed", o) for n, o in DISAGREE.get(name, [])]
    for mode in ("isolated", "in-process"):
        assert result.counts(mode) == EXPECTED[name][mode], mode
