"""The acceptor: how a member answers Propose, Repropose and Status (docs/mrsc.md, "Accept rule").

Rule 1: a recorded vote is answered again, whatever has happened since (a member never answers a proposal two
ways) — except that a recorded `conflict`, asked again (Repropose or Status), becomes `stale` once the member holds
the version, `outranked` once the proposal it holds now ranks higher, or an acceptance (`accept-again`, Repropose
only) once it holds no conflicting proposal: the only changes an answer ever makes.
Rule 2: the proposal committed here is answered accept.
Rule 3: a proposal at or below the item's settled mark for its coordinator (its vote, or its acceptance, was
dropped once it was decided) is answered `settled`, unrecorded: a late copy of its Propose must not find the member
without a vote and be accepted. A coordinator proposes for an item one proposal at a time, in increasing order.
Rule 4: `cv >= version` refuses as stale; the committed image travels with the refusal.
Rule 5: another pending proposal for the item refuses, recorded: `outranked` when it ranks higher (the coordinator
then aborts at once), `conflict` when it ranks lower.
Rule 6: otherwise a Propose (or Repropose) is accepted (pending + vote, durably, before the answer leaves); a Status
is refused as `fenced`, recorded, so the proposal can never gain this vote later.
Rank (docs/mrsc.md, "Racing proposals"): (version, turn of the coordinator at that version), given by the node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .messages import (
    ACCEPT,
    ACCEPT_AGAIN,
    CONFLICT,
    FENCED,
    OUTRANKED,
    SETTLED,
    STALE,
    Propose,
    Repropose,
    Status,
    Vote,
)

Rank = Callable[[int, str], tuple[int, int]]  # (version, coordinator) -> rank


class StrongPort(Protocol):
    """What the core needs from a member's durable state: store.py's StrongStore."""

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
    def accept(self, proposal, answer: str = ACCEPT) -> None: ...
    def refuse(self, pid: str, table: str, key: dict, answer: str) -> None: ...
    def drop_vote(self, pid: str) -> None: ...
    def settled(self, pid: str, table: str, key: dict) -> bool: ...
    def abort(self, pid: str, table: str, key: dict, version: int) -> None: ...
    def aborted(self, pid: str) -> bool: ...
    def aborted_items(self) -> list: ...
    def forget_aborted(self, table: str, key: dict, held: int) -> bool: ...
    def abandon(self, pid: str, table: str, key: dict) -> None: ...
    def apply(
        self, table: str, key: dict, version: int, pid: str, image: dict | None, *, drop_vote: bool = True
    ) -> bool: ...


def answer(
    port: StrongPort, message: Propose | Repropose | Status, make_pending, rank: Rank, *, planted: bool = False
) -> tuple[Vote, bool]:
    """The vote on a Propose, Repropose or Status, made durable first; (vote, accepted now). `planted`: the planted
    bug "accept-after-conflict" (node.py SIMULATION_PLANTED_BUGS): a recorded `conflict`, asked again by a
    Repropose, is accepted although the lower-ranked proposal it refused for is still held here (and replaced by
    it), so both may gather a majority."""
    cv, cpid, image = port.committed(message.table, message.key)
    held = port.pending(message.table, message.key)
    recorded = port.vote(message.pid)
    free = held is None or held.pid == message.pid
    if recorded is not None:  # rule 1
        if recorded == CONFLICT and type(message) is not Propose:  # asked again: Repropose or Status
            if cv >= message.version:
                return Vote(message.pid, STALE, cv, cpid, image), False
            if not free and rank(held.version, held.coordinator) > rank(message.version, message.coordinator):
                port.refuse(message.pid, message.table, message.key, OUTRANKED)  # what it holds now ranks higher
                return Vote(message.pid, OUTRANKED, cv, cpid, image), False
            if (free or planted) and type(message) is Repropose and not port.settled(message.pid, message.table,
                                                                                    message.key):  # fmt: skip
                port.accept(make_pending(message), ACCEPT_AGAIN)
                return Vote(message.pid, ACCEPT_AGAIN, cv, cpid, image), True
        return Vote(message.pid, recorded, cv, cpid, image), False
    if cpid == message.pid:  # rule 2: committed here (its vote record dropped with the decision)
        return Vote(message.pid, ACCEPT, cv, cpid, image), False
    if port.settled(message.pid, message.table, message.key):  # rule 3
        return Vote(message.pid, SETTLED, cv, cpid, image), False
    if cv >= message.version:  # rule 4
        return Vote(message.pid, STALE, cv, cpid, image), False
    if not free:  # rule 5
        why = (
            OUTRANKED if rank(held.version, held.coordinator) > rank(message.version, message.coordinator) else CONFLICT
        )
        port.refuse(message.pid, message.table, message.key, why)
        return Vote(message.pid, why, cv, cpid, image), False
    if type(message) is not Status:  # rule 6
        port.accept(make_pending(message))
        return Vote(message.pid, ACCEPT, cv, cpid, image), True
    port.refuse(message.pid, message.table, message.key, FENCED)
    return Vote(message.pid, FENCED, cv, cpid, image), False
