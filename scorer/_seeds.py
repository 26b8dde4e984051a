"""The score's secret: every value of a score the agent must not be able to predict.

One secret per ``score`` (per batch for ``score-batch``, so requests on one base still share
the parent's runs), drawn from the system's secure source and never shown to the agent. From
it, by HMAC-SHA256 with a label each:

- each seed's ``RunEntropy``: the hash seed (``PYTHONHASHSEED``) and ``random`` seed of the
  oracle and product processes of that seed's runs. The parent's and the patch's run of one
  seed get the same, so the differential compares like with like; a contract seed is never
  one of them (docs/design/runner.md, "Seeds");
- the extra seeds, run on both trees besides the schedule and gated the same way
  (docs/design/differential-gate.md, "Extra seeds").

The bundle records the secret and what was derived from it (``seeds.json``), so a reviewer
can run the score again exactly (``score --replay BUNDLE``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from patchwarden.sandbox import HASH_SEED_RANGE, RunEntropy

SECRET_BYTES = 32
EXTRA_SEEDS_OFF = (
    "scorer.extra_seeds is 0, the operator's choice: no secret seed runs, so a patch that "
    "recognises the inputs of the contract's seeds is tried on no other"
)
"""What ``doctor`` and the bundle say when the operator turned the extra seeds off."""
SEEDS_FILE = "seeds.json"
"""The bundle's record of the secret, the extra seeds and every run's entropy."""


@dataclass(frozen=True)
class ScoreSecret:
    key: bytes

    def __post_init__(self) -> None:
        if len(self.key) != SECRET_BYTES:
            raise ValueError(f"a score secret is {SECRET_BYTES} bytes, got {len(self.key)}")

    @classmethod
    def draw(cls) -> ScoreSecret:
        return cls(secrets.token_bytes(SECRET_BYTES))

    @classmethod
    def from_hex(cls, text: str) -> ScoreSecret:
        """ValueError for anything but 64 hex digits."""
        return cls(bytes.fromhex(text))

    def hex(self) -> str:
        return self.key.hex()

    def _number(self, label: str) -> int:
        digest = hmac.new(self.key, label.encode("ascii"), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "big") % HASH_SEED_RANGE

    def entropy(self, seed: int) -> RunEntropy:
        """The hash seed and ``random`` seed of every run of ``seed`` in this score."""
        return RunEntropy(self._number(f"hash {seed}"), self._number(f"random {seed}"))

    def extra_seeds(self, count: int, taken: Iterable[int]) -> list[int]:
        """``count`` seeds, none of them in ``taken`` (the schedule's) nor repeated."""
        seen = set(taken)
        seeds: list[int] = []
        for number in range(2**31):
            if len(seeds) >= count:
                break
            seed = self._number(f"extra {number}")
            if seed not in seen:
                seen.add(seed)
                seeds.append(seed)
        return seeds


def seeds_record(
    secret: ScoreSecret, seeds: Iterable[int], extra_seeds: list[int]
) -> dict[str, Any]:
    """``seeds.json``: the secret, the extra seeds (with ``extra_seeds_off`` when the operator
    turned them off), and each seed's entropy."""
    record: dict[str, Any] = {"secret": secret.hex(), "extra_seeds": list(extra_seeds)}
    if not extra_seeds:
        record["extra_seeds_off"] = EXTRA_SEEDS_OFF
    record["runs"] = {str(seed): secret.entropy(seed).to_json() for seed in sorted(set(seeds))}
    return record
