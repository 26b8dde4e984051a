"""Bundled examples, shipped as package data (``patchwarden demo`` reads examples/orders)."""
