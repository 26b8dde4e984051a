"""Order totals: line prices with a bulk discount, then an order-level discount."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
BULK_MIN_QTY = 10  # bulk discount applies from this many units of one SKU
BULK_FACTOR = Decimal("0.95")  # 5% off; keep it a Decimal, never a float


@dataclass(frozen=True)
class Item:
    sku: str
    unit_price: Decimal
    qty: int


def bulk_price(unit_price: Decimal, qty: int) -> Decimal:
    """Price of `qty` units; 5% off from BULK_MIN_QTY units up, rounded to cents.

    The computation stays in Decimal and rounds half up, so a price ending in
    exactly half a cent rounds up: 10 x 1.01 = 10.10, less 5% = 9.595 -> 9.60
    (float arithmetic gave 9.59).
    """
    gross = unit_price * qty
    if qty >= BULK_MIN_QTY:
        gross = gross * BULK_FACTOR
    return gross.quantize(CENT, rounding=ROUND_HALF_UP)


def order_total(items: Iterable[Item], discount_pct: int | Decimal = 0) -> Decimal:
    """Sum of the line prices minus `discount_pct` percent, rounded to cents.

    The discount is clamped to 0..100 so a total is never negative.
    """
    subtotal = sum((bulk_price(item.unit_price, item.qty) for item in items), Decimal(0))
    pct = min(max(Decimal(discount_pct), Decimal(0)), Decimal(100))
    return (subtotal * (100 - pct) / 100).quantize(CENT, rounding=ROUND_HALF_UP)
