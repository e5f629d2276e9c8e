"""The asyncio host of one region's replication core: a `RegionNode` driven over the `HttpTransport`.

Theory of operation (cores step, hosts loop — docs/replication.md "Layers"):
- The node is hosted as an `MrecRegion` (replication/hosted.py), exactly as the simulator hosts it. Local writes:
  its after-commit listener on the engine hears of every committed batch holding a write that originated here (TTL
  deletes included), tells the node (`on_local_commit`) and wakes the poller.
- The poller task sleeps until the node's `next_deadline()` (or a wake-up), calls `poll(now)` and hands every
  envelope it returns to the transport.
- Incoming envelopes (the transport's receive handler) are queued and handed over together at the loop's next
  turn (`on_messages(envelopes, now)`: a lane's connecting Ships apply in one transaction), as grouped work of
  the region's committer (group_commit.py): the applies join the group commit of the client writes of that turn,
  and the answers (acks) are sent, and the poller woken, only once the group committed.
- `now` is always the unskewed monotonic clock: skewing the region's wall clock (clock faults) moves stamps and
  TTL, never timers.

Peers and their endpoints: the peer list and link delays come from the topology (through `ReplicationSettings`,
which plan_settings.py builds from the region's `topology.RegionPlan`). An endpoint is known up front when the topology pins
the peer's port, or given later: the supervisor writes every region's endpoint into its `state.json`, which each
region passed `--peers-file` polls (cheaply: it re-reads the file only when its modification time changes). A
restarted region therefore finds its peers at once, and a region that comes back on a new port is found again.
`POST /control/peers` sets endpoints by hand (regions on different hosts).

At start-up the host also makes the topology's declared tables exist here as global tables (CreateTable, then
`make_global` with every replica region), before the region announces itself: so `up` is ready only once every
region holds every table, and a restart finds them already there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..engine.engine import Engine
from ..engine.errors import ResourceInUseException
from ..engine.mutation import Mutation
from ..replication.config import ReplicationConfig
from ..replication.hlc import HybridLogicalClock, Version
from ..replication.hosted import MrecRegion
from ..replication.mrsc.config import MrscConfig
from ..replication.node import RegionNode
from ..replication.versions import HlcVersionSource
from ..runtime.transport import Envelope
from .apply_decisions import ApplyDecisions
from .group_commit import GroupCommit
from .host_base import RegionHost, peer_transport
from .replica_coordinator import ReplicaCoordinator
from .replication_metrics import ReplicationMetrics, prometheus_text
from .skewed_clock import SkewedClock

log = logging.getLogger("globaltables.replication.host")

POLL_FAILURE_PAUSE_S = 1.0
# The replication inbox applied in one turn of the loop (and one group commit) at most: about 3,500 records of a
# backlog (`_take_inbox`).
INBOX_TURN_BYTES = 1_000_000


@dataclass(frozen=True)
class PeerSettings:
    name: str
    endpoint: str | None = None  # None: learned later (peers file or control API)
    latency_ms: float = 0.0  # one-way delay from this region to the peer
    jitter_ms: float = 0.0


@dataclass(frozen=True)
class ReplicationSettings:
    """What one region needs to replicate; plain data (plan_settings.py makes it from a topology.RegionPlan)."""

    peers: tuple[PeerSettings, ...]
    secret: str
    tables: tuple[Mapping[str, Any], ...] = ()  # CreateTable requests of the declared global tables
    replicas: tuple[str, ...] = ()  # every region holding the tables (this one included)
    conflict_clock: str = "hlc"
    max_clock_offset_ms: float = 500
    clock_offset_ms: float = 0
    peers_file: Path | None = None
    role: str = "replica"
    config: ReplicationConfig = field(default_factory=ReplicationConfig)
    # Strong mode (region/mrsc_host.py): the peers are the other two members, `replicas` the replica regions.
    mode: str = "mrec"
    witness: str | None = None
    mrsc: MrscConfig | None = None  # None: the defaults


def make_clocks(settings: ReplicationSettings) -> tuple[SkewedClock, HybridLogicalClock]:
    """The region's (possibly skewed) system clock and the HLC over it; clock faults act on the former."""
    clock = SkewedClock(offset_s=settings.clock_offset_ms / 1000.0)
    hlc = HybridLogicalClock(clock, int(settings.max_clock_offset_ms), mode=settings.conflict_clock)  # type: ignore[arg-type]
    return clock, hlc


class ReplicationHost(RegionHost):
    def __init__(
        self, engine: Engine, settings: ReplicationSettings, clock: SkewedClock, hlc: HybridLogicalClock
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.clock = clock
        self.hlc = hlc
        self.region = engine.region
        self.baseline_offset_s = clock.offset_s
        self.transport = peer_transport(self.region, settings)
        # Lag of the links into this region, on the unskewed wall clock (replication_metrics.py).
        self.metrics = ReplicationMetrics(self.region, time.time)
        # Every apply decision, for the lost-write ledger (apply_decisions.py).
        self.decisions = ApplyDecisions()
        engine.replica.on_decision = self.decisions.record
        self.node = RegionNode(
            self.region,
            [peer.name for peer in settings.peers],
            engine.replica,
            settings.config,
            hlc=hlc,
            on_applied=self._applied,
        )
        self.hosted = MrecRegion(engine, self.node)  # what the poller and the transport drive
        # Replicas added and removed through UpdateTable (replica_coordinator.py): any region of the topology.
        engine.membership.configure([peer.name for peer in settings.peers], settings.config.lanes)
        self.coordinator = ReplicaCoordinator(engine, self.node, settings.secret, self.transport.endpoint, self.wake)
        self.transport.register(self.region, self._on_envelope)
        self._wake = asyncio.Event()
        self._inbox: list[Envelope] = []  # received, not yet handed to the node (`_on_envelope`)
        self.committer = GroupCommit(engine)  # the region's (the HTTP front's writes join it too)
        self._peers_file_mtime: int | None = None
        self.poll_failures = 0

    # ------------------------------------------------------------------------------------------ start-up

    def prepare(self) -> None:
        """Before serving: the HLC above every stored version, the declared tables present and global, and the
        node attached to the engine's commits."""
        floor = self.engine.store.highest_version()
        if floor is not None:
            self.hlc.observe_floor(Version.parse(floor).stamp)
        replicas = sorted(set(self.settings.replicas) | {self.region})
        lanes = self.settings.config.lanes
        store = self.engine.store
        for request in self.settings.tables:
            name = request["TableName"]
            # The topology's replica list is applied when it differs from the one applied last time: a restart
            # with an unchanged topology file keeps what UpdateTable ReplicaUpdates made of the table since (a
            # replica added or removed, this region's own replica deleted), and an edited topology file wins.
            declared = orjson.dumps({"replicas": replicas, "lanes": lanes}).decode()
            if store.setting(f"declared-table:{name}") == declared:
                continue
            if name not in self.engine.tables:
                with contextlib.suppress(ResourceInUseException):
                    self.engine.handle("CreateTable", dict(request))
            table = self.engine.tables[name]
            if sorted(table.replicas) != replicas or table.replication_lanes != lanes:
                self.engine.replica.make_global(name, replicas, lanes)
            store.save_setting(f"declared-table:{name}", declared)
        self.hosted.attach(time.monotonic, self._wake.set)
        self._read_peers_file()

    async def run(self) -> None:
        """For the region's serving life, until cancelled: the transport's links, the poller, the membership
        coordinator and the peers-file watcher, children of one TaskGroup (cancelling this cancels them all)."""
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self.transport.run(), name="replication-links")
                tasks.create_task(self._poller(), name="replication-poller")
                tasks.create_task(self.coordinator.run(), name="replica-membership")
                if self.settings.peers_file is not None:
                    tasks.create_task(self._watch_peers_file(), name="replication-peers-file")
                self._wake.set()  # a first poll ships whatever the log holds (e.g. unacknowledged records after a restart)
        finally:
            self.hosted.detach()  # local commits stop reaching a node nothing drives any more

    # ---------------------------------------------------------------------------------------------- driving

    def _on_envelope(self, envelope: Envelope) -> None:
        """Queue the envelope; the queue is handed to the node at the loop's next turn, so everything the links
        received meanwhile goes together (a lane's connecting Ships are applied in one transaction, which is how a
        backlog drains in few commits). While the node applies, the sockets fill, so a busy region batches more."""
        self._inbox.append(envelope)
        if len(self._inbox) == 1:
            self.committer.submit(InboxWork(self))

    def _submit_inbox(self) -> None:
        """The rest of an inbox `_take_inbox` left for this turn (unless envelopes since have submitted it)."""
        if self._inbox:
            self.committer.submit(InboxWork(self))

    def _take_inbox(self) -> list[Envelope]:
        """Hand the node the inbox, or its first INBOX_TURN_BYTES (a backlog's Ships, some 3,500 records): the rest
        waits for the loop's next turn, so the acks of what was applied leave (and the sender refills its window)
        while the rest is applied, instead of the whole window being applied before any ack."""
        inbox = self._inbox
        taken = 0
        size = 0
        while taken < len(inbox) and size < INBOX_TURN_BYTES:
            body = inbox[taken].body
            size += len(body) if isinstance(body, bytes) else 0
            taken += 1
        envelopes, self._inbox = inbox[:taken], inbox[taken:]
        if self._inbox:
            asyncio.get_running_loop().call_soon(self._submit_inbox)
        try:
            return self.hosted.on_messages(envelopes, time.monotonic())
        except Exception:  # as a failing handler on the transport: the messages are lost, the senders retransmit
            log.exception("replication messages failed")
            return []

    def _send_answers(self, answers: list[Envelope]) -> None:
        send = self.transport.send
        for answer in answers:
            send(answer)
        self._wake.set()

    async def _poller(self) -> None:
        node = self.hosted
        send = self.transport.send
        wake = self._wake
        while True:
            now = time.monotonic()
            deadline = node.next_deadline()
            if deadline is not None and deadline <= now:
                try:
                    for envelope in node.poll(now):
                        send(envelope)
                except Exception:  # keep the region serving; retry after a pause rather than in a hot loop
                    self.poll_failures += 1
                    log.exception("replication poll failed")
                    await asyncio.sleep(POLL_FAILURE_PAUSE_S)
                await asyncio.sleep(0)  # let requests run between polls
                continue
            wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if deadline is None else deadline - now):
                    await wake.wait()

    # ----------------------------------------------------------------------------------------------- status

    def status(self) -> dict[str, Any]:
        statistics = self.hlc.statistics()
        return {
            "region": self.region,
            "role": self.settings.role,
            "conflict_clock": statistics.mode,
            "clock_offset_ms": round(self.clock.offset_s * 1000.0, 3),
            "clock": self.clock.status(),
            "hlc": {
                "last": statistics.last.encode(),
                "remote_ahead_count": statistics.remote_ahead_count,
                "max_remote_ahead_ms": statistics.max_remote_ahead_ms,
                "max_offset_ms": self.hlc.max_offset_ms,
            },
            "local_commits": self.hosted.local_commits,
            "poll_failures": self.poll_failures,
            "idle": self.node.idle(),
            "replication_lag": self.inbound_lag().status(),
            "membership": self.coordinator.status(),
            "transport": self.transport.status(),
            **{key: value for key, value in self.node.status().items() if key != "region"},
        }


    # ---------------------------------------------------------------------------------------------- metrics

    def _applied(self, origin: str, table: str, records: Sequence[Mutation]) -> None:
        """Records a Ship applied: their lag is sampled once the apply is durable, i.e. after the group commit that
        holds it (replication_metrics.py), and never if that commit fails (they were not applied)."""
        metrics = self.metrics
        self.engine.after_commit(lambda: metrics.on_applied(origin, table, records))

    def wake(self) -> None:
        self._wake.set()

    def inbound_lag(self) -> ReplicationMetrics:
        """The lag histograms, pruned to the links into this region now (every one shown, even before its first
        record; those of a removed replica go)."""
        port = self.engine.replica
        current = {(peer, table) for table in port.global_tables() for peer in port.peers(table)}
        for key in [key for key in self.metrics.lag if key not in current]:
            del self.metrics.lag[key]
        self.metrics.ensure(sorted(current))
        return self.metrics

    def prometheus(self) -> str:
        """`/metrics`: ReplicationLatency of the links into this region, PendingReplicationCount of those out."""
        pending: dict[tuple[str, str], int] = {}
        for link in self.node.status()["links"]:
            key = (link["table"], link["peer"])
            pending[key] = pending.get(key, 0) + link["pending"]
        return prometheus_text(self.inbound_lag(), pending) + self.committer.prometheus()


class InboxWork:
    """The replication inbox as the committer's grouped work (group_commit.Work): applied in a group of its own,
    whole (group_commit.py rule 5: no savepoint per apply, a third of a backlog's cost), the answers sent once it
    committed; if it fails, nothing of it took effect and none is sent (the senders retransmit what was not
    acknowledged)."""

    __slots__ = ("host",)
    grouped = True
    whole = True
    batch = None  # alone: nothing to phase

    def __init__(self, host: ReplicationHost) -> None:
        self.host = host

    def run(self) -> list[Envelope]:
        return self.host._take_inbox()

    def deliver(self, answers: list[Envelope]) -> None:
        self.host._send_answers(answers)

    def fail(self) -> None:
        log.warning("replication applies failed with their group commit; the senders retransmit")
        self.host._wake.set()


def versions_for(hlc: HybridLogicalClock, region: str) -> HlcVersionSource:
    return HlcVersionSource(hlc, region)
