"""`MrscNode`: one member of a strong-mode global table — coordinator, acceptor and strong reader — with no I/O.

Theory of operation: like replication/node.py's RegionNode, a host owns the clock and the transport and drives the
node with `start(now)` (after a (re)start: resolves what the store holds pending), `submit_write`, `submit_read`,
`on_message(envelope, now)` and `poll(now)` at `next_deadline()`. Every call returns the envelopes to send;
completed client operations are collected with `take_completions()` as (op id, outcome, detail): outcome "ok"
(detail: (old, new) for a write), "rwce", "error" (detail: the engine error, e.g. ConditionalCheckFailed, or None
when retries ran out), "in-doubt" (500, the write may still commit) or "timeout" (500, certainly not applied).
`others` lists the other two members, nearest first (the host knows the latencies).

Durability (docs/mrsc.md): every state change goes through the port (engine/strong.py) before the message or the
completion that implies it is emitted; the node's own memory (queues, votes collected, timers) may be lost in a crash.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ...engine.errors import DynamoError
from ...engine.strong import Pending, item_id
from ...runtime.transport import Envelope
from . import member
from .config import MrscConfig
from .coordinator import Coordinator, WriteOp
from .messages import (
    Abort,
    Commit,
    Message,
    MessageError,
    Propose,
    RangeSynced,
    Status,
    Sync,
    Synced,
    SyncRange,
    Vote,
    decode,
    encode,
    kind_of,
)
from .range_read import RangeReader, range_synced
from .strong_read import StrongReader, synced

logger = logging.getLogger(__name__)

CHANNEL = "mrsc"


class MrscNode:
    def __init__(self, region: str, others: list[str], port: member.StrongPort, config: MrscConfig | None = None):
        if region in others or len(others) != 2:
            raise ValueError(f"an MRSC member needs exactly two other members, not {others!r}")
        self.region = region
        self.others = tuple(others)
        self.port = port
        self.config = config or MrscConfig()
        self.coordinator = Coordinator(self)
        self.reader = StrongReader(self)
        self.range_reader = RangeReader(self)
        self._self_commit: dict[str, tuple[float, str, dict]] = {}  # pid -> (due, table, key) of held proposals
        self._out: list[Envelope] = []
        self._completions: list[tuple[Any, str, Any]] = []
        self._msg_id = 0
        self.dropped_messages = 0

    # ------------------------------------------------------------------------------------------------ inputs

    def start(self, now: float) -> list[Envelope]:
        """Recovery: our own pending proposals are resolved at once; others' commit after `resolve_ms`."""
        for pending in self.port.all_pending():
            if pending.coordinator == self.region:
                self.coordinator.recover(pending, now)
            else:
                self._hold(pending.pid, pending.table, pending.key, now)
        return self._flush()

    def submit_write(
        self, op_id: Any, table: str, key: dict, evaluate: Callable[[dict | None], dict | None], now: float
    ) -> list[Envelope]:
        deadline = now + self.config.write_timeout_ms / 1000
        self.coordinator.submit(WriteOp(op_id, table, key, evaluate, deadline), now)
        return self._flush()

    def submit_read(self, op_id: Any, table: str, key: dict, now: float) -> list[Envelope]:
        """A strong read: when it completes "ok", the host reads the key locally."""
        self.reader.read(op_id, table, key, now)
        return self._flush()

    def submit_range_read(self, op_id: Any, table: str, partition: dict | None, now: float) -> list[Envelope]:
        """A strong Query (`partition`: {partition key name: value}) or Scan (None: the whole table): when it
        completes "ok", the host reads locally (range_read.py)."""
        self.range_reader.read(op_id, table, partition, now)
        return self._flush()

    def on_message(self, envelope: Envelope, now: float) -> list[Envelope]:
        if envelope.src not in self.others:
            return self._drop(envelope, f"not a member: {envelope.src!r}")
        try:
            message = decode(envelope.body)  # type: ignore[arg-type]
        except (MessageError, TypeError) as error:
            return self._drop(envelope, str(error))
        kind = type(message)
        port = self.port
        table = getattr(message, "table", None)
        if table is not None and not port.holds(table):
            # Not (yet) a member for this table (a conversion still under way): no answer, as if unreachable.
            return self._drop(envelope, f"no strong table {table!r} here")
        if kind is Propose or kind is Status:
            vote, accepted = member.answer(port, message, _pending_of)
            if accepted:
                self._hold(message.pid, message.table, message.key, now)
            self.send(envelope.src, vote)
        elif kind is Vote:
            self.coordinator.on_vote(envelope.src, message, now)
        elif kind is Commit:
            port.apply(message.table, message.key, message.version, message.pid, message.image)
            self._self_commit.pop(message.pid, None)
            self.item_changed(message.table, message.key, now)
        elif kind is Abort:
            held = port.pending(message.table, message.key)
            if held is not None and held.pid == message.pid:
                # Impossible by the protocol (a holder accepted, so the proposal committed); keep it and say so.
                logger.error("abort of proposal %s which this member accepted: kept", message.pid)
            else:
                port.drop_vote(message.pid)
        elif kind is Sync:
            self.send(envelope.src, synced(port, message.rid, message.table, message.key))
        elif kind is Synced:
            self.reader.on_synced(envelope.src, message, now)
        elif kind is SyncRange:
            try:
                answer = range_synced(port, message)
            except (KeyError, TypeError, ValueError, DynamoError) as error:  # a partition not of this table's key
                return self._drop(envelope, f"bad range: {error!r}")
            self.send(envelope.src, answer)
        elif kind is RangeSynced:
            self.range_reader.on_synced(envelope.src, message, now)
        return self._flush()

    def poll(self, now: float) -> list[Envelope]:
        for pid, (due, table, key) in list(self._self_commit.items()):
            if now >= due:
                del self._self_commit[pid]
                held = self.port.pending(table, key)
                if held is not None and held.pid == pid:
                    # We accepted it, so coordinator + us are a majority: it is committed. The vote stays, so a
                    # late Status from the coordinator is still answered "accept".
                    self.port.apply(table, key, held.version, pid, held.image, drop_vote=False)
                    self.item_changed(table, key, now)
        self.coordinator.poll(now)
        self.reader.poll(now)
        self.range_reader.poll(now)
        return self._flush()

    def next_deadline(self) -> float | None:
        times = [due for due, _t, _k in self._self_commit.values()]
        for at in (self.coordinator.next_deadline(), self.reader.next_deadline(), self.range_reader.next_deadline()):
            if at is not None:
                times.append(at)
        return min(times) if times else None

    def take_completions(self) -> list[tuple[Any, str, Any]]:
        done, self._completions = self._completions, []
        return done

    # ------------------------------------------------------------------------------------ used by the parts

    def send(self, dest: str, message: Message) -> None:
        self._msg_id += 1
        self._out.append(Envelope(self.region, dest, kind_of(message), self._msg_id, None, encode(message), CHANNEL))

    def complete(self, op_id: Any, outcome: str, detail: Any) -> None:
        self._completions.append((op_id, outcome, detail))

    def adopt(self, table: str, key: dict, cv: int, cpid: str, image: dict | None, now: float) -> None:
        """A newer committed image learned from another member (a refusal or a Sync answer)."""
        if self.port.apply(table, key, cv, cpid, image, drop_vote=False):
            self.item_changed(table, key, now)

    def item_changed(self, table: str, key: dict, now: float) -> None:
        self.coordinator.pump(table, key, now)

    def status(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "proposals": len(self.coordinator.proposals),
            "queued": sum(len(q) for q in self.coordinator.queues.values()),
            "held": len(self._self_commit),
            "reads": len(self.reader.rounds),
            "range_reads": len(self.range_reader.rounds),
            "dropped_messages": self.dropped_messages,
        }

    # ----------------------------------------------------------------------------------------------- helpers

    def _hold(self, pid: str, table: str, key: dict, now: float) -> None:
        self._self_commit[pid] = (now + self.config.resolve_ms / 1000, table, key)

    def _flush(self) -> list[Envelope]:
        out, self._out = self._out, []
        return out

    def _drop(self, envelope: Envelope, reason: str) -> list[Envelope]:
        self.dropped_messages += 1
        logger.warning("mrsc message %r dropped: %s", envelope, reason)
        return []


def _pending_of(message: Propose) -> Pending:
    return Pending(message.pid, message.table, message.key, message.version, message.coordinator, message.image)


__all__ = ["CHANNEL", "MrscNode", "item_id"]
