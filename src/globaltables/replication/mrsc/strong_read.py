"""Strong reads and condition confirmations: a Sync with another member before reading locally (docs/mrsc.md).

Rule 1: every write acknowledged before the read began is held, pending or committed, by a majority of the three
members, which intersects {this member, the member that answers}; so once neither holds a pending proposal for the
key and the newer of the two committed images is applied here, the local read returns the latest write.
Rule 2: a pending proposal on either side is waited for (it resolves by Commit, or by the resolver after
`resolve_ms`); the Sync is repeated every `sync_retry_ms` until the read's deadline, then the read fails with 500.
Rule 3: the nearest member is asked first; an attempt unanswered for `retransmit_ms` asks every other member, and
any one answer suffices.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .messages import Sync, Synced


@dataclass
class Round:
    op: Any  # a read's op id, or the coordinator's WriteOp for a confirmation
    table: str
    key: dict
    deadline: float
    confirm: bool
    rid: int = 0
    next_send: float = 0.0
    unanswered: int = 0  # attempts in a row without any answer
    follow: Any = None  # a range read's per-key follow-up (range_read.py): called with (ok, now) instead


def soonest_wake(rounds: Iterable[Any]) -> float | None:
    """The earliest deadline or resend time of `rounds` (objects with `deadline` and `next_send`), in one pass."""
    soonest: float | None = None
    for r in rounds:
        at = min(r.deadline, r.next_send)
        if soonest is None or at < soonest:
            soonest = at
    return soonest


class StrongReader:
    def __init__(self, node: Any) -> None:
        self.node = node
        self.rounds: dict[int, Round] = {}  # current attempt's rid -> round
        self._rid = 0

    def read(self, op_id: Any, table: str, key: dict, now: float) -> None:
        self._attempt(Round(op_id, table, key, now + self.node.config.read_timeout_ms / 1000, False), now)

    def confirm(self, op: Any, now: float) -> None:
        self._attempt(Round(op, op.table, op.key, op.deadline, True), now)

    def follow(self, table: str, key: dict, deadline: float, done: Any, now: float) -> None:
        """A key a range read found pending: synced like a strong GetItem; `done(ok, now)` when it is."""
        self._attempt(Round(None, table, key, deadline, False, follow=done), now)

    def on_synced(self, src: str, message: Synced, now: float) -> None:
        round_ = self.rounds.pop(message.rid, None)
        if round_ is None:
            return  # an answer to an earlier attempt, or a second answer
        node = self.node
        cv = node.port.committed(round_.table, round_.key)[0]
        if message.cv > cv:
            node.adopt(round_.table, round_.key, message.cv, message.cpid, message.image, now)
        if message.pending or node.port.pending(round_.table, round_.key) is not None:
            round_.unanswered = 0
            round_.rid = 0
            round_.next_send = now + node.config.sync_retry_ms / 1000
            self.rounds[-id(round_)] = round_  # parked until its next attempt
            return
        self._done(round_, True, now)

    def poll(self, now: float) -> None:
        for rid, round_ in list(self.rounds.items()):
            if now >= round_.deadline:
                del self.rounds[rid]
                self._done(round_, False, now)
            elif now >= round_.next_send:
                del self.rounds[rid]
                if rid > 0:
                    round_.unanswered += 1
                self._attempt(round_, now)

    def next_deadline(self) -> float | None:
        return soonest_wake(self.rounds.values())

    def _attempt(self, round_: Round, now: float) -> None:
        node = self.node
        self._rid += 1
        round_.rid = self._rid
        round_.next_send = now + node.config.retransmit_ms / 1000
        self.rounds[self._rid] = round_
        targets = node.others if round_.unanswered else node.others[:1]
        for member in targets:
            node.send(member, Sync(self._rid, round_.table, round_.key))

    def _done(self, round_: Round, ok: bool, now: float) -> None:
        if round_.follow is not None:
            round_.follow(ok, now)
        elif round_.confirm:
            self.node.coordinator.confirmed(round_.op, ok, now)
        else:
            self.node.complete(round_.op, "ok" if ok else "timeout", None)


def synced(port: Any, rid: int, table: str, key: dict) -> Synced:
    """A member's answer to a Sync: its committed version and image, and whether it holds a pending proposal."""
    cv, cpid, image = port.committed(table, key)
    return Synced(rid, cv, cpid, image, port.pending(table, key) is not None)
