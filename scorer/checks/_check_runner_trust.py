"""``runner_trust``: the contract's runner has no isolated oracle (docs/design/runners.md).

With ``runner: ctest`` the assertions are compiled into the binary that runs the product's
code, so product code shares the process that reports each result. What still holds (the
sandbox, the contract paths restored from the parent, the JUnit report checked against
ctest's exit status, the test definitions compared with the parent's) is argued in
docs/threat-model.md. The outcome is the operator's (``scorer.runner_trust``); a runner with
an isolated oracle passes.
"""

from __future__ import annotations

from patchwarden.sandbox import runner_named

from ._base import BeforeRuns, Check, Severity, found
from ._context import PlanContext


def _run(context: PlanContext) -> Check:
    runner = runner_named(context.contract.runner)
    if runner.trust == "isolated":
        return Check(check="runner_trust", outcome="pass")
    line = f"runner {runner.name}: {runner.trust}: {runner.why}"
    return found("runner_trust", [line], when=context.config.runner_trust)


RUNNER_TRUST = BeforeRuns("runner_trust", _run, severity=Severity("runner_trust"))
