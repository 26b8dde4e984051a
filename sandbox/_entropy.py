"""What a scored run's processes are seeded with besides the contract's seed.

The contract is visible to the agent, so nothing the product process can observe may be
derived from its seeds: a hash seed equal to a contract seed lets product code compute
``hash("zq")`` under each of them beforehand and run the real fix only then
(docs/threat-model.md, class A). A scored run's oracle and product processes therefore get a
hash seed (``PYTHONHASHSEED``) and a ``random`` seed drawn from a secret the scorer holds;
the contract's seed stays what it is, the property's seed (``--hypothesis-seed``, the
``contract_seed`` fixture), and reaches the oracle alone (docs/design/runner.md).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

HASH_SEED_RANGE = 2**32
"""PYTHONHASHSEED takes 0 .. 2**32 - 1; the random seed is drawn from the same range so the
two look alike wherever they show."""


@dataclass(frozen=True)
class RunEntropy:
    """The hash seed and ``random`` seed of one scored run's processes (oracle and product).

    The parent's and the patch's run of one seed get the same, so the differential compares
    like with like; the scorer records them in the bundle so a run can be replayed."""

    hash_seed: int
    """``PYTHONHASHSEED`` of the oracle and the product process."""
    random_seed: int
    """What ``random`` is seeded with in both, at start and again before every test."""

    def __post_init__(self) -> None:
        for name in ("hash_seed", "random_seed"):
            value = getattr(self, name)
            if type(value) is not int or not 0 <= value < HASH_SEED_RANGE:
                raise ValueError(f"{name} must be an integer in 0 .. 2**32 - 1, got {value!r}")

    @classmethod
    def draw(cls) -> RunEntropy:
        """Fresh values from the system's secure source."""
        return cls(secrets.randbelow(HASH_SEED_RANGE), secrets.randbelow(HASH_SEED_RANGE))

    def to_json(self) -> dict[str, int]:
        return {"hash_seed": self.hash_seed, "random_seed": self.random_seed}

    @classmethod
    def from_json(cls, data: Any) -> RunEntropy:
        """ValueError for anything but ``{"hash_seed": int, "random_seed": int}``."""
        if not isinstance(data, dict) or set(data) != {"hash_seed", "random_seed"}:
            raise ValueError("expected an object with hash_seed and random_seed")
        return cls(data["hash_seed"], data["random_seed"])
