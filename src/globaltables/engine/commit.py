"""What `Engine.commit` gives back, and what it tells after-commit listeners: `CommitResult`.

A listener (`Engine.add_commit_listener`) is told of every batch of item writes after its store transaction
committed, never inside it: it may read the store, but must not write items from inside the call (the writes it
would make are the next commit, not part of this one). The replication core's host registers one
(replication/hosted.py) to learn of local commits; it is the only way local commits reach replication, the same in
the region process and in the simulator.
"""

from __future__ import annotations

from collections.abc import Callable

from .storage.records import ItemWrite


class CommitResult:
    """The item writes one `Engine.commit` made durable, in order (writes dropped by stamping excluded: an
    unchanged item of a global table, a wall-clock write that lost). A slotted class rather than a NamedTuple: one
    is built per commit, on the write path, and this is the cheapest to build."""

    __slots__ = ("writes",)

    def __init__(self, writes: list[ItemWrite]) -> None:
        self.writes = writes

    @property
    def originated_here(self) -> bool:
        """Whether any of the writes originated in this region (a client write, a TTL deletion, a re-asserted
        item), i.e. whether replication has something new to ship; replicated applies have an origin."""
        for write in self.writes:  # a plain loop: several times cheaper than any() over a generator
            if write.origin is None:
                return True
        return False

    @property
    def local_writes(self) -> list[ItemWrite]:
        return [write for write in self.writes if write.origin is None]

    def __repr__(self) -> str:
        return f"CommitResult({self.writes!r})"


class GroupCommitFailed(Exception):
    """A group commit (`Engine.commit_group`) did not commit: none of the group's writes took effect. Raised from
    the store's error."""


CommitListener = Callable[[CommitResult], None]

NOTHING = CommitResult([])  # what a commit that wrote no item returns (and tells no listener)
