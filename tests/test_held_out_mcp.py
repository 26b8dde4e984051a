"""Held-out properties never reach the agent: every tool result of a real session, scanned.

``patchwarden serve`` on the orders example with ``scorer.held_out_dir`` and
``scorer.extra_seeds`` set, driven by the SDK client over stdio. The agent reads the
contract, lists and reads files, runs the tests (a probe looks for the held-out directory
inside the sandbox), submits a patch the held-out property rejects, then the honest fix,
and asks for a freeze. Every result it got, text and structured content, is then searched
for the held-out ids, file and test names, the directory, the witness strings and the
extra seeds, all read back from the reviewers' bundles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchwarden.scorer import read_rows
from tests.test_mcp_e2e import EXAMPLES, Served, _text, serve  # noqa: F401 (fixture)

pytestmark = pytest.mark.bwrap

HELD_OUT_ID = "held.bulk_rounding_large_orders"
HELD_OUT_FILE = "test_large_orders_secret.py"
HELD_OUT_TEST = "test_bulk_rounding_for_large_quantities"
HELD_OUT_SOURCE = f"""\
import random
from decimal import ROUND_HALF_UP, Decimal

from orders import bulk_price

CENT = Decimal("0.01")


def {HELD_OUT_TEST}(contract_seed):
    rng = random.Random(contract_seed * 7919 + 1)
    for _ in range(40):
        unit_price = Decimal(rng.randint(1, 9999)).scaleb(-2)
        qty = rng.randint(1001, 5000)
        expected = (unit_price * qty * Decimal("0.95")).quantize(CENT, rounding=ROUND_HALF_UP)
        assert bulk_price(unit_price, qty) == expected, "LARGE-ORDER-WITNESS"
"""
HELD_OUT_YAML = f"""\
properties:
  - id: {HELD_OUT_ID}
    oracle: "bulk rounding holds for quantities above a thousand"
    test: "{HELD_OUT_FILE}::{HELD_OUT_TEST}"
"""
# The example's fix, except for the quantities only the held-out property tries.
HOLE = """\
    if qty > 1000:
        return Decimal(str(round(float(gross) * 0.95, 2))).quantize(CENT)
"""

PROBE = """\
import os


def test_probe_for_the_held_out_directory():
    seen = {{
        "mount": os.path.exists("/property-tests"),
        "dir": os.path.exists({directory!r}),
        "top": sorted(os.listdir("/")),
    }}
    assert not seen["mount"] and not seen["dir"], seen
"""


@pytest.fixture(scope="module")
def held_out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("operator")
    directory = base / "orders-held-out"
    directory.mkdir()
    (directory / "held-out.yaml").write_text(HELD_OUT_YAML)
    (directory / HELD_OUT_FILE).write_text(HELD_OUT_SOURCE)
    for path in (base, directory, *directory.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return directory


@pytest.fixture(scope="module")
def session(serve: Any, held_out_dir: Path) -> Served:  # noqa: F811
    return serve(
        scorer_extra=f"  extra_seeds: 2\n  held_out_dir: {json.dumps(str(held_out_dir))}\n"
    )


class Recorder:
    """Every tool result the agent gets, as it got it."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.seen: list[str] = []

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        result = self.served.call(tool, arguments)
        self.seen.append(_text(result))
        self.seen.append(json.dumps(result.structured_content))
        return result

    def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.call(tool, arguments)
        assert not result.is_error, _text(result)
        return dict(result.structured_content)


def _fix_files(hole: bool) -> str:
    fixed = (EXAMPLES / "patches" / "fix" / "orders" / "total.py").read_text()
    if not hole:
        return fixed
    anchor = "    gross = unit_price * qty\n"
    return fixed.replace(anchor, anchor + HOLE, 1)


def test_no_tool_result_names_anything_held_out(session: Served, held_out_dir: Path) -> None:
    agent = Recorder(session)
    contract = agent.ok("get_contract")
    assert [p["id"] for p in contract["properties"]] == [
        "prop.order_total_non_negative",
        "prop.order_total_matches_fixture",
        "prop.bulk_rounding",
    ]
    agent.ok("list_files")
    agent.ok("list_files", {"pattern": "*.py"})
    agent.ok("read_file", {"path": "contract/differential-contract.yaml"})
    agent.ok("read_file", {"path": "orders/total.py"})
    agent.ok("run_tests")
    # The probe names the directory itself, so its own calls are not scanned; it is
    # removed again before anything is diffed or submitted.
    probe = PROBE.format(directory=str(held_out_dir))
    session.ok("write_file", {"path": "tests/test_probe_held_out.py", "content": probe})
    run = session.ok("run_tests", {"tests": ["tests/test_probe_held_out.py"]})
    assert run["counts"] == {"passed": 1}, run["tests"]
    removal = "".join(f"-{line}\n" for line in probe.splitlines())
    header = "--- a/tests/test_probe_held_out.py\n+++ /dev/null\n"
    hunk = f"@@ -1,{len(probe.splitlines())} +0,0 @@\n"
    session.ok("apply_patch", {"patch": header + hunk + removal})

    verdicts = []
    for hole in (True, False):
        agent.ok("write_file", {"path": "orders/total.py", "content": _fix_files(hole)})
        agent.ok("diff")
        summary = agent.ok("submit_patch", {"message": f"fix bulk rounding (hole={hole})"})
        verdicts.append(summary)
    hole_summary, honest_summary = verdicts
    assert hole_summary["decision"] == "reject"
    assert hole_summary["results"][-1] == {
        "prop": "held_out",
        "decision": "reject",
        "reason": "held_out",
    }
    assert {r["prop"]: r["reason"] for r in hole_summary["results"][:-1]} == {
        "prop.order_total_non_negative": "both_pass",
        "prop.order_total_matches_fixture": "both_pass",
        "prop.bulk_rounding": "parent_fail_cleared",
    }
    assert honest_summary["decision"] == "accept"
    assert "held_out" not in {r["prop"] for r in honest_summary["results"]}
    for summary in verdicts:
        assert summary["counts"]["parent"]["lines"] == summary["counts"]["patch"]["lines"] == 9
    agent.call(
        "request_freeze",
        {"test_id": "tests/properties/test_orders.py::test_bulk_rounding_sampled", "reason": "x"},
    )

    secrets = [HELD_OUT_ID, HELD_OUT_FILE, HELD_OUT_TEST, "held-out.yaml", str(held_out_dir)]
    secrets += ["/property-tests", "LARGE-ORDER-WITNESS", "held.bulk"]
    verdict_ids = [v["verdict_id"] for v in verdicts]
    for verdict_id in verdict_ids:
        bundle = session.dirs["logs"] / "verdicts" / verdict_id
        decision = json.loads((bundle / "decision.json").read_text())
        assert decision["held_out"]["results"][0]["prop"] == HELD_OUT_ID
        extra = decision["extra_seeds"]["seeds"]
        assert len(extra) == 2
        secrets += [str(seed) for seed in extra]
        rows = read_rows(bundle / "parent.jsonl") + read_rows(bundle / "patch.jsonl")
        secrets += sorted({r.witness for r in rows if r.held_out and r.witness})
    hole_runs = session.dirs["logs"] / "verdicts" / verdict_ids[0] / "runs" / "held-out"
    assert any("LARGE-ORDER-WITNESS" in p.read_text() for p in hole_runs.glob("*.stdout.txt"))
    seen = "\n".join(agent.seen)
    for verdict_id in verdict_ids:  # ids name a time and a commit: any digits may occur there
        seen = seen.replace(verdict_id, "")
    leaked = [secret for secret in secrets if secret in seen]
    assert leaked == []
