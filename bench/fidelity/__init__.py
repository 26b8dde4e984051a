"""Fidelity benchmark material: real bug fixes from published projects, and cheats.

The corpus (:mod:`.corpus`) names pinned source distributions on the package
index; nothing of those projects is copied here. :mod:`._sdist` fetches and
unpacks them, :mod:`._patching` builds the honest patch and the expected
outcomes, :mod:`.cheats` generates the cheat variants, and :mod:`.verify`
checks every entry with plain pytest.
"""
