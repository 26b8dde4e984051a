"""Adoption on real, published projects (tests/adoption/README.md).

The projects are never copied into this repository: `_pypi.py` fetches their pinned source
distributions from the package index at test time, checks them against sha256 and caches them;
`projects.py` says which releases, which bug, and the properties and contracts we write for them;
`verify_projects.py` checks that ground truth with plain pytest, without patchwarden.
See README.md beside this file.
"""
