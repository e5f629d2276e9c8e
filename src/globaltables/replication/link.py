"""`ReplicationLink`: the sender of one (peer, table, lane), go-back-N over the origin's log.

Theory of operation (docs/replication.md, "Link"):
- `acked` is the peer's durable applied position as last reported (saved through the port, so the log can be
  trimmed up to the minimum over peers); `sent` the last position shipped; `epoch` is bumped on every rewind.
- `poll` ships the lane's records after `sent` in batches while fewer than `window_records` are unacknowledged.
  Each Ship says where it starts (`prev_pos`), so the receiver can tell a batch that does not connect.
- Batching is Nagle's, without a timer: a full Ship (`batch_records`, `batch_bytes` or what the window allows)
  goes at once; so does a partial one (the end of the log) while fewer than `eager_ships` Ships are unacknowledged.
  Otherwise the records wait for an ack, and whatever accumulated by then shares the next Ship. So an idle link
  ships a commit the moment it is polled, and a busy link batches by itself, with nothing to tune in time.
- An ack advances `acked` (whatever its epoch: an applied position is a durable fact). A gap ack of the current
  epoch rewinds: `sent = acked`, epoch + 1, and the window is shipped again. Gap acks of older epochs answer Ships
  sent before the rewind and are ignored, so one loss costs one rewind, not one per message in flight.
- Retransmit timer: with records unacknowledged and no ack progress for `retransmit_after` seconds (doubling per
  fruitless retry up to `max_backoff` times), rewind as above. A timed-out link then probes: it ships one Ship,
  not a window, until an ack of the current epoch (or any progress) shows the peer hears it again; then the window
  opens. So a partitioned peer costs a trickle of one Ship per retry, and the retries can stay frequent: after a
  partition heals the next retry (at most `retransmit_after * max_backoff` later) resumes from the acked position:
  nothing skipped, no full resync. A message from the peer (`peer_heard`) ends the backoff at once: the link
  retries right away, at most once per `retransmit_after`.
- Back-pressure (docs/capacity.md, decision 16): an ack of the current epoch that says `deferred` (the peer applied
  only a prefix, lacking write capacity) advances `acked` as any ack does, then goes back to it (a rewind, so the
  window's later Ships, which no longer connect, are ignored when their gap acks come) and ships nothing until
  `defer_retry` seconds later; then it probes with one Ship until an ack that is not deferred opens the window. The
  records stay in the log and in order: lag and the pending count grow while the peer is short, and drain after.
- If the records after `sent` are no longer in the log (trimmed before this peer acknowledged them), the link fails
  loudly: state `failed`, the error logged, nothing shipped again. Skipping would silently lose writes.
Time is passed in (`now`, seconds on the host's monotonic clock); nothing here reads a clock.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

from .config import ReplicationConfig
from .messages import Ship, ShipAck, encode
from .port import ReplicaPortLike

logger = logging.getLogger(__name__)

ACTIVE = "active"
FAILED = "failed"


class ReplicationLink:
    __slots__ = (
        "_batches", "_in_flight", "_port", "_probing", "_progress_at", "_resume_at", "_retries", "_short", "acked",
        "config", "deferrals", "epoch", "error", "lane", "peer", "rewinds", "sent", "ships", "state", "table",
    )  # fmt: skip

    def __init__(self, peer: str, table: str, lane: int, port: ReplicaPortLike, config: ReplicationConfig) -> None:
        self.peer = peer
        self.table = table
        self.lane = lane
        self._port = port
        self.config = config
        self.acked = port.acked_position(peer, table, lane)
        self.sent = self.acked
        self.epoch = 0
        self.state = ACTIVE
        self.error: str | None = None
        self._batches: deque[tuple[int, int]] = deque()  # (last pos, record count) of Ships of this epoch in flight
        self._in_flight = 0  # records in those Ships
        self._progress_at = 0.0  # when acked last advanced (or shipping started from idle)
        self._retries = 0  # retransmits since the last ack progress
        self._probing = False  # timed out: one Ship in flight at most until the peer is heard again
        self._resume_at: float | None = None  # the peer deferred records: ship nothing before this time
        # Held back while `eager_ships` Ships are out: (log_end, records found after `sent` up to it), so a poll
        # does not read the log again until enough positions were added to fill a Ship (None: nothing held back).
        self._short: tuple[int, int] | None = None
        self.ships = 0  # Ships sent, for statistics
        self.rewinds = 0
        self.deferrals = 0  # deferred acks (the peer lacked write capacity)

    # ----------------------------------------------------------------------------------------------- sending

    @property
    def in_flight(self) -> int:
        """Records shipped in the current epoch and not yet acknowledged."""
        return self._in_flight

    def wants_to_ship(self, log_end: int) -> bool:
        return (
            self.state == ACTIVE
            and self.sent < log_end
            and self._in_flight < self.config.window_records
            and self._resume_at is None
        )

    @property
    def deferring(self) -> bool:
        """Waiting to ship again records the peer deferred for lack of write capacity."""
        return self._resume_at is not None

    def poll(
        self, now: float, log_end: int, stamp: Callable[[], str | None] = lambda: None
    ) -> list[tuple[Ship, bytes]]:
        """Rewind if the retransmit timer expired, then ship what the window allows; (message, encoding) pairs.
        `stamp` gives the sender's HLC stamp for a message (called only when one is sent)."""
        if self.state != ACTIVE:
            return []
        if self._resume_at is not None:
            if now < self._resume_at:
                return []  # back-pressure: the peer asked for time
            self._resume_at = None
        if self.sent > self.acked and now >= self.retransmit_deadline():
            self._retries += 1
            self._rewind(now)
            self._probing = True
        out: list[tuple[Ship, bytes]] = []
        config = self.config
        while self.sent < log_end and self._in_flight < config.window_records:
            if self._probing and self._in_flight:
                break  # the probe is out: wait for its ack before shipping the window
            limit = min(config.batch_records, config.window_records - self._in_flight)
            held = len(self._batches) >= config.eager_ships
            short = self._short
            if held and short is not None and short[1] + (log_end - short[0]) < limit:
                break  # positions are unique, so the lane cannot have filled a Ship since it was last read
            if self.sent < self._port.log_start(self.table, self.lane) - 1:
                self._fail(
                    f"log of {self.table} lane {self.lane} trimmed past position {self.sent}, which {self.peer} "
                    f"needs (log starts at {self._port.log_start(self.table, self.lane)})"
                )
                break
            records = self._port.local_records(self.table, self.lane, self.sent, limit)
            if not records:
                break
            if held and len(records) < limit and len(self._encode(tuple(records), None)[0].records) == len(records):
                self._short = (log_end, len(records))  # a partial Ship while busy: wait for an ack (Nagle)
                break
            self._short = None
            ship, data = self._encode(tuple(records), stamp())
            if self.sent <= self.acked:
                self._progress_at = now  # the retransmit timer runs from the first unacknowledged Ship
            count = len(ship.records)
            self.sent = ship.last_pos
            self._batches.append((self.sent, count))
            self._in_flight += count
            self.ships += 1
            out.append((ship, data))
        return out

    def _encode(self, records: tuple, stamp: str | None) -> tuple[Ship, bytes]:
        while True:
            ship = Ship(self.table, self.lane, self.epoch, self.sent, records, stamp)
            data = encode(ship)
            if len(data) <= self.config.batch_bytes or len(records) == 1:
                return ship, data
            records = records[: len(records) // 2]

    @property
    def backing_off(self) -> bool:
        """Timed out at least once since the last ack progress (the peer may be cut off)."""
        return self._retries > 0

    def peer_heard(self, now: float) -> None:
        """A message came from the peer: it is reachable again, so a backed-off link retries now rather than at the
        end of its backoff (but not more often than every `retransmit_after`, should only the other way work)."""
        if self._retries and self.sent > self.acked and now - self._progress_at >= self.config.retransmit_after:
            self._retries = 0
            self._progress_at = now - self.config.retransmit_after  # the retransmit deadline is now

    def retransmit_deadline(self) -> float:
        backoff = min(1 << self._retries, self.config.max_backoff)
        return self._progress_at + self.config.retransmit_after * backoff

    def next_deadline(self) -> float | None:
        """When `poll` must run next for this link's own sake (the retransmit timer), if ever."""
        if self.state != ACTIVE:
            return None
        if self._resume_at is not None:
            return self._resume_at
        if self.sent <= self.acked:
            return None
        return self.retransmit_deadline()

    # ------------------------------------------------------------------------------------------------ acks

    def on_ack(self, ack: ShipAck, now: float) -> None:
        if self.state != ACTIVE:
            return
        applied = ack.applied_pos
        if (applied > self.acked or ack.epoch == self.epoch) and not ack.deferred:
            self._probing = False  # the peer hears us again: ship the whole window
        if applied > self.acked:
            self.acked = applied
            self._port.save_acked(self.peer, self.table, self.lane, applied)
            self._progress_at = now
            self._retries = 0
            # The peer may be ahead of what we think we sent (we restarted after shipping more than we had
            # recorded as acknowledged): continue after what it holds.
            self.sent = max(self.sent, applied)
            batches = self._batches
            while batches and batches[0][0] <= applied:
                self._in_flight -= batches.popleft()[1]
            self._short = None
        if ack.gap and ack.epoch == self.epoch:
            self._rewind(now)
        elif ack.deferred and ack.epoch == self.epoch:
            # Back-pressure: go back to what the peer applied and wait; then one Ship at a time until it keeps up.
            self.deferrals += 1
            self._retries = 0
            self._rewind(now)
            self._probing = True
            self._resume_at = now + self.config.defer_retry

    def _rewind(self, now: float) -> None:
        """Go back to the acknowledged position in a new epoch (go-back-N)."""
        self.sent = self.acked
        self.epoch += 1
        self.rewinds += 1
        self._batches.clear()
        self._in_flight = 0
        self._short = None
        self._progress_at = now

    def _fail(self, error: str) -> None:
        self.state = FAILED
        self.error = error
        logger.error("replication link to %s failed: %s", self.peer, error)

    def status(self, log_end: int) -> dict:
        return {
            "peer": self.peer,
            "table": self.table,
            "lane": self.lane,
            "state": self.state,
            "acked": self.acked,
            "sent": self.sent,
            "log_end": log_end,
            "in_flight": self._in_flight,
            "epoch": self.epoch,
            "ships": self.ships,
            "rewinds": self.rewinds,
            "deferrals": self.deferrals,
            "error": self.error,
        }
