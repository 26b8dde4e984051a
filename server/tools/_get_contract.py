"""``get_contract``: the contract every patch is scored on, as the agent may see it."""

from __future__ import annotations

from ._base import READ_ONLY, NoArgs, Out, Progress, Tool
from ._session import Session


class PropertyInfo(Out):
    id: str
    oracle: str
    test: str
    """pytest node id of the property check (a contract path: read-only)."""


class ContractInfo(Out):
    contract_path: str | None
    contract_hash: str
    seeds: list[int]
    """The schedule every patch is scored on, in order."""
    properties: list[PropertyInfo]
    read_only_paths: list[str]
    """Contract paths: readable, never writable, restored from the base when scoring."""
    protected_paths: list[str]
    """Globs the server refuses to write as well."""
    quarantined_tests: list[str]
    """Flaky tests that run_tests leaves out."""
    base_commit: str
    submissions_left: int


async def run(session: Session, args: NoArgs, progress: Progress) -> ContractInfo:
    contract, policy = session.contract, session.policy
    return ContractInfo(
        contract_path=session.contract_file,
        contract_hash=contract.contract_hash,
        seeds=list(contract.seeds),
        properties=[
            PropertyInfo(id=p.id, oracle=p.oracle, test=p.test) for p in contract.properties
        ],
        read_only_paths=list(policy.read_only),
        protected_paths=list(policy.protected),
        quarantined_tests=list(session.quarantined),
        base_commit=session.workspace.base,
        submissions_left=session.submissions_left,
    )


TOOL = Tool(
    name="get_contract",
    title="Get the contract",
    description="The contract every patch is scored on: property ids, oracles, seeds and the "
    "paths the agent may read but not change.",
    use="first, to learn the properties your patch is scored on, the seeds and the paths "
    "you may read but not change.",
    args=NoArgs,
    result=ContractInfo,
    annotations=READ_ONLY,
    run=run,
)
