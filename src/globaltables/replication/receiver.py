"""The receiving side of replication: apply a peer's Ship through the port and say where the lane stands.

Theory of operation (docs/replication.md, "Receiver"): the applied position of each (origin, table, lane) is
durable and saved by the port in the same transaction as the items it applies, so the receiver keeps no state of
its own and a crash loses nothing it acknowledged.
- A Ship whose `prev_pos` is beyond the applied position does not connect (an earlier Ship was lost or overtaken):
  nothing is applied, the answer is a gap ack, and the sender goes back to the applied position.
- Otherwise the records after the applied position are applied all-or-nothing, and the ack carries the new
  position. Records at or below it are duplicates (a retransmission, a duplicated message) and change nothing.
- Back-pressure: a region short of write capacity applies only a prefix of the records (the port's
  `apply_replicated` stops before the first record it cannot afford). The applied position then lies before the
  Ship's last record, and the ack says `deferred`: the sender keeps the rest and ships it again later.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..engine.mutation import Mutation
from .messages import Ship, ShipAck
from .port import ReplicaPortLike

# (origin, table, records applied): the records carry the origin's commit time (commit_ms) for lag metrics.
AppliedObserver = Callable[[str, str, Sequence[Mutation]], None]


class Receiver:
    __slots__ = ("_port", "applied_records", "deferred", "duplicates", "gaps", "on_applied", "won")

    def __init__(self, port: ReplicaPortLike, on_applied: AppliedObserver | None = None) -> None:
        self._port = port
        # Told of the records a Ship applied (after they committed): the host measures replication lag with them.
        self.on_applied = on_applied
        self.applied_records = 0  # records merged (whether they won or not)
        self.won = 0  # records that won LWW and changed the item
        self.duplicates = 0  # Ships that brought nothing new
        self.gaps = 0
        self.deferred = 0  # Ships applied only in part for lack of write capacity

    def on_ship(self, origin: str, ship: Ship, stamp: str | None = None) -> ShipAck:
        port = self._port
        table, lane = ship.table, ship.lane
        applied = port.applied_position(origin, table, lane)
        if ship.prev_pos > applied:
            self.gaps += 1
            return ShipAck(table, lane, ship.epoch, applied, True, stamp)
        if ship.last_pos <= applied:
            self.duplicates += 1
            return ShipAck(table, lane, ship.epoch, applied, False, stamp)
        before = applied
        applied, won = port.apply_replicated(origin, table, lane, ship.records)
        self.applied_records += sum(1 for record in ship.records if record.pos > before)
        if self.on_applied is not None:
            self.on_applied(origin, table, [record for record in ship.records if record.pos > before])
        self.won += len(won)
        deferred = applied < ship.last_pos
        self.deferred += deferred
        return ShipAck(table, lane, ship.epoch, applied, False, stamp, deferred)
