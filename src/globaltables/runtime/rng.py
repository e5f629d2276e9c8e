"""Seeded randomness that replays: one root seed, independent named child streams.

Rules:
1. Nothing in the package draws from the global `random` module; randomness is an injected `Rng`.
2. `fork(name)` derives a child's seed from (parent seed, name) with SHA-256, never with Python's `hash()` (salted
   per process by PYTHONHASHSEED), so a child stream is the same in every process and does not depend on how many
   numbers the parent or its siblings have drawn. Give each consumer its own fork (`network`, `workload/us-east-1`,
   `nemesis`): adding draws to one consumer then never perturbs another, and a failing run replays from its seed.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int | str, name: str) -> int:
    """A 64-bit child seed, stable across processes, Python versions and platforms."""
    digest = hashlib.sha256(f"{seed}\x00{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class Rng(random.Random):
    """`random.Random` with a recorded seed and deterministic forking.

    A subclass rather than a wrapper so hot loops call the C-implemented `random()` directly, without a delegating
    Python frame per draw.
    """

    def __init__(self, seed: int | str = 0) -> None:
        # A string seed is first reduced to an integer ourselves; random.Random's own str seeding is stable too, but
        # this keeps one rule for every seed and child.
        self.seed_value = seed
        super().__init__(seed if isinstance(seed, int) else derive_seed(seed, ""))

    def fork(self, name: str) -> Rng:
        """An independent stream named `name`; the same (seed, name) always gives the same stream."""
        return Rng(derive_seed(self.seed_value, name))

    def __repr__(self) -> str:
        return f"Rng(seed={self.seed_value!r})"
