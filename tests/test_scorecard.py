"""The ``suspicious`` and ``spec_review`` scorecard checks, on real git commits.

Each patch is a real commit on top of a shared base; the checks get what
``score`` gives them (the patch's changed non-test Python files, read from
git) without running the contract, which ``tests/test_verdicts_cli.py``
does end to end.
"""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from patchwarden.scorer import (
    Contract,
    GateResult,
    Property,
    PropertyResult,
    RunRow,
    SideCounts,
    decide,
    review_note,
)
from patchwarden.scorer._score import _changed_sources, _changes
from patchwarden.scorer.checks import (
    Check,
    check_lines,
    check_spec_review,
    check_suspicious,
    check_test_tampering,
    differential_check,
)
from patchwarden.scorer.checks._spec_review import boundary_changes
from tests._git_repos import commit, init_repo

SEEDS = [11, 29, 47]
PROTECTED = ["tests/**", "**/conftest.py", "conftest.py"]
CONTRACT_PATHS = ["contract/differential-contract.yaml", "tests/properties", ".freeze"]
PRICING = "pkg/pricing.py"
FIXTURE = "tests/fixtures/prices.json"
BASE_PRICING = '''\
"""Prices with a bulk discount."""

import sys
from decimal import Decimal

LIMIT = 10
FACTOR = 0.95


class Money:
    def __init__(self, cents):
        self.cents = cents

    def __eq__(self, other):
        return isinstance(other, Money) and self.cents == other.cents


def bulk(qty, price):
    if qty >= LIMIT:
        return round(price * qty * FACTOR, 2)
    return price * qty


def who_called():
    return sys._getframe(1).f_code.co_name
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> git.Repo:
    repo = init_repo(tmp_path_factory.mktemp("scorecard") / "repo")
    commit(
        repo,
        {
            PRICING: BASE_PRICING,
            "pkg/__init__.py": "",
            "tests/test_pricing.py": "def test_bulk():\n    pass\n",
            FIXTURE: '{"A": "1.00"}\n',
        },
        "base",
    )
    repo.create_tag("base")
    return repo


def _patch(repo: git.Repo, files: dict[str, str | None]) -> tuple[list[object], list[str]]:
    """Commit ``files`` on top of base; return what score hands the checks."""
    repo.git.checkout("--quiet", "--force", "--detach", "base")
    patch = commit(repo, files, "patch")
    base = repo.commit("base").hexsha
    changes = _changes(repo, base, patch)
    sources = _changed_sources(repo, base, patch, changes, CONTRACT_PATHS, PROTECTED)
    return sources, [c.path for c in changes if c.path == FIXTURE]  # type: ignore[return-value]


def _suspicious(repo: git.Repo, files: dict[str, str | None]) -> Check:
    sources, _ = _patch(repo, files)
    return check_suspicious(sources, SEEDS)  # type: ignore[arg-type]


def _gate(cleared: bool) -> GateResult:
    """A real gate result: one property, failing on the parent (or not), passing on the patch."""
    contract = Contract(seeds=[11, 29], properties=[Property(id="prop.bulk", test="t.py::t")])
    parent = [
        RunRow(prop="prop.bulk", seed=11, status="fail" if cleared else "pass", witness="w"),
        RunRow(prop="prop.bulk", seed=29, status="pass"),
    ]
    patch = [RunRow(prop="prop.bulk", seed=s, status="pass") for s in (11, 29)]
    return decide(contract, parent, patch)


def _spec_review(repo: git.Repo, files: dict[str, str | None], *, cleared: bool = True) -> Check:
    sources, fixtures = _patch(repo, files)
    return check_spec_review(_gate(cleared), sources, fixtures)  # type: ignore[arg-type]


START = BASE_PRICING.count("\n") + 3
"""The line an appended snippet starts on."""


def _appended(code: str) -> dict[str, str | None]:
    return {PRICING: BASE_PRICING + "\n\n" + code + "\n"}


# -- suspicious -----------------------------------------------------------------------------

TRIPS = {
    "imports _pytest": ("import _pytest.runner", f"pkg/pricing.py:{START}: imports _pytest.runner"),
    "report objects": (
        "from _pytest.reports import TestReport\nREPORT = TestReport",
        f"pkg/pricing.py:{START}: imports _pytest.reports.TestReport",
    ),
    "hypothesis internals": (
        "import hypothesis.internal.conjecture.engine as engine",
        f"pkg/pricing.py:{START}: imports hypothesis.internal.conjecture.engine",
    ),
    "pluggy": ("import pluggy", f"pkg/pricing.py:{START}: imports pluggy"),
    "pytest private": (
        "import pytest\nSTASH = pytest._stash_key",
        f"pkg/pricing.py:{START + 1}: reaches into pytest._stash_key",
    ),
    "os._exit": (
        "import os\n\ndef done():\n    os._exit(0)",
        f"pkg/pricing.py:{START + 3}: calls os._exit",
    ),
    "sys.exit at import": ("sys.exit(0)", f"pkg/pricing.py:{START}: calls sys.exit at import time"),
    "builtins patching": (
        "import builtins\nbuiltins.round = lambda x, n=0: x",
        f"pkg/pricing.py:{START + 1}: assigns into builtins",
    ),
    "frame of callers": (
        "import inspect\n\ndef peek():\n    return inspect.currentframe().f_back.f_locals",
        f"pkg/pricing.py:{START + 3}: calls inspect.currentframe",
    ),
    "inspect.stack": (
        "import inspect\n\ndef peek():\n    return inspect.stack()[1]",
        f"pkg/pricing.py:{START + 3}: calls inspect.stack",
    ),
    "PYTEST_CURRENT_TEST": (
        "import os\nUNDER_TEST = bool(os.environ.get('PYTEST_CURRENT_TEST'))",
        f"pkg/pricing.py:{START + 1}: uses the string 'PYTEST_CURRENT_TEST'",
    ),
    "machinery loaded?": (
        "UNDER_TEST = 'pytest' in sys.modules",
        f"pkg/pricing.py:{START}: asks whether pytest is loaded",
    ),
    "contract seed": (
        "def special(qty):\n    return qty in (29, 30)",
        f"pkg/pricing.py:{START + 1}: compares with the contract seed 29",
    ),
    "__eq__ always True": (
        "class Anything:\n    def __eq__(self, other):\n        return True",
        f"pkg/pricing.py:{START + 1}: __eq__ always returns True",
    ),
    "__eq__ ignores other": (
        "class Same:\n    def __eq__(self, other):\n        return self is self",
        f"pkg/pricing.py:{START + 1}: __eq__ never reads the object it compares",
    ),
    "hypothesis profile": (
        "from hypothesis import settings\nsettings.load_profile('fast')",
        f"pkg/pricing.py:{START + 1}: calls hypothesis.settings.load_profile",
    ),
    # Names built from pieces are folded first.
    "os._exit from pieces": (
        "def bye():\n    getattr(__import__('o' + 's'), '_' + 'exit')(0)",
        f"pkg/pricing.py:{START + 1}: reaches os._exit",
    ),
    "os._exit through a bound name and an f-string": (
        "import os\nU = '_'\nNAME = f'{U}ex' + 'it'\n\ndef bye():\n    getattr(os, NAME)(0)",
        f"pkg/pricing.py:{START + 5}: reaches os._exit",
    ),
    "os._exit from os's namespace": (
        "import os\n\ndef bye():\n    vars(os)['tixe_'[::-1]](0)",
        f"pkg/pricing.py:{START + 3}: reaches os._exit",
    ),
    "from os import _exit": ("from os import _exit", f"pkg/pricing.py:{START}: reaches os._exit"),
    "the runner's module": (
        "import sys\nRUNNER = sys.modules['__' + 'main__']",
        f"pkg/pricing.py:{START + 1}: reaches into __main__ (the scorer's runner)",
    ),
    "the runner's globals": (
        "import sys\nTARGETS = sys.modules.get('__main__').TARGETS",
        f"pkg/pricing.py:{START + 1}: reaches into __main__.TARGETS (the scorer's runner)",
    ),
    "the runner's argv": (
        "import sys\nTARGETS = sys.argv[sys.argv.index('--tar' + 'gets') + 1]",
        f"pkg/pricing.py:{START + 1}: uses the runner's '--targets'",
    ),
    "/proc/self from pieces": (
        "import os\nFDS = os.listdir('/proc/' + chr(115) + 'elf/fd')",
        f"pkg/pricing.py:{START + 1}: uses the path '/proc/self/fd' (the process's own /proc)",
    ),
    "pytest internals by a built name": (
        "import importlib\nRUN = importlib.import_module('_py' + 'test.runner')",
        f"pkg/pricing.py:{START + 1}: imports _pytest.runner by a built name",
    ),
}


@pytest.mark.parametrize("case", list(TRIPS))
def test_suspicious_trips(repo: git.Repo, case: str) -> None:
    code, evidence = TRIPS[case]
    check = _suspicious(repo, _appended(code))
    assert check.outcome == "review"
    assert evidence in check.evidence


def test_suspicious_in_a_new_module_too(repo: git.Repo) -> None:
    check = _suspicious(repo, {"pkg/hook.py": "import os\n\ndef bye():\n    os._exit(3)\n"})
    assert (check.outcome, check.evidence) == ("review", ["pkg/hook.py:4: calls os._exit"])


HONEST = {
    "a real fix": BASE_PRICING.replace(
        "return round(price * qty * FACTOR, 2)",
        "return (Decimal(price) * qty * Decimal('0.95')).quantize(Decimal('0.01'))",
    ),
    "a script guard": BASE_PRICING + "\n\nif __name__ == '__main__':\n    sys.exit(0)\n",
    "an honest __eq__": BASE_PRICING.replace(
        "return isinstance(other, Money) and self.cents == other.cents",
        "return isinstance(other, Money) and (self.cents,) == (other.cents,)",
    ),
    "a docstring naming PYTEST_CURRENT_TEST": BASE_PRICING.replace(
        '"""Prices with a bulk discount."""',
        '"""Prices with a bulk discount; never reads PYTEST_CURRENT_TEST."""',
    ),
    "comparisons with ordinary numbers": BASE_PRICING + "\n\ndef small(q):\n    return q < 12\n",
    # The base already inspects its caller's frame: not the patch's doing.
    "pre-existing findings only": BASE_PRICING.replace("LIMIT = 10", "LIMIT = 10  # units"),
    "strings built for ordinary reasons": BASE_PRICING
    + "\n\nimport json, os\nNAME = 'dum' + 'ps'\nDUMP = getattr(json, NAME)\n"
    "PATH = os.path.join('data', 'prices' + '.json')\nLABEL = f\"{NAME}-{PATH}\"\n"
    "if __name__ == '__main__':\n    print(LABEL)\n",
}


@pytest.mark.parametrize("case", list(HONEST))
def test_suspicious_leaves_honest_patches_alone(repo: git.Repo, case: str) -> None:
    check = _suspicious(repo, {PRICING: HONEST[case]})
    assert (check.outcome, check.evidence) == ("pass", [])


def test_test_files_are_not_product_code(repo: git.Repo) -> None:
    """Tests are restored from the parent before the runs; test_tampering reports them."""
    check = _suspicious(repo, {"tests/test_pricing.py": "import _pytest\nimport os\nos._exit(0)\n"})
    assert (check.outcome, check.evidence) == ("pass", [])


def test_a_file_that_does_not_parse_needs_a_human(repo: git.Repo) -> None:
    check = _suspicious(repo, _appended("def broken(:"))
    assert check.outcome == "review"
    assert check.evidence == [f"pkg/pricing.py:{START}: cannot be parsed (SyntaxError)"]


# -- spec_review ----------------------------------------------------------------------------


def test_spec_review_trips_on_a_changed_comparison_operator(repo: git.Repo) -> None:
    check = _spec_review(repo, {PRICING: BASE_PRICING.replace("qty >= LIMIT", "qty > LIMIT")})
    assert check.outcome == "review"
    assert check.evidence == [
        "pkg/pricing.py: bulk: comparison operators: removed GtE; added Gt",
        "parent_fail_cleared: prop.bulk",
    ]


def test_spec_review_trips_on_a_changed_boundary_constant(repo: git.Repo) -> None:
    check = _spec_review(repo, {PRICING: BASE_PRICING.replace("LIMIT = 10", "LIMIT = 11")})
    assert check.outcome == "review"
    assert check.evidence[0] == "pkg/pricing.py: <module>: numeric constants: removed 10; added 11"


def test_spec_review_trips_on_a_changed_fixture(repo: git.Repo) -> None:
    check = _spec_review(repo, {FIXTURE: '{"A": "0.99"}\n'})
    assert (check.outcome, check.evidence) == (
        "review",
        [f"fixture changed: {FIXTURE}", "parent_fail_cleared: prop.bulk"],
    )


def test_spec_review_passes_code_moved_into_a_new_function(repo: git.Repo) -> None:
    moved = (
        BASE_PRICING.replace(
            "    if qty >= LIMIT:\n        return round(price * qty * FACTOR, 2)\n",
            "    if is_bulk(qty):\n        return round(price * qty * FACTOR, 2)\n",
        )
        + "\n\ndef is_bulk(qty):\n    return qty >= LIMIT\n"
    )
    check = _spec_review(repo, {PRICING: moved})
    assert (check.outcome, check.evidence) == ("pass", [])


def test_spec_review_sees_the_same_number_written_as_a_decimal(repo: git.Repo) -> None:
    check = _spec_review(
        repo, {PRICING: BASE_PRICING.replace("FACTOR = 0.95", 'FACTOR = Decimal("0.95")')}
    )
    assert (check.outcome, check.evidence) == ("pass", [])


def test_spec_review_only_reviews_a_cleared_parent_failure(repo: git.Repo) -> None:
    """The same boundary change without parent_fail_cleared is listed but passes."""
    check = _spec_review(
        repo, {PRICING: BASE_PRICING.replace("qty >= LIMIT", "qty > LIMIT")}, cleared=False
    )
    assert check.outcome == "pass"
    assert check.evidence == ["pkg/pricing.py: bulk: comparison operators: removed GtE; added Gt"]


def test_the_examples_fix_moves_no_boundary(example_repo: Path) -> None:
    """The fix turns ``BULK_FACTOR = 0.95`` into ``Decimal("0.95")`` (the same number as
    written: not a change) and drops ``round(..., 2)`` from ``bulk_price``. That ``2`` is
    computation, not a threshold: changing it changes every bulk price, which the cleared
    property sees on every sample, so it is no boundary a property could miss
    (docs/design/spec-review.md). The accept carries no spec_review finding."""
    repo = git.Repo(example_repo)
    base, fix = repo.commit("base").hexsha, repo.commit("patch-fix").hexsha
    changes = _changes(repo, base, fix)
    sources = _changed_sources(repo, base, fix, changes, CONTRACT_PATHS, PROTECTED)
    contract = Contract(
        seeds=[11, 29], properties=[Property(id="prop.bulk_rounding", test="t.py::t")]
    )
    gate = decide(
        contract,
        [
            RunRow(prop="prop.bulk_rounding", seed=11, status="fail", witness="w"),
            RunRow(prop="prop.bulk_rounding", seed=29, status="pass"),
        ],
        [RunRow(prop="prop.bulk_rounding", seed=s, status="pass") for s in (11, 29)],
    )
    check = check_spec_review(gate, sources, [])
    assert (check.outcome, check.evidence) == ("pass", [])
    # Moving the bulk threshold, by contrast, is a finding.
    moved = after_fix = repo.git.show(f"{fix}:orders/total.py")
    moved = after_fix.replace("if qty >= BULK_MIN_QTY", "if qty > BULK_MIN_QTY")
    assert [c.evidence() for c in boundary_changes("orders/total.py", after_fix, moved)] == [
        "orders/total.py: bulk_price: comparison operators: removed GtE; added Gt"
    ]
    # The refactor moves code into new helpers: no boundary moved.
    total = "orders/total.py"
    before = repo.git.show(f"{base}:{total}")
    after = repo.git.show(f"{repo.commit('patch-refactor').hexsha}:{total}")
    assert boundary_changes(total, before, after) == []


def test_check_lines_are_one_per_check() -> None:
    checks = [
        Check(check="contract_tampered", outcome="pass"),
        Check(check="suspicious", outcome="review", evidence=["a.py:1: calls os._exit", "b"]),
        Check(check="spec_review", outcome="review", evidence=["x\ny"]),
    ]
    assert check_lines(checks).splitlines() == [
        "check contract_tampered  pass",
        "check suspicious         review  a.py:1: calls os._exit (+1 more)",
        "check spec_review        review  x\\ny",
    ]


def _gate_of(results: list[tuple[str, str, str]], decision: str) -> GateResult:
    return GateResult(
        decision=decision,  # type: ignore[arg-type]
        contract_hash="sha256:c",
        results=[PropertyResult(prop=p, decision=d, reason=r) for p, d, r in results],  # type: ignore[arg-type]
        counts={"parent": SideCounts(lines=0), "patch": SideCounts(lines=0)},
    )


def test_the_differential_line_names_the_row_that_decided() -> None:
    """The trial that found it: 58 passing guards and the target before one regressing
    guard; the line named the first property, a row that decided nothing."""
    rows = [("prop.reversed_range", "accept", "parent_fail_cleared")]
    rows += [(f"guard.g{i:02}", "accept", "both_pass") for i in range(57)]
    rows.insert(41, ("guard.asserts_the_bug", "reject", "regression"))
    gate = _gate_of(rows, "reject")
    check = differential_check(gate, {})
    assert check.outcome == "reject"
    assert check.evidence[:3] == [
        "guard.asserts_the_bug: regression",
        "prop.reversed_range: parent_fail_cleared",
        "guard.g00: both_pass",
    ]
    assert len(check.evidence) == 59
    assert check_lines([check]) == (
        "check differential  reject  guard.asserts_the_bug: regression (+58 more)\n"
    )
    note = review_note(gate, decided_by=["regression"]).splitlines()
    assert note[1] == "decision: reject (decided by regression)"
    assert note[2].startswith(
        "properties: guard.asserts_the_bug=regression, prop.reversed_range=parent_fail_cleared, "
    )


def test_a_hidden_group_that_decided_leads_the_differential_evidence() -> None:
    gate = _gate_of([("prop.a", "accept", "parent_fail_cleared")], "accept")
    extra = _gate_of([("prop.a", "accept", "parent_fail_cleared")], "accept")
    held = _gate_of(
        [("held.b", "accept", "both_pass"), ("held.c", "reject", "uniform_fail")], "reject"
    )
    check = differential_check(gate, {"extra_seeds": extra, "held_out": held})
    assert (check.outcome, check.evidence) == (
        "reject",
        [
            "held_out: held.c: uniform_fail",
            "prop.a: parent_fail_cleared",
            "extra_seeds: prop.a: parent_fail_cleared",
            "held_out: held.b: both_pass",
        ],
    )
    proposal = _gate_of(
        [("prop.a", "accept", "both_pass"), ("prop.b", "propose_freeze", "s")], "propose_freeze"
    )
    assert differential_check(proposal, {}).evidence == ["prop.b: s", "prop.a: both_pass"]


def test_the_scorer_facade_matches_its_modules() -> None:
    from patchwarden import scorer

    assert scorer.__all__ == sorted(scorer.__all__, key=lambda n: (not n.isupper(), n))
    for name in scorer.__all__:
        assert hasattr(scorer, name), name


PYPROJECT_BASE = '[project]\nname = "x"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'


@pytest.mark.parametrize(
    ("patch_text", "outcome", "evidence"),
    [
        (PYPROJECT_BASE, "pass", []),
        (PYPROJECT_BASE.replace('name = "x"', 'name = "y"'), "pass", []),
        (
            PYPROJECT_BASE + 'addopts = "-p no:hypothesis"\n',
            "review",
            ["M pyproject.toml [tool.pytest]"],
        ),
        (
            PYPROJECT_BASE.replace("[tool.pytest.ini_options]", "[tool.pytest_x]"),
            "review",
            ["M pyproject.toml [tool.pytest]"],
        ),
        ("[[[ not toml", "review", ["M pyproject.toml [tool.pytest]"]),
    ],
)
def test_pyproject_pytest_section_is_protected(
    patch_text: str, outcome: str, evidence: list[str]
) -> None:
    check = check_test_tampering([], ["tests/**"], "review", pyproject=(PYPROJECT_BASE, patch_text))
    assert (check.outcome, check.evidence) == (outcome, evidence)
