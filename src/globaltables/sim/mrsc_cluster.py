"""Three MRSC members on virtual time: the deterministic home of strong-mode tests (docs/mrsc.md).

Theory of operation: the same `Scheduler`, `SimNetwork` and `SimClock` as sim/cluster.py's MREC `SimCluster`; per
member a `MemoryStore` (its "disk"), a `StrongStore` (replication/mrsc/store.py) and an `MrscNode` hosted by an
`MrscDriver` (sim/cluster.py's `NodeDriver`, which also hands the node's completed client operations back to the
cluster). Replicas run a real `Engine` with the tables, made strong as a region process makes its topology's
tables (`make_strong`); the witness's store holds no tables (`api` is the engine its region would answer requests
with, as the region process has one). Client operations are asynchronous, as over HTTP: `write` / `read` record
the invocation in the History at once and the completion when the node reports it (or `info` if the member crashes
first). `crash(member)` drops the node and its in-flight operations and keeps the store's committed data (the disk:
its snapshot); `restart(member)` starts a fresh node on it, which resolves what it held pending first.

Two ways in: the checkers' workloads use `write` / `read` / `query` (recorded here, with a `value` attribute); a
region host's request path (region/mrsc_requests.py, driven by the pytest kit's simulated harness) runs each node
operation it waits for through `host(region, submit, on_done, guard_s=...)`, which reports the completion, an
"in-doubt" after the guard (as the region process's guard answers), or "crashed" if the member goes down first.
`from_topology` builds a cluster from a loaded `mode: mrsc` topology (members, witness, link latencies, clock
offsets, tables).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..chaos.conditions import register_condition
from ..chaos.history import History
from ..engine.engine import Engine
from ..engine.errors import DynamoError, ValidationException
from ..engine.operations.write_preparers import PREPARE
from ..engine.schema import validate_item_size
from ..engine.storage.memory_store import MemoryStore
from ..engine.strong import make_strong
from ..replication.hosted import MrscRegion
from ..replication.mrsc.config import MrscConfig
from ..replication.mrsc.node import MrscNode
from ..replication.mrsc.records import item_id
from ..replication.mrsc.store import StrongStore
from ..replication.mrsc.witness import MrscWitness
from ..runtime.ids import seeded_ids
from ..runtime.rng import Rng
from ..topology.model import Topology
from ..topology.plan import region_plans
from .clock import SimClock
from .cluster import DEFAULT_TABLE, NodeDriver, reopen, scan_items
from .loop import Scheduler
from .network import LinkSettings, SimNetwork

OPERATION = {"put": "PutItem", "update": "UpdateItem", "delete": "DeleteItem"}


class MrscDriver(NodeDriver):
    """A `NodeDriver` that also passes the node's completed client operations to the cluster."""

    def __init__(self, node: MrscRegion, scheduler: Scheduler, network: SimNetwork, on_done: Callable) -> None:
        self.on_done = on_done
        super().__init__(node, scheduler, network)

    def run(self, envelopes: list) -> None:
        """Send what a host-side call to the node returned, then hand over completions and re-arm the timer."""
        self._send(envelopes)
        for completion in self.node.take_completions():
            self.on_done(*completion)
        self.arm()

    def receive(self, envelope) -> None:
        self.run(self.node.on_message(envelope, self.now()))

    def _fire(self) -> None:
        deadline = self._timer_at
        self._timer = self._timer_at = None
        now = max(self.now(), deadline) if deadline is not None else self.now()
        self.run(self.node.poll(now))


class MrscMember:
    def __init__(self, cluster: MrscCluster, name: str, witness: bool, offset_s: float = 0.0) -> None:
        self.cluster = cluster
        self.name = name
        self.witness = witness
        self.clock = SimClock(cluster.scheduler, offset_s=offset_s)
        self.ids = seeded_ids(cluster.rng.fork(f"ids/{name}"))  # one stream across restarts: no id drawn twice
        self.store = cluster.make_store()
        self.engine: Engine | None = None  # a replica's tables; None for the witness
        self.api: Engine | None = None  # what the region's API answers with: the engine (a witness's has no tables)
        self.up = False

    def start(self) -> None:
        cluster = self.cluster
        capacity = "unlimited" if self.witness else cluster.capacity_of(self.name)
        self.api = Engine(self.store, self.clock, region=self.name, ids=self.ids, capacity=capacity)
        self.engine = None if self.witness else self.api
        self.strong = StrongStore(self.store, self.engine, self.name)
        others = cluster.others(self.name)
        self.api.strong_membership.configure([self.name, *others], cluster.witness)
        node_class = MrscWitness if self.witness else MrscNode
        self.node = node_class(self.name, others, self.strong, cluster.config)
        if cluster.on_node is not None:
            cluster.on_node(self.name, self.node)
        self.driver = MrscDriver(MrscRegion(self.node, self.api), cluster.scheduler, cluster.network, cluster._done)
        self.up = True
        self.driver.run(self.node.start(self.driver.now()))

    def crash(self) -> None:
        self.driver.stop()
        self.up = False
        self.store = reopen(self.store)


class MrscCluster:
    def __init__(
        self,
        members: tuple[str, str, str] = ("us-east-1", "us-east-2", "us-west-2"),
        *,
        witness: str | None = "us-west-2",
        seed: int = 0,
        link: LinkSettings | None = None,
        config: MrscConfig | None = None,
        table: dict | None = None,
        journal: bool = False,
        tables: Iterable[dict] | None = None,
        links: Mapping[tuple[str, str], LinkSettings] | None = None,
        clock_offsets: Mapping[str, float] | None = None,
        make_store: Callable[[], Any] = MemoryStore,
        on_node: Callable[[str, Any], None] | None = None,
        capacity: Any = "unlimited",
    ) -> None:
        """`link`: every link's settings (default 30 ms + up to 2 ms uniform jitter); `links[(src, dest)]`: a
        directed link's own (the topology's). `tables`: CreateTable requests (default: `table`, else one table
        "Items" keyed by the string `pk`); the first is the table of `write` / `read` / `query`. `clock_offsets`:
        seconds each member's wall clock is ahead (negative: behind). `make_store`: each member's empty store (its
        "disk"; any store of engine/storage: tests hold the protocol to the same history on each). `on_node(member,
        node)`: called with every node a member (re)starts with, before it runs (a test plants bugs in it there).
        `capacity`: each replica's engine capacity option (engine/throughput.py), one for all or a mapping region ->
        option: "unlimited" by default (docs/capacity.md, decision 12), "modelled" to admit strong writes against the
        member's buckets on the virtual clock as a region process does (decision 21); a witness models none."""
        if len(set(members)) != 3 or (witness is not None and witness not in members):
            raise ValueError(f"an MRSC cluster has three distinct members (a witness among them), not {members!r}")
        self.scheduler = Scheduler()
        self.make_store = make_store
        self.on_node = on_node
        self.capacity = capacity
        self.rng = Rng(seed)
        self.config = config or MrscConfig()
        self.network = SimNetwork(
            self.scheduler, self.rng.fork("network"), link or LinkSettings(latency_ms=30, jitter_ms=2), journal=journal
        )
        for (source, dest), settings in sorted((links or {}).items()):
            self.network.set_baseline(source, dest, settings)
        self.member_names = tuple(members)
        self.witness = witness
        self.history = History(SimClock(self.scheduler))
        offsets = clock_offsets or {}
        self.members = {name: MrscMember(self, name, name == witness, offsets.get(name, 0.0)) for name in members}
        requests = [dict(request) for request in tables] if tables is not None else [dict(table or DEFAULT_TABLE)]
        self.table = requests[0]
        self.table_name = self.table["TableName"]
        self.table_names = [request["TableName"] for request in requests]
        replicas = self.replicas()
        for member in self.members.values():
            if not member.witness:
                engine = Engine(member.store, member.clock, region=member.name, ids=member.ids)
                for request in requests:
                    engine.handle("CreateTable", dict(request))
                    make_strong(engine, request["TableName"], replicas, witness)
            member.start()
        self._ops: dict[int, tuple[str, Any, str, Any]] = {}  # op id -> (member, history op, f, request)
        self._hosted: dict[int, tuple[str, Callable[[str, Any], None], Any]] = {}  # op id -> (member, on_done, guard)
        self._next = 0
        self.on_complete: Callable[[Any, str], None] | None = None  # (process, member) after every completion

    @classmethod
    def from_topology(
        cls, topology: Topology, seed: int = 0, *, config: MrscConfig | None = None, journal: bool = True,
        on_node: Callable[[str, Any], None] | None = None,
        capacity: Any = "unlimited",
    ) -> MrscCluster:  # fmt: skip
        """The cluster of a loaded `mode: mrsc` topology, each member from its RegionPlan (as a region process
        runs): its three regions (the witness by role), each directed link's latency and jitter, the regions' clock
        offsets and the declared tables."""
        plans = region_plans(topology)
        names = tuple(plans)
        first = plans[names[0]]
        links = {
            (plan.name, peer.name): LinkSettings(latency_ms=peer.link.latency_ms, jitter_ms=peer.link.jitter_ms)
            for plan in plans.values()
            for peer in plan.peers
        }
        return cls(
            names,  # type: ignore[arg-type]
            witness=first.witness,
            seed=seed,
            config=config,
            journal=journal,
            tables=[spec.request() for spec in first.tables] or None,
            links=links,
            clock_offsets={name: plan.clock_offset_ms / 1000 for name, plan in plans.items()},
            on_node=on_node,
            capacity=capacity,
        )

    def capacity_of(self, region: str) -> Any:
        """The capacity option `region`'s engine is made with (at the start and at every restart)."""
        if isinstance(self.capacity, Mapping):
            return self.capacity.get(region, "unlimited")
        return self.capacity

    # The shape chaos.target.SimTarget drives (as sim/cluster.py's SimCluster has it).

    @property
    def region_names(self) -> tuple[str, ...]:
        return self.member_names

    def region(self, name: str) -> _MemberProcess:
        return _MemberProcess(self, name)

    def clock(self, name: str) -> SimClock:
        return self.members[name].clock

    def others(self, name: str) -> list[str]:
        """The other two members, nearest first (by the links' configured latency), ties by name."""
        rest = [m for m in self.member_names if m != name]
        return sorted(rest, key=lambda m: (self.network.link_settings(name, m).latency_ms, m))

    def replicas(self) -> list[str]:
        return [name for name, member in self.members.items() if not member.witness]

    def now(self) -> float:
        return self.scheduler.time()

    # ------------------------------------------------------------------------------------- client operations

    def write(self, region: str, f: str, key: dict, value: Any = None, *, process: Any, **extra: Any) -> None:
        """Start a put (item = key + value), update (SET value) or delete, as `process`, in `region`."""
        table = self.table_name
        if f == "put":
            request = {"TableName": table, "Item": {**key, "value": value}, **extra}
        elif f == "update":
            request = {
                "TableName": table, "Key": key, "UpdateExpression": "SET #v = :v",
                "ExpressionAttributeNames": {"#v": "value"}, "ExpressionAttributeValues": {":v": value}, **extra,
            }  # fmt: skip
        else:
            request = {"TableName": table, "Key": key, **extra}
        condition = register_condition(
            extra.get("ConditionExpression"), extra.get("ExpressionAttributeNames"), [*key, "value"]
        )
        op = self.history.invoke(process, region, f, table, key, value, condition=condition)
        member = self.members[region]
        if not member.up or member.engine is None:
            self.history.fail(op, "ConnectionRefused")
            self._notify(process, region)
            return
        try:
            prepared = PREPARE[OPERATION[f]](member.engine, request)
        except DynamoError as error:
            self.history.error(op, type(error).__name__)
            self._notify(process, region)
            return

        def evaluate(old: dict | None) -> dict | None:
            prepared.check_condition(old)
            new = prepared.apply(old)
            if new is not None:
                validate_item_size(new, prepared.size_error)
            return new

        op_id = self._register(region, op, f, prepared)
        member.driver.run(member.node.submit_write(op_id, table, key, evaluate, member.driver.now()))

    def read(self, region: str, key: dict, *, process: Any, consistent: bool = True) -> None:
        """A GetItem: strong (f "get") syncs first; eventual (f "get-eventual") reads locally at once."""
        table = self.table_name
        op = self.history.invoke(process, region, "get" if consistent else "get-eventual", table, key, None)
        member = self.members[region]
        if not member.up or member.engine is None:
            self.history.fail(op, "ConnectionRefused")
            self._notify(process, region)
            return
        if not consistent:
            self._finish_read(member, op, key)
            self._notify(process, region)
            return
        op_id = self._register(region, op, "get", key)
        member.driver.run(member.node.submit_read(op_id, table, key, member.driver.now()))

    def query(self, region: str, partition: dict | None, keys: list[dict], *, process: Any) -> None:
        """A strongly consistent Query of the item collection `partition` ({"pk": value}), or Scan (None), read
        as one strong read ("get") per item of `keys` (the items the caller writes): each is invoked as the
        request is sent and completes with what the Query returned for it, so the per-key checker judges every
        item (linearizable per item, not a snapshot). The sub-reads run as processes (process, i)."""
        table = self.table_name
        member = self.members[region]
        ops = [self.history.invoke((process, i), region, "get", table, key, None) for i, key in enumerate(keys)]
        if not member.up or member.engine is None:
            for op in ops:
                self.history.fail(op, "ConnectionRefused")
            self._notify(process, region)
            return
        op_id = self._register(region, ops, "query", (process, partition, keys))
        member.driver.run(member.node.submit_range_read(op_id, table, partition, member.driver.now()))

    def host(
        self, region: str, submit: Callable[[Any, float], list], on_done: Callable[[str, Any], None], *,
        guard_s: float | None = None,
    ) -> None:
        """One node operation of a region host's request path: `submit(op_id, now)` is one of the node's `submit_*`
        calls (it returns the envelopes to send); `on_done(outcome, detail)` gets the node's completion, or
        ("in-doubt", None) when it has not come `guard_s` seconds later (the region process's guard), or
        ("crashed", None) when the member crashes first. The member must be up. Not recorded in the history: the
        host records what its clients see."""
        member = self.members[region]
        if not member.up:
            raise RuntimeError(f"{region} is down: its requests never reach the node")
        self._next += 1
        op_id = self._next
        guard = None if guard_s is None else self.scheduler.call_later(guard_s, self._guard, op_id)
        self._hosted[op_id] = (region, on_done, guard)
        member.driver.run(submit(op_id, member.driver.now()))

    def hosted(self) -> int:
        """Node operations of region hosts not completed yet."""
        return len(self._hosted)

    def _guard(self, op_id: int) -> None:
        entry = self._hosted.pop(op_id, None)
        if entry is not None:
            entry[1]("in-doubt", None)  # the node's late completion, if any, is ignored (as the host's future is)

    def _register(self, region: str, op: Any, f: str, request: Any) -> int:
        self._next += 1
        self._ops[self._next] = (region, op, f, request)
        return self._next

    def _done(self, op_id: int, outcome: str, detail: Any) -> None:
        hosted = self._hosted.pop(op_id, None)
        if hosted is not None:
            _region, on_done, guard = hosted
            if guard is not None:
                self.scheduler.cancel(guard)
            on_done(outcome, detail)
            return
        if op_id not in self._ops:
            return  # a hosted operation its guard already answered
        region, op, f, request = self._ops.pop(op_id)
        history = self.history
        if f == "query":
            self._finish_query(self.members[region], op, request, outcome)
            return
        if outcome == "ok":
            if f == "get":
                self._finish_read(self.members[region], op, request)
            else:
                history.ok(op)
        elif outcome == "rwce":
            history.error(op, "ReplicatedWriteConflictException")
        elif outcome == "error" and isinstance(detail, DynamoError):
            history.error(op, type(detail).__name__)
        else:  # in-doubt, timeout, retries exhausted: the client sees 500
            history.error(op, "InternalServerError")
        self._notify(op.process, region)

    def _finish_read(self, member: MrscMember, op: Any, key: dict) -> None:
        response = member.engine.handle("GetItem", {"TableName": self.table_name, "Key": key, "ConsistentRead": True})
        item = response.get("Item")
        self.history.ok(op, value=None if item is None else item.get("value"))

    def _finish_query(self, member: MrscMember, ops: list, request: tuple, outcome: str) -> None:
        process, partition, _keys = request
        if outcome != "ok":
            for op in ops:
                self.history.error(op, "InternalServerError")
        else:
            if partition is None:
                items = member.engine.handle("Scan", {"TableName": self.table_name, "ConsistentRead": True})["Items"]
            else:
                ((name, value),) = partition.items()
                items = member.engine.handle(
                    "Query",
                    {
                        "TableName": self.table_name, "ConsistentRead": True, "KeyConditionExpression": "#p = :p",
                        "ExpressionAttributeNames": {"#p": name}, "ExpressionAttributeValues": {":p": value},
                    },
                )["Items"]  # fmt: skip
            found = {key_text(item, op.key): item for item in items for op in ops[:1]}
            for op in ops:
                item = found.get(key_text(op.key, op.key))
                self.history.ok(op, value=None if item is None else item.get("value"))
        self._notify(process, member.name)

    def _notify(self, process: Any, region: str) -> None:
        if self.on_complete is not None:
            self.on_complete(process, region)

    # ----------------------------------------------------------------------------------------------- faults

    def crash(self, name: str) -> None:
        member = self.members[name]
        member.crash()
        for op_id, (region, on_done, guard) in list(self._hosted.items()):
            if region == name:
                del self._hosted[op_id]
                if guard is not None:
                    self.scheduler.cancel(guard)
                on_done("crashed", None)  # the connection is gone: the client cannot know the outcome
        for op_id, (region, op, f, request) in list(self._ops.items()):
            if region == name:
                del self._ops[op_id]
                if f == "query":
                    for read in op:
                        self.history.info(read, "ConnectionReset")
                    self._notify(request[0], region)
                    continue
                self.history.info(op, "ConnectionReset")  # may or may not have taken effect
                self._notify(op.process, region)

    def restart(self, name: str) -> None:
        self.members[name].start()

    # ---------------------------------------------------------------------------------------------- running

    def run_until(self, when: float, max_events: int | None = None) -> int:
        return self.scheduler.run_until(when, max_events)

    def run_until_quiescent(self, max_events: int = 5_000_000) -> int:
        return self.scheduler.run_until_idle(max_events)

    def quiescent(self) -> bool:
        """Nothing in progress at any member that is up: no host operation waiting, no proposal undecided or
        queued, no pending (accepted, unresolved) proposal held and no strong read syncing (a region process's
        /control/status says the same)."""
        if self._hosted or self._ops:
            return False
        for member in self.members.values():
            if not member.up:
                continue
            status = member.node.status()
            if status["proposals"] or status["queued"] or status["reads"] or status["range_reads"]:
                return False
            if member.strong.all_pending():
                return False
        return True

    def items(self, region: str, table: str | None = None) -> dict[str, dict]:
        """key_id -> item of every item a replica holds locally (no sync), read with paginated Scans."""
        engine = self.members[region].engine
        if engine is None:
            return {}
        return scan_items(engine, table or self.table_name, consistent=False)

    def trace(self) -> str:
        """The network journal as text (one line per send, delivery, drop and fault)."""
        return "".join(line + "\n" for line in self.network.trace_lines())

    def local_items(self) -> dict[str, dict[str, Any]]:
        """Per replica, every item as stored locally (key id -> item)."""
        out = {}
        for name in self.replicas():
            engine = self.members[name].engine
            items = engine.handle("Scan", {"TableName": self.table_name}).get("Items", [])
            out[name] = {orjson_key(item["pk"]): item for item in items}
        return out


class _MemberProcess:
    """A member as a chaos target's process: crash and start go through the cluster (which completes the
    member's in-flight client operations as in doubt)."""

    def __init__(self, cluster: MrscCluster, name: str) -> None:
        self.cluster, self.name = cluster, name

    @property
    def up(self) -> bool:
        return self.cluster.members[self.name].up

    def crash(self) -> None:
        self.cluster.crash(self.name)

    def start(self) -> None:
        self.cluster.restart(self.name)


def key_text(item: dict, like: dict) -> str:
    """The text of the key attributes (those of `like`) of an item or key."""
    return item_id({name: item.get(name) for name in like})


def orjson_key(value: Any) -> str:
    return str(value)


__all__ = ["MrscCluster", "MrscMember", "ValidationException"]
