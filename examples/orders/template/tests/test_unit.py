"""Ordinary unit tests for the orders package (not part of the contract)."""

from __future__ import annotations

from decimal import Decimal

from orders import Item, bulk_price, order_total


def test_empty_order_is_free() -> None:
    assert order_total([]) == Decimal("0.00")


def test_small_quantity_has_no_bulk_discount() -> None:
    assert bulk_price(Decimal("2.50"), 4) == Decimal("10.00")


def test_bulk_discount_applies_from_ten_units() -> None:
    assert bulk_price(Decimal("10.00"), 10) == Decimal("95.00")


def test_order_discount() -> None:
    items = [Item("A-1", Decimal("20.00"), 2), Item("B-2", Decimal("5.00"), 1)]
    assert order_total(items, 10) == Decimal("40.50")


def test_full_discount_is_free() -> None:
    assert order_total([Item("A-1", Decimal("20.00"), 3)], 100) == Decimal("0.00")


def test_negative_discount_is_ignored() -> None:
    assert order_total([Item("A-1", Decimal("20.00"), 1)], -10) == Decimal("20.00")
