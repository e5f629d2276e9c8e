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
  last Ship's last record, and the ack says `deferred`: the sender keeps the rest and ships it again later.
- Ships of a lane that arrived together and connect (`on_ships`) are applied as one: one store transaction, one
  ack carrying the position after the last (acks are cumulative, so the sender is answered for every one).
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
        return self.on_ships(origin, [ship], stamp)

    def on_ships(self, origin: str, ships: Sequence[Ship], stamp: str | None = None) -> ShipAck:
        """Ships of one (origin, table, lane) and epoch, in the order they came, each starting at or before the
        end of the one before (the node groups them so): applied in one transaction, answered with one ack for
        the last. The first decides: if it does not connect, nothing is applied and the ack is a gap ack."""
        port = self._port
        first = ships[0]
        table, lane, epoch = first.table, first.lane, ships[-1].epoch
        applied = port.applied_position(origin, table, lane)
        if first.prev_pos > applied:
            self.gaps += 1
            return ShipAck(table, lane, first.epoch, applied, True, stamp)
        fresh: list[Mutation] = []
        last = applied
        for ship in ships:
            before = len(fresh)
            for record in ship.records:
                if record.pos > last:
                    last = record.pos
                    fresh.append(record)
            if len(fresh) == before:
                self.duplicates += 1  # a Ship that brought nothing new
        if not fresh:
            return ShipAck(table, lane, epoch, applied, False, stamp)
        applied, won = port.apply_replicated(origin, table, lane, fresh)
        if applied < last:  # deferred: only the records up to `applied` committed
            fresh = [record for record in fresh if record.pos <= applied]
        self.applied_records += len(fresh)
        if self.on_applied is not None and fresh:
            self.on_applied(origin, table, fresh)
        self.won += len(won)
        deferred = applied < ships[-1].last_pos
        self.deferred += deferred
        return ShipAck(table, lane, epoch, applied, False, stamp, deferred)
