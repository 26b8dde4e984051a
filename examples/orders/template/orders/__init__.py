"""A tiny order-pricing package (patchwarden's example target)."""

from __future__ import annotations

from orders.total import Item, bulk_price, order_total

__all__ = ["Item", "bulk_price", "order_total"]
