"""Contract properties for the orders package (see contract/differential-contract.yaml).

`contract_seed` is provided by patchwarden's runner plugin; it is deliberately not
defined in any conftest of this repository.
"""

from __future__ import annotations

import json
import random
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from orders import Item, bulk_price, order_total

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "orders.json"
CENT = Decimal("0.01")
BULK_SAMPLES = 25

items_strategy = st.lists(
    st.builds(
        Item,
        sku=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-", min_size=1, max_size=8),
        unit_price=st.decimals(min_value="0.01", max_value="999.99", places=2),
        qty=st.integers(min_value=1, max_value=50),
    ),
    max_size=8,
)


def reference_bulk_price(unit_price: Decimal, qty: int) -> Decimal:
    gross = unit_price * qty
    if qty >= 10:
        gross = gross * Decimal("0.95")
    return gross.quantize(CENT, rounding=ROUND_HALF_UP)


@settings(deadline=None)
@given(items=items_strategy, discount_pct=st.integers(min_value=-50, max_value=250))
def test_total_non_negative(items: list[Item], discount_pct: int) -> None:
    assert order_total(items, discount_pct) >= 0


def test_total_matches_fixture() -> None:
    orders = json.loads(FIXTURE.read_text(encoding="utf-8"))["orders"]
    for order in orders:
        items = [
            Item(line["sku"], Decimal(line["unit_price"]), int(line["qty"]))
            for line in order["items"]
        ]
        total = order_total(items, Decimal(order["discount_pct"]))
        assert total == Decimal(order["expected_total"]), order["id"]


def test_bulk_rounding_sampled(contract_seed: int) -> None:
    rng = random.Random(contract_seed)
    for _ in range(BULK_SAMPLES):
        unit_price = Decimal(rng.randint(100, 9999)).scaleb(-2)
        qty = rng.randint(10, 60)
        expected = reference_bulk_price(unit_price, qty)
        assert bulk_price(unit_price, qty) == expected, (unit_price, qty)
