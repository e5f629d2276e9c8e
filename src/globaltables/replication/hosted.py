"""`HostedNode`: what a host loop drives — one region's replication core and its engine — with `MrecRegion`, the
multi-Region eventually consistent one (a `RegionNode` over an `Engine`), and `MrscRegion`, a strong-mode member
(an `MrscNode` over its engine).

Theory of operation (cores step, hosts loop): a host owns the clock and the transport. The region process
(region/replication_host.py, asyncio) and the simulator (sim/cluster.py `NodeDriver`, virtual time) drive a hosted
node with the same calls, each passing its monotonic clock's `now` in seconds and sending every envelope returned:
  - `attach(now, wake)` once, before anything else: from then on the node learns of local commits by itself and
    calls `wake()` whenever `next_deadline()` moved, so the host re-arms its timer; `detach()` at the end;
  - `on_message(envelope, now)` for every envelope that arrives;
  - `poll(now)` when `next_deadline()` has come (None: nothing to do until a commit or a message);
  - `execute(operation, request)`: a client operation enters here (the engine's answer, with its version).

How local commits reach replication, in one way for every host: `MrecRegion.attach` registers an after-commit
listener on the engine (`Engine.add_commit_listener`, engine/commit.py). The engine calls it after a batch's store
transaction committed; when the batch holds a write that originated here (a client write, a TTL deletion, an item
re-asserted over a replicated TTL deletion), the node is told (`RegionNode.on_local_commit`: a poll is due at
once; an idle link ships the write then, a busy one with what follows when an ack comes) and the host woken.
Nobody has to remember to call anything after a write, and a write the engine dropped (an unchanged item, a wall-clock loser) wakes nothing.

A strong-mode member commits through its protocol, not after the fact: a client write is submitted to the node
(`MrscNode.submit_write` and its kin, which the hosts call on `MrscRegion.node`) and commits when a majority agreed,
so `MrscRegion.attach` has no commits to listen to; its host collects finished client operations with
`take_completions()` after every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..engine.answer import Answer
from ..engine.commit import CommitResult
from ..runtime.transport import Envelope
from .mrsc.node import MrscNode
from .node import RegionNode


class HostedNode(Protocol):
    region: str

    def attach(self, now: Callable[[], float], wake: Callable[[], None]) -> None:
        """Start learning of local commits; `now()` is the host's monotonic clock, `wake()` re-arms its timer."""

    def detach(self) -> None:
        """Stop learning of local commits (the host stops, or the region crashes)."""

    def on_message(self, envelope: Envelope, now: float) -> list[Envelope]: ...

    def poll(self, now: float) -> list[Envelope]: ...

    def next_deadline(self) -> float | None: ...

    def execute(self, operation: str, request: Any) -> Answer:
        """A client operation, answered by the region's engine."""


class CommitSource(Protocol):
    """Where local commits come from: the `Engine` (or a test's fake port)."""

    def add_commit_listener(self, listener: Callable[[CommitResult], None]) -> None: ...

    def remove_commit_listener(self, listener: Callable[[CommitResult], None]) -> None: ...


class MrecRegion:
    """One MREC region as a host drives it: the engine answers clients, the `RegionNode` replicates."""

    def __init__(self, engine: Any, node: RegionNode, commits: CommitSource | None = None) -> None:
        """`commits`: where local commits are heard from, the engine unless told (a test's fake port)."""
        self.engine = engine
        self.node = node
        self.region = node.region
        self._commits: CommitSource = commits if commits is not None else engine
        self._now: Callable[[], float] | None = None
        self._wake: Callable[[], None] = _nothing
        self.local_commits = 0  # batches holding a local write, for status

    def attach(self, now: Callable[[], float], wake: Callable[[], None]) -> None:
        if self._now is not None:
            raise RuntimeError(f"region {self.region} is already attached to a host")
        self._now, self._wake = now, wake
        self._commits.add_commit_listener(self._committed)

    def detach(self) -> None:
        if self._now is not None:
            self._commits.remove_commit_listener(self._committed)
            self._now, self._wake = None, _nothing

    def _committed(self, result: CommitResult) -> None:
        if self._now is not None and result.originated_here:
            self.local_commits += 1
            if self.node.on_local_commit(self._now()):
                self._wake()  # only when the deadline moved: a burst of commits re-arms the host's timer once

    def on_message(self, envelope: Envelope, now: float) -> list[Envelope]:
        return self.node.on_message(envelope, now)

    def on_messages(self, envelopes: list[Envelope], now: float) -> list[Envelope]:
        """Envelopes that arrived together: a lane's connecting Ships are applied in one transaction."""
        return self.node.on_messages(envelopes, now)

    def poll(self, now: float) -> list[Envelope]:
        return self.node.poll(now)

    def next_deadline(self) -> float | None:
        return self.node.next_deadline()

    def execute(self, operation: str, request: Any) -> Answer:
        return self.engine.execute(operation, request)


class MrscRegion:
    """One strong-mode (MRSC) member as a host drives it: the node runs the commit protocol, the engine (a
    witness's holds no tables) answers what needs no protocol."""

    def __init__(self, node: MrscNode, engine: Any) -> None:
        self.node = node
        self.engine = engine
        self.region = node.region

    def attach(self, now: Callable[[], float], wake: Callable[[], None]) -> None:
        pass  # commits are the protocol's own (module docstring): nothing to hear of after the fact

    def detach(self) -> None:
        pass

    def on_message(self, envelope: Envelope, now: float) -> list[Envelope]:
        return self.node.on_message(envelope, now)

    def poll(self, now: float) -> list[Envelope]:
        return self.node.poll(now)

    def next_deadline(self) -> float | None:
        return self.node.next_deadline()

    def take_completions(self) -> list[tuple[Any, str, Any]]:
        """The client operations the node finished since the last call: (op_id, outcome, detail)."""
        return self.node.take_completions()

    def execute(self, operation: str, request: Any) -> Answer:
        return self.engine.execute(operation, request)


def _nothing() -> None:
    pass
