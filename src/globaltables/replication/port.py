"""What the replication core needs from a region's engine: the contract of `engine/replica.py`'s `ReplicaPort`.

A Protocol rather than an import, so the core is tested against an in-memory fake (tests/replication/fake_port.py)
and depends on no storage detail. Positions are the origin's per-table log sequence numbers: increasing, never
reused, shared by the table's lanes (so one lane's positions are sparse; nothing relies on them being consecutive).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..engine.mutation import Mutation


class ReplicaPortLike(Protocol):
    def global_tables(self) -> list[str]:
        """Tables replicated to every peer, in a stable order."""

    def peers(self, table: str) -> list[str]:
        """The other regions holding a replica of the table."""

    def lanes(self, table: str) -> int:
        """The table's number of replication lanes."""

    def local_records(self, table: str, lane: int, after_pos: int, limit: int) -> Sequence[Mutation]:
        """Up to `limit` records of the lane that originated here, with pos > after_pos, in log order."""

    def log_end(self, table: str, lane: int) -> int:
        """The highest local position in the lane (0: none yet)."""

    def log_start(self, table: str, lane: int) -> int:
        """One more than the highest position trimmed from the lane (1: nothing trimmed): every local record of
        the lane with pos >= log_start is still held. A peer at acked < log_start - 1 cannot be served."""

    def apply_replicated(
        self, origin: str, table: str, lane: int, records: Sequence[Mutation]
    ) -> tuple[int, list[str]]:
        """LWW-merge the records with pos > applied, in order, in one transaction with the new applied position;
        (applied position, versions that won). A region short of write capacity applies only the records before the
        first it cannot afford (back-pressure): the applied position is then that prefix's, and the receiver defers
        the rest."""

    def applied_position(self, origin: str, table: str, lane: int) -> int: ...

    def acked_position(self, peer: str, table: str, lane: int) -> int: ...

    def save_acked(self, peer: str, table: str, lane: int, pos: int) -> None: ...
