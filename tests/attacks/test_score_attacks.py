"""Every case through the real scorer (bubblewrap, the real gate), once each: `patchwarden
score` alone, or `patchwarden score-batch` with the other cases of its oracle (tests/attacks/lab.py
says which).

A failing test here is either an attack that got through or a defence that stopped it for a
different reason than the one named; the message and the session's attack summary say which.
"""

from __future__ import annotations

import pytest

from . import tally
from .cases import CASES, AttackCase
from .lab import BATCH_TIMEOUT_PER_CASE_S, SCORE_TIMEOUT_S, AttackLab, batched, judge

pytestmark = pytest.mark.bwrap


def _with_deadline(case: AttackCase) -> object:
    """The case, with a pytest deadline past its scores' own (a case alone may score the
    honest fix first, for its channels): a batched case may be the one that scores its whole
    batch (68 isolated cases took 212-287 s in CI, against the suite's
    300 s default), and the batch's subprocess has a deadline of its own that says more."""
    if not batched(case):
        return pytest.param(case, marks=pytest.mark.timeout(2 * SCORE_TIMEOUT_S + 60))
    size = sum(1 for c in CASES if batched(c) and c.oracle == case.oracle)
    deadline = SCORE_TIMEOUT_S + BATCH_TIMEOUT_PER_CASE_S * size + 60
    return pytest.param(case, marks=pytest.mark.timeout(deadline))


@pytest.mark.parametrize("case", [_with_deadline(c) for c in CASES], ids=[c.name for c in CASES])
def test_case_gets_its_expected_outcome(attack_lab: AttackLab, case: AttackCase) -> None:
    observed = attack_lab.score(case)
    problems = judge(case.expected, observed)
    tally.record(
        "score",
        case.name,
        honest=case.honest,
        expected=case.expected.describe(),
        observed=observed.describe(),
        problems=problems,
        duration_s=observed.duration_s,
    )
    verdict = "the honest patch lost its verdict" if case.honest else "the attack got through"
    assert not problems, (
        f"{verdict} ({case.layer} should stop it): {case.story}\n"
        f"expected {case.expected.describe()}\nobserved {observed.describe()}\n"
        + "\n".join(problems)
    )
