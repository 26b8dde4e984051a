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
from .lab import AttackLab, judge

pytestmark = pytest.mark.bwrap


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
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
