"""Order totals: line prices with a bulk discount, then an order-level discount."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
BULK_MIN_QTY = 10
BULK_FACTOR = 0.95


@dataclass(frozen=True)
class Item:
    """One order line: `qty` units of `sku` at `unit_price` each."""

    sku: str
    unit_price: Decimal
    qty: int


def bulk_price(unit_price: Decimal, qty: int) -> Decimal:
    """Price of `qty` units; 5% off from BULK_MIN_QTY units up, rounded to cents."""
    gross = unit_price * qty
    if qty >= BULK_MIN_QTY:
        return Decimal(str(round(float(gross) * BULK_FACTOR, 2))).quantize(CENT)
    return gross.quantize(CENT, rounding=ROUND_HALF_UP)


def line_price(item: Item) -> Decimal:
    """Price of one order line, bulk discount included."""
    return bulk_price(item.unit_price, item.qty)


def _clamp_pct(discount_pct: int | Decimal) -> Decimal:
    """`discount_pct` as a Decimal clamped to 0..100."""
    return min(max(Decimal(discount_pct), Decimal(0)), Decimal(100))


def order_total(items: Iterable[Item], discount_pct: int | Decimal = 0) -> Decimal:
    """Sum of the line prices minus `discount_pct` percent, rounded to cents.

    The discount is clamped to 0..100 so a total is never negative.
    """
    subtotal = sum((line_price(item) for item in items), Decimal(0))
    pct = _clamp_pct(discount_pct)
    return (subtotal * (100 - pct) / 100).quantize(CENT, rounding=ROUND_HALF_UP)
