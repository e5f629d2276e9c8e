"""The acceptor: how a member answers Propose and Status (docs/mrsc.md, "Accept rule").

Rule 1: a recorded vote is answered again, whatever has happened since (a member never answers a proposal two ways).
Rule 2: `cv >= version` refuses as stale; the committed image travels with the refusal.
Rule 3: another pending proposal for the item refuses as conflicting, and the refusal is recorded.
Rule 4: otherwise a Propose is accepted (pending + vote, durably, before the answer leaves); a Status is refused as
`fenced`, recorded, so the proposal can never gain this vote later.
Rule 5 (checked after rule 1, and after a proposal committed here is answered accept): a proposal this member refused, whose refusal it dropped once the proposal was
decided, is refused again as `fenced`, unrecorded: a late copy of its Propose must not find the member without a vote
and be accepted (the coordinator has aborted it; an acceptance now would commit a write its client was told failed).
The store keeps, per item and coordinator, the greatest such proposal; a coordinator proposes for an item one
proposal at a time, in increasing order, so every proposal at or below it is settled.
"""

from __future__ import annotations

from typing import Protocol

from .messages import ACCEPT, CONFLICT, FENCED, STALE, Propose, Status, Vote


class StrongPort(Protocol):
    """What the core needs from a member's durable state: engine/strong.py's StrongStore."""

    region: str
    witness: bool

    def new_pid(self) -> str: ...
    def holds(self, table: str) -> bool: ...
    def committed(self, table: str, key: dict) -> tuple[int, str, dict | None]: ...
    def pending(self, table: str, key: dict): ...
    def all_pending(self) -> list: ...
    def range_records(self, table: str, partition: dict | None) -> list: ...
    def range_pending(self, table: str, partition: dict | None) -> dict: ...
    def vote(self, pid: str) -> str | None: ...
    def accept(self, proposal) -> None: ...
    def refuse(self, pid: str, table: str, key: dict, answer: str) -> None: ...
    def drop_vote(self, pid: str) -> None: ...
    def settled(self, pid: str, table: str, key: dict) -> bool: ...
    def abort(self, pid: str, table: str, key: dict) -> None: ...
    def apply(
        self, table: str, key: dict, version: int, pid: str, image: dict | None, *, drop_vote: bool = True
    ) -> bool: ...


def answer(port: StrongPort, message: Propose | Status, make_pending) -> tuple[Vote, bool]:
    """The vote on a Propose or Status, made durable first; (vote, accepted now)."""
    cv, cpid, image = port.committed(message.table, message.key)
    recorded = port.vote(message.pid)
    if recorded is not None:  # rule 1
        return Vote(message.pid, recorded, cv, cpid, image), False
    if cpid == message.pid:  # committed here (its vote record dropped with the decision): it was accepted
        return Vote(message.pid, ACCEPT, cv, cpid, image), False
    if port.settled(message.pid, message.table, message.key):  # rule 5
        return Vote(message.pid, FENCED, cv, cpid, image), False
    if cv >= message.version:  # rule 2
        return Vote(message.pid, STALE, cv, cpid, image), False
    held = port.pending(message.table, message.key)
    if held is not None and held.pid != message.pid:  # rule 3
        port.refuse(message.pid, message.table, message.key, CONFLICT)
        return Vote(message.pid, CONFLICT, cv, cpid, image), False
    if type(message) is Propose:  # rule 4
        port.accept(make_pending(message))
        return Vote(message.pid, ACCEPT, cv, cpid, image), True
    port.refuse(message.pid, message.table, message.key, FENCED)
    return Vote(message.pid, FENCED, cv, cpid, image), False
