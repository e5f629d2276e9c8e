"""Several regions replicating in one process, on virtual time: the deterministic home of MREC tests.

Theory of operation: one `Scheduler`, one `SimNetwork` (the topology's link latencies and jitter as baseline link
settings, FIFO per (src, dest, channel)) and, per region, a `SimClock` (the topology's clock offset), a hybrid
logical clock, an `Engine` over a `MemoryStore` (engine/storage/memory_store.py) and a `RegionNode`, hosted as an
`MrecRegion` (replication/hosted.py) by a `NodeDriver`. The driver is the whole host: deliveries go to
`on_message`, a timer at `next_deadline()` calls `poll`, and every envelope either returns goes to the network;
local commits reach the node through the engine's after-commit listener, as in the region process. Tests issue
client operations at virtual times through `put` / `update` / `delete` / `get` (recorded in a chaos `History` with
the version the engine reports), or through `engine(region).handle(...)`; then `run_until_quiescent()` and read
`final_states()` for the checkers.

Determinism: randomness only from `Rng(seed)` forks; regions, peers and tables in sorted order; no set or dict
iteration whose order could depend on hashing. The same seed gives a byte-identical `trace()` in any process.
`crash(region)` throws away the region's engine object and replication state but keeps its store (the `MemoryStore`
plays the disk: `snapshot` keeps exactly its committed data), as a process killed and restarted would.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..chaos.history import History, key_id
from ..engine.engine import Engine
from ..engine.errors import DynamoError
from ..engine.storage.memory_store import MemoryStore
from ..engine.throttling import FINAL_READ_BACKOFF_S, THROTTLING_ERRORS
from ..replication.config import ReplicationConfig
from ..replication.hlc import HybridLogicalClock
from ..replication.hosted import HostedNode, MrecRegion
from ..replication.node import RegionNode
from ..replication.versions import HlcVersionSource
from ..runtime.ids import seeded_ids
from ..runtime.rng import Rng
from ..runtime.transport import Envelope
from ..topology.model import Topology
from ..topology.plan import region_plans
from .clock import SimClock
from .loop import MICROSECONDS_PER_SECOND, Scheduler
from .network import LinkSettings, SimNetwork

DEFAULT_TABLE = {
    "TableName": "Items",
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    "BillingMode": "PAY_PER_REQUEST",
}


class NodeDriver:
    """Hosts one `HostedNode` (replication/hosted.py) on the scheduler and the simulated network (the simulator's
    counterpart of the region process's asyncio loop)."""

    def __init__(self, node: HostedNode, scheduler: Scheduler, network: SimNetwork) -> None:
        self.node = node
        self.scheduler = scheduler
        self.network = network
        self._timer: list[Any] | None = None
        self._timer_at: float | None = None
        network.register(node.region, self.receive)
        self._attach()
        self.arm()

    def _attach(self) -> None:
        self.node.attach(self.now, self.arm)  # a local commit re-arms the timer

    def now(self) -> float:
        return self.scheduler.now_us / MICROSECONDS_PER_SECOND

    def receive(self, envelope: Envelope) -> None:
        self._send(self.node.on_message(envelope, self.now()))
        self.arm()

    def arm(self) -> None:
        """(Re)schedule the poll timer for the node's next deadline."""
        deadline = self.node.next_deadline()
        if deadline is None:
            return  # a timer already armed just fires and finds nothing to do
        if self._timer is not None and self._timer_at is not None and self._timer_at <= deadline:
            return
        if self._timer is not None:
            self.scheduler.cancel(self._timer)
        when_us = max(math.ceil(deadline * MICROSECONDS_PER_SECOND), self.scheduler.now_us)
        self._timer_at = deadline
        self._timer = self.scheduler.call_at_us(when_us, self._fire)

    def _fire(self) -> None:
        deadline = self._timer_at
        self._timer = self._timer_at = None
        # The timer fires at the deadline rounded up to a microsecond; never let rounding make it look early.
        now = max(self.now(), deadline) if deadline is not None else self.now()
        self._send(self.node.poll(now))
        self.arm()

    def _send(self, envelopes: list[Envelope]) -> None:
        send = self.network.send
        for envelope in envelopes:
            send(envelope)

    def stop(self) -> None:
        self._detach()
        self.network.unregister(self.node.region)
        if self._timer is not None:
            self.scheduler.cancel(self._timer)
        self._timer = self._timer_at = None

    def _detach(self) -> None:
        self.node.detach()


class SimRegion:
    """One region of the cluster: its clock, HLC, engine and replication node."""

    def __init__(self, cluster: SimCluster, name: str, offset_s: float, store: MemoryStore | None = None) -> None:
        self.name = name
        self.cluster = cluster
        self.clock = SimClock(cluster.scheduler, offset_s=offset_s)
        self.store = store if store is not None else MemoryStore()
        self.ids = seeded_ids(cluster.rng.fork(f"ids/{name}"))  # one stream across restarts: no id drawn twice
        self.start()

    def start(self) -> None:
        cluster = self.cluster
        self.hlc = HybridLogicalClock(self.clock, cluster.max_clock_offset_ms, mode=cluster.conflict_clock)
        self.engine = Engine(
            self.store, self.clock, region=self.name, versions=HlcVersionSource(self.hlc, self.name), ids=self.ids,
            capacity=cluster.capacity_of(self.name),
        )  # fmt: skip
        peers = [region for region in cluster.region_names if region != self.name]
        self.node = cluster.node_factory(self.name, peers, self.engine.replica, cluster.config, self.hlc)
        self.hosted = MrecRegion(self.engine, self.node)
        self.driver = NodeDriver(self.hosted, cluster.scheduler, cluster.network)
        self.up = True

    def crash(self) -> None:
        self.driver.stop()
        self.up = False
        self.store = reopen(self.store)


def scan_items(
    engine: Engine, table: str, *, consistent: bool = True, wait: Callable[[float], None] | None = None
) -> dict[str, dict]:
    """key_id -> item of every item of an engine's table, read with paginated Scans (consistent ones unless told
    otherwise), in key_id order. `wait(seconds)`: lets time pass (the simulator's) before a throttled page is read
    again (FINAL_READ_BACKOFF_S); without it a throttle is raised."""
    names = engine.table(table).key.names
    result: dict[str, dict] = {}
    request: dict[str, Any] = {"TableName": table, "ConsistentRead": consistent}
    backoff = iter(FINAL_READ_BACKOFF_S)
    while True:
        try:
            response = engine.handle("Scan", request)
        except THROTTLING_ERRORS:
            delay = next(backoff, None) if wait is not None else None
            if delay is None:
                raise
            wait(delay)
            continue
        for item in response["Items"]:
            result[key_id({name: item[name] for name in names})] = item
        last = response.get("LastEvaluatedKey")
        if not last:
            break
        request = {**request, "ExclusiveStartKey": last}
    return dict(sorted(result.items()))


def reopen(store: Any) -> Any:
    """What a restarted process finds on disk: a fresh store holding exactly the committed data of `store` (an
    in-memory store cannot be opened twice; the engine's hooks and caches stay with the old object)."""
    fresh = store.snapshot()
    store.close()
    return fresh


NodeFactory = Callable[[str, list[str], Any, ReplicationConfig, HybridLogicalClock], RegionNode]


def default_node_factory(
    region: str, peers: list[str], port: Any, config: ReplicationConfig, hlc: HybridLogicalClock
) -> RegionNode:
    return RegionNode(region, peers, port, config, hlc=hlc)


class SimCluster:
    def __init__(
        self,
        topology: Topology | Iterable[str],
        seed: int = 0,
        *,
        lanes: int | None = None,
        config: ReplicationConfig | None = None,
        tables: Iterable[dict] | None = None,
        link: LinkSettings | None = None,
        journal: bool = True,
        conflict_clock: str | None = None,
        max_clock_offset_ms: float | None = None,
        port_wrapper: Callable[[str, Any], Any] | None = None,
        capacity: Any = "unlimited",
    ) -> None:
        """`topology`: a loaded Topology, or just region names (then `link` is every link's settings, default
        40 ms + up to 2 ms uniform jitter). `tables`: CreateTable requests (default: the topology's, else one
        table "Items" keyed by the string `pk`). `port_wrapper(region, port)` lets a test interpose on the engine port
        (e.g. to plant a bug); production code has no such hook. `capacity`: every engine's capacity option
        (engine/throughput.py): "unlimited" by default (docs/capacity.md, decision 12), "modelled" to throttle
        on the simulator's virtual clock, local and replicated writes alike; or a mapping region -> option, each
        region's own (a topology's per-region `capacity:`, as `globaltables run --simulated` passes it), a region
        it leaves out unlimited."""
        self.seed = seed
        self.capacity = capacity
        self.rng = Rng(seed)
        self.scheduler = Scheduler()
        # A loaded Topology (each region simulated from its RegionPlan, as a region process runs), or region names.
        plans = region_plans(topology) if isinstance(topology, Topology) else None
        names = list(plans) if plans is not None else list(topology)
        if len(set(names)) != len(names) or len(names) < 2:
            raise ValueError(f"a cluster needs two or more distinct regions, not {names!r}")
        self.region_names = tuple(names)
        first = plans[names[0]] if plans is not None else None
        self.conflict_clock = conflict_clock or (first.conflict_clock if first is not None else "hlc")
        self.max_clock_offset_ms = int(
            max_clock_offset_ms if max_clock_offset_ms is not None
            else (first.max_clock_offset_ms if first is not None else 500)
        )  # fmt: skip
        base = config or ReplicationConfig()
        self.config = base if lanes is None else ReplicationConfig(**{**_fields(base), "lanes": lanes})
        default_link = link or LinkSettings(latency_ms=40, jitter_ms=2)
        self.network = SimNetwork(self.scheduler, self.rng.fork("network"), default_link, journal=journal)
        for plan in (plans or {}).values():
            for peer in plan.peers:
                self.network.set_baseline(
                    plan.name,
                    peer.name,
                    default_link.replace(latency_ms=peer.link.latency_ms, jitter_ms=peer.link.jitter_ms),
                )
        self._port_wrapper = port_wrapper
        self.node_factory: NodeFactory = self._wrapped_factory
        self.observer_clock = SimClock(self.scheduler)  # true time, for the history
        self.history = History(self.observer_clock)
        self.regions: dict[str, SimRegion] = {}
        for name in names:
            offset = plans[name].clock_offset_ms / 1000 if plans is not None else 0.0
            self.regions[name] = SimRegion(self, name, offset)
        self.table_names: list[str] = []
        if tables is None and first is not None and first.tables:
            # Each region runs its own CreateTable request: the table's, with its replica's read settings.
            for spec in first.tables:
                self.create_global_table(spec.request(), {name: spec.request_for(name) for name in names})
        else:
            for request in tables if tables is not None else [DEFAULT_TABLE]:
                self.create_global_table(dict(request))
        self._process = 0

    def capacity_of(self, region: str) -> Any:
        """The capacity option `region`'s engine is made with (at the start and at every restart)."""
        if isinstance(self.capacity, Mapping):
            return self.capacity.get(region, "unlimited")
        return self.capacity

    def _wrapped_factory(
        self, region: str, peers: list[str], port: Any, config: ReplicationConfig, hlc: HybridLogicalClock
    ) -> RegionNode:
        if self._port_wrapper is not None:
            port = self._port_wrapper(region, port)
        return default_node_factory(region, peers, port, config, hlc)

    # ----------------------------------------------------------------------------------------------- set-up

    def create_global_table(self, request: dict, per_region: dict[str, dict] | None = None) -> None:
        """`request` made a global table in every region (`per_region[name]`: that region's own request)."""
        name = request["TableName"]
        for region in self.regions.values():
            region.engine.handle("CreateTable", {**(per_region or {}).get(region.name, request)})
            region.engine.replica.make_global(name, list(self.region_names), self.config.lanes)
        self.table_names.append(name)

    # ------------------------------------------------------------------------------------------------ access

    def region(self, name: str) -> SimRegion:
        return self.regions[name]

    def engine(self, region: str) -> Engine:
        return self.regions[region].engine

    def node(self, region: str) -> RegionNode:
        return self.regions[region].node

    def clock(self, region: str) -> SimClock:
        return self.regions[region].clock

    def now(self) -> float:
        return self.scheduler.time()

    # ------------------------------------------------------------------------------------- client operations

    def at(self, when: float, callback: Callable[..., Any], *args: Any) -> None:
        self.scheduler.call_at(when, callback, *args)

    def next_process(self) -> int:
        self._process += 1
        return self._process

    def _client(
        self, region: str, f: str, table: str, key: dict, value: Any, operation: str, request: dict, process: Any
    ) -> tuple[str, Any]:
        """Run one operation as a client would, recording invoke and completion; (completion type, response)."""
        process = self.next_process() if process is None else process
        history = self.history
        op = history.invoke(process, region, f, table, key, value)
        state = self.regions[region]
        if not state.up:
            history.fail(op, "ConnectionRefused")  # the request never reached a process: certainly not applied
            return "fail", None
        try:
            response, version = state.hosted.execute(operation, request)
        except DynamoError as error:
            completion = history.error(op, type(error).__name__)
            return completion.type, None
        if f in ("put", "update", "delete"):
            history.ok(op, version=version)
        else:
            item = response.get("Item")
            history.ok(op, value=None if item is None else item.get("value"), version=version)
        return "ok", response

    def put(self, region: str, table: str, item: dict, *, process: Any = None, **extra: Any) -> tuple[str, Any]:
        """PutItem of `item` (normalised wire form); its `value` attribute is the history's value."""
        key = self._key_of(table, item)
        request = {"TableName": table, "Item": item, **extra}
        return self._client(region, "put", table, key, item.get("value"), "PutItem", request, process)

    def update(
        self, region: str, table: str, key: dict, value: dict, *, process: Any = None, **extra: Any
    ) -> tuple[str, Any]:
        """UpdateItem setting the `value` attribute to `value` (e.g. {"S": "w-17"})."""
        request = {
            "TableName": table, "Key": key, "UpdateExpression": "SET #v = :v",
            "ExpressionAttributeNames": {"#v": "value"}, "ExpressionAttributeValues": {":v": value}, **extra,
        }  # fmt: skip
        return self._client(region, "update", table, key, value, "UpdateItem", request, process)

    def delete(self, region: str, table: str, key: dict, *, process: Any = None, **extra: Any) -> tuple[str, Any]:
        request = {"TableName": table, "Key": key, **extra}
        return self._client(region, "delete", table, key, None, "DeleteItem", request, process)

    def get(self, region: str, table: str, key: dict, *, process: Any = None) -> tuple[str, Any]:
        request = {"TableName": table, "Key": key, "ConsistentRead": True}
        return self._client(region, "get", table, key, None, "GetItem", request, process)

    def _key_of(self, table: str, item: dict) -> dict:
        names = self.regions[self.region_names[0]].engine.table(table).key.names
        return {name: item[name] for name in names}

    # ---------------------------------------------------------------------------------------------- running

    def run_until(self, when: float, max_events: int | None = None) -> int:
        return self.scheduler.run_until(when, max_events)

    def run_for(self, duration: float, max_events: int | None = None) -> int:
        return self.scheduler.run_for(duration, max_events)

    def run_until_quiescent(self, max_events: int = 5_000_000) -> int:
        """Run until nothing is scheduled: every client operation done, every message delivered or dropped,
        every link acknowledged (or failed). Raises SchedulerBoundExceeded on a livelock (e.g. a partition that
        never heals keeps retransmitting)."""
        return self.scheduler.run_until_idle(max_events)

    def quiescent(self) -> bool:
        return all(region.node.idle() for region in self.regions.values() if region.up)

    # ----------------------------------------------------------------------------------------------- faults

    def partition(self, a: str, b: str, *, one_way: bool = False) -> None:
        self.network.partition(a, b, one_way=one_way)
        self.history.fault("partition", [a, b, "one-way" if one_way else "both"])

    def heal(self) -> None:
        self.network.heal()
        self.history.fault("heal")

    def crash(self, region: str) -> None:
        """Kill the region: its volatile state is gone; its store (committed data, positions) survives."""
        self.regions[region].crash()
        self.history.fault("crash", None, region)

    def restart(self, region: str) -> None:
        self.regions[region].start()
        self.history.fault("restart", None, region)

    # ---------------------------------------------------------------------------------------------- reading

    def items(self, region: str, table: str) -> dict[str, dict]:
        """key_id -> item of every item the region's table holds, read with paginated consistent Scans."""
        return scan_items(self.regions[region].engine, table)

    def final_states(self) -> dict[str, dict[str, dict[str, dict]]]:
        """{region: {table: {key_id: item}}}, the checkers' shape."""
        return {
            region: {table: self.items(region, table) for table in self.table_names} for region in self.region_names
        }

    def trace(self) -> str:
        """The network journal as text (one line per send, delivery, drop and fault)."""
        return "".join(line + "\n" for line in self.network.trace_lines())

    def status(self) -> dict[str, Any]:
        return {name: region.node.status() for name, region in self.regions.items() if region.up}


def _fields(config: ReplicationConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in config.__slots__}
