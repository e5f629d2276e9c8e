"""The engine of one region: the table registry, the operation dispatch table and the single write path.

Operations live one per module in `engine/operations/`, named after the wire operation in snake case
(`PutItem` -> `operations/put_item.py`), each exporting `handle(engine, request)` returning the response, or an
`Answer` (answer.py) when the operation read or wrote an item version. Adding an operation is adding a module;
nothing else changes. `Engine.execute` gives every caller an `Answer(response, version)`; `Engine.handle` just the
response, for the many callers (control plane, set-up, tests) that need no version.

Every change to items goes through `Engine.commit`, the commit pipeline, whose steps run in this order:
1. stamp: local writes get their versions (a global table's, replica.py); writes that take no effect are dropped;
2. in one store transaction, atomically: the item rows, then index maintenance (indexes.py), then the change log
   (change_log.py), then the side records the caller gave (`commit(side=...)`: a protocol's durable state that must
   change with the items, such as strong mode's, replication/mrsc/store.py); a step that raises rolls the whole
   batch back;
3. after the transaction committed: the after-commit listeners, in registration order, each given the
   `CommitResult` (commit.py); the replication core's host is one (replication/hosted.py).
Group commit: between `begin_group` and `commit_group`, step 2 of each commit is a savepoint of one store
transaction (or, in a group opened without savepoints, part of it, all standing or falling together; the in-memory
store applies each at once, memory_store.py rule 6) and step 3 waits for `commit_group`, which commits them all at
once and then tells the listeners of each, in order. Who opens a group answers nothing of it before `commit_group`
returned, and reads nothing outside it meanwhile (the region's committer, region/group_commit.py;
docs/architecture.md).
The order of step 2's engine hooks is installed in one place, `Engine.__init__` (`_install_commit_steps`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

from ..runtime.clock import Clock
from ..runtime.ids import IdSource, random_ids
from . import phased, streams, table_arns
from .answer import Answer
from .change_log import DEFAULT_RETENTION_S, ChangeLog
from .commit import NOTHING, CommitListener, CommitResult, GroupCommitFailed
from .contributor_insights import ContributorInsights
from .errors import DynamoError, ResourceNotFoundException, SerializationException, UnknownOperationException
from .faults import Faults
from .indexes import IndexManager
from .replica import ReplicaPort, VersionSource
from .replica_membership import ReplicaMembership
from .schema import TableDefinition
from .storage.memory_store import MemoryStore
from .storage.records import ItemWrite, TokenRecord
from .storage.sqlite_store import SqliteStore
from .strong_membership import StrongMembership
from .table_arns import BATCH_OPERATIONS, is_arn
from .throughput import UNLIMITED, CapacitySettings, ThroughputModel, model_for
from .ttl import TtlSweeper

Handler = Callable[["Engine", dict], "dict | Answer"]

# Every operation of the DynamoDB_20120810 API. Those without a module here are refused clearly, not as unknown.
DYNAMODB_OPERATIONS = frozenset(
    ["BatchExecuteStatement", "BatchGetItem", "BatchWriteItem", "CreateBackup", "CreateGlobalTable", "CreateTable", "DeleteBackup", "DeleteItem", "DeleteResourcePolicy", "DeleteTable", "DescribeBackup", "DescribeContinuousBackups", "DescribeContributorInsights", "DescribeEndpoints", "DescribeExport", "DescribeGlobalTable", "DescribeGlobalTableSettings", "DescribeImport", "DescribeKinesisStreamingDestination", "DescribeLimits", "DescribeTable", "DescribeTableReplicaAutoScaling", "DescribeTimeToLive", "DisableKinesisStreamingDestination", "EnableKinesisStreamingDestination", "ExecuteStatement", "ExecuteTransaction", "ExportTableToPointInTime", "GetItem", "GetResourcePolicy", "ImportTable", "ListBackups", "ListContributorInsights", "ListExports", "ListGlobalTables", "ListImports", "ListTables", "ListTagsOfResource", "PutItem", "PutResourcePolicy", "Query", "RestoreTableFromBackup", "RestoreTableToPointInTime", "Scan", "TagResource", "TransactGetItems", "TransactWriteItems", "UntagResource", "UpdateContinuousBackups", "UpdateContributorInsights", "UpdateGlobalTable", "UpdateGlobalTableSettings", "UpdateItem", "UpdateKinesisStreamingDestination", "UpdateTable", "UpdateTableReplicaAutoScaling", "UpdateTimeToLive"]
)

# The reads whose handlers take `encoded=True` (`Engine.execute`): they answer whole items as their stored JSON.
ENCODED_READS = frozenset({"GetItem", "Query"})

# PartiQL (engine/partiql/): a strong-mode region routes these itself, one item operation at a time.
PARTIQL_OPERATIONS = frozenset({"ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"})


def module_name(operation: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


class Engine:
    """One region's tables. Not thread-safe: the region runs it on one event loop, one operation at a time."""

    def __init__(
        self,
        store: SqliteStore | MemoryStore,
        clock: Clock,
        region: str = "us-east-1",
        account: str = "000000000000",
        stream_retention_s: float = DEFAULT_RETENTION_S,
        versions: VersionSource | None = None,
        tombstone_retention_s: float = DEFAULT_RETENTION_S,
        ids: IdSource | None = None,
        capacity: str | CapacitySettings = UNLIMITED,
    ) -> None:
        self.store = store
        # New identifiers (TableId): injected, so a simulation draws them from its seed (runtime/ids.py).
        self.new_id = ids if ids is not None else random_ids()
        # Item versions for global tables (replica.py, docs/replication.md): the region's hybrid logical clock, or
        # None for a standalone region, whose writes carry no version.
        self.versions = versions
        self.replica = ReplicaPort(self)
        self.membership = ReplicaMembership(self)  # replicas added and removed (replica_membership.py)
        self.strong_membership = StrongMembership(self)  # MRSC through UpdateTable (strong_membership.py)
        # How long a delete's tombstone outlives it (facts §10.5): a write older than the delete that arrives later
        # than this could resurrect the item, so keep it well above the longest partition an experiment holds.
        self.tombstone_retention_s = tombstone_retention_s
        self.clock = clock
        self.region = region
        self.account = account
        self.tables: dict[str, TableDefinition] = {
            name: TableDefinition.from_dict(d) for name, d in store.load_tables().items()
        }
        self._handlers: dict[str, Handler] = {}
        self.faults = Faults(clock)  # injected transaction conflicts (faults.py); empty unless a test sets one
        # Secondary indexes (indexes.py): a step of the commit pipeline, plus backfills and purges run by
        # `background_step`.
        self.indexes = IndexManager(store, self.tables, self.save_table)
        # The change log (change_log.py): the pipeline's step after the indexes, the source of streams and of
        # replication; and the TTL sweeper (ttl.py). The region server runs `trim_change_log` and `sweep_expired`
        # periodically.
        self.change_log = ChangeLog(store, clock, self.tables, self.replica.trim_ceilings, stream_retention_s)
        self.ttl = TtlSweeper(store, clock, self.tables, self.faults, self.commit)
        # Capacity and throughput (throughput.py, docs/capacity.md): "modelled" throttles as DynamoDB does;
        # "unlimited" (None here) never throttles.
        # Contributor Insights settings (contributor_insights.py), fed by the throughput model's charges.
        self.contributor_insights = ContributorInsights()
        self.throughput: ThroughputModel | None = model_for(
            capacity, clock, self.tables, self._stored_sizes, self.contributor_insights
        )
        self._side: list | None = None  # the side records of the commit in progress (step 2)
        self._commit_listeners: list[CommitListener] = []  # the pipeline's step 3 (`add_commit_listener`)
        self._grouped: list[CommitResult] | None = None  # commits of the open group, their step 3 still to come
        self._after_group: list[Callable[[], None]] = []  # `after_commit` calls waiting for the open group
        self._install_commit_steps()
        if versions is not None:
            # A restarted region's clock starts above every version it already holds (its own or replicated).
            highest = store.highest_version()
            if highest is not None:
                versions.observe_floor(highest)

    # ---------------------------------------------------------------------------------------------------- dispatch

    def execute(self, operation: str, request: Any, encoded: bool = False) -> Answer:
        """Run one operation: its response and the item version it read or wrote (answer.py).

        `encoded`: the caller only serialises the response with orjson (the wire, region/wire.py), so the reads in
        `ENCODED_READS` may answer whole items as their stored JSON, `orjson.Fragment`s, never decoded
        (storage/records.py, raw reads). Every other caller gets dicts."""
        throughput = self.throughput
        try:
            handler = self.handler(operation)
            if not isinstance(request, dict):
                raise SerializationException("Start of structure or map found where not expected")
            given = None
            if (
                is_arn(request.get("TableName"))
                or "TransactItems" in request
                or (operation in BATCH_OPERATIONS and isinstance(request.get("RequestItems"), dict))
            ):
                request, given = table_arns.resolve(self, operation, request)  # table ARNs stand for names
            if encoded and operation in ENCODED_READS:
                result = handler(self, request, encoded=True)
            else:
                result = handler(self, request)
        except DynamoError:
            if throughput is not None and throughput.throttled:  # failed with a throttle: ThrottledRequests
                throughput.take_throttled(operation)
            raise
        if throughput is not None and throughput.throttled:  # some items of a batch were throttled, not the request
            throughput.throttled.clear()
        if given:  # only batches have keys to restore, and batches answer no version
            return Answer(table_arns.restore_batch_keys(result, given))  # type: ignore[arg-type]
        return result if type(result) is Answer else Answer(result)  # type: ignore[arg-type]

    def handle(self, operation: str, request: Any) -> dict:
        """Run one operation: its response (`execute` for the version too)."""
        return self.execute(operation, request)[0]

    def check(self, operation: str, request: Any) -> dict:
        """`handle` with nothing charged: every check of a read request, as a strong read runs them before its round
        trip; the read after it is the one that consumes (docs/capacity.md, decision 21). Synchronous, so no other
        request is served meanwhile."""
        throughput, self.throughput = self.throughput, None
        try:
            return self.execute(operation, request)[0]
        finally:
            self.throughput = throughput

    def handle_many(self, operation: str, requests: list[Any]) -> list[tuple[dict | DynamoError, str | None]]:
        """Independent PutItem, UpdateItem, DeleteItem, GetItem or Query requests, checked together and then executed in
        order (phased.py): per request, its response or DynamoError and the version it read or wrote, exactly as one
        `execute` call per request would have given them."""
        return phased.handle_many(self, operation, requests)

    def execute_many(self, operation: str, requests: list[Any], encoded: bool = False) -> list[tuple[Any, str | None]]:
        """`execute` for independent requests of one operation, in order (the requests of one event-loop turn,
        region/group_commit.py): per request, its response, or the exception it failed with (a DynamoError, or
        any other for a bug, which fails that request alone), and the version it read or wrote. Phase by phase
        (phased.py) when the operation has phases (`phased.OPERATIONS`) and each request names its table by name;
        otherwise one `execute` after the other."""
        if operation in phased.OPERATIONS and all(
            type(request) is dict and not is_arn(request.get("TableName")) for request in requests
        ):
            return phased.handle_many(self, operation, requests, encoded=encoded, contain=True)
        results: list[tuple[Any, str | None]] = []
        for request in requests:
            try:
                results.append(self.execute(operation, request, encoded))
            except Exception as error:  # noqa: BLE001 (a failure, DynamoError or not, is that request's answer)
                results.append((error, None))
        return results

    def handler(self, operation: str) -> Handler:
        handler = self._handlers.get(operation)
        if handler is not None:
            return handler
        if operation not in DYNAMODB_OPERATIONS:
            raise UnknownOperationException(f"Unknown operation: {operation}")
        path = f"{__package__}.operations.{module_name(operation)}"
        try:
            module = importlib.import_module(path)
        except ModuleNotFoundError as error:
            if error.name != path:
                raise  # a module that exists but fails to import is a bug, not an unsupported operation
            raise UnknownOperationException(f"{operation} is not supported by globaltables") from None
        self._handlers[operation] = module.handle
        return module.handle

    # ------------------------------------------------------------------------------------------------------ tables

    def table(self, name: Any, *, describe: bool = False) -> TableDefinition:
        """The named table, or DynamoDB's ResourceNotFoundException (item operations use the terse message)."""
        definition = self.tables.get(name) if isinstance(name, str) else None
        if definition is None or (definition.status == "CREATING" and not describe):
            # A replica still loading its snapshot (replica_membership.py) serves no reads or writes yet.
            if describe and definition is None:
                raise ResourceNotFoundException(f"Requested resource not found: Table: {name} not found")
            raise ResourceNotFoundException("Requested resource not found")
        return definition

    def save_table(self, definition: TableDefinition) -> None:
        previous = self.tables.get(definition.name)
        if previous is not None and len(definition.gsis) < len(previous.gsis):  # a GSI deleted takes its settings
            kept = {index.name for index in definition.gsis}
            for index in previous.gsis:
                if index.name not in kept:
                    self.contributor_insights.forget_index(definition.name, index.name)
        self.indexes.table_saved(previous, definition)
        self.store.save_table(definition.name, definition.to_dict())
        self.tables[definition.name] = definition
        self.change_log.table_saved(definition)  # a stream enabled or disabled
        if self.throughput is not None:
            self.throughput.table_saved(definition)  # new rates apply from now

    def drop_table(self, name: str) -> None:
        self.indexes.table_dropped(self.tables[name])
        self.change_log.table_dropped(name)
        self.store.drop_table(name)
        del self.tables[name]
        self.contributor_insights.forget(name)
        if self.throughput is not None:
            self.throughput.forget(name)

    def _stored_sizes(self, table: TableDefinition) -> dict[str | None, int]:
        """Bytes stored for a table (key None) and each of its GSIs, which decide partition counts by size."""
        sizes: dict[str | None, int] = {None: self.store.table_stats(table.name)[1]}
        for index in table.gsis:
            sizes[index.name] = self.indexes.stats(table, index)[1]
        return sizes

    def table_arn(self, name: str) -> str:
        return f"arn:aws:dynamodb:{self.region}:{self.account}:table/{name}"

    # --------------------------------------------------------------------------------------------- background work

    @property
    def pending_work(self) -> bool:
        """Whether `background_step` has work to do (index backfills, purges of dropped indexes)."""
        return self.indexes.pending_work

    def background_step(self) -> bool:
        """Do one bounded chunk (a few milliseconds) of background work; whether more remains. The region server
        calls it between requests; tests call it directly."""
        return self.indexes.step()

    def sweep_expired(self, limit: int = 1000) -> int:
        """One bounded step of the TTL sweep (ttl.py): how many expired items it deleted. `self.ttl.pass_complete`
        tells whether the step finished a pass over every table with TTL enabled."""
        return self.ttl.sweep(limit)

    def trim_change_log(self, limit: int | None = None) -> int:
        """One bounded step of retention: change-log records past stream retention (change_log.py; a global
        table's records stay until every peer acknowledged them) and tombstones older than `tombstone_retention_s`.
        How many change-log records it removed."""
        removed = self.change_log.trim(limit)
        before = self.clock.wall_time() - self.tombstone_retention_s
        self.store.purge_tombstones(before, limit or self.change_log.trim_chunk)
        return removed

    # ------------------------------------------------------------------------------------------------- streams

    def handle_streams(self, operation: str, request: Any) -> dict:
        """An operation of the DynamoDB Streams API (`DynamoDBStreams_20120810.<Operation>`)."""
        return streams.handle(self, operation, request)

    # -------------------------------------------------------------------------------------------------- write path

    def _install_commit_steps(self) -> None:
        """Step 2 of the commit pipeline (module docstring): what runs inside the store transaction, after the item
        rows, in this order. Index maintenance comes first: an index may refuse a write (a key attribute of the wrong
        type), rolling the batch back, and the change log, which advances its sequence numbers and lane ends in
        memory as it appends, must only ever see a batch the indexes accepted."""
        self.store.commit_hooks.extend((self.indexes.on_commit, self.change_log.on_commit, self._stage_side))

    def _stage_side(self, tx: Any, _writes: list[ItemWrite]) -> None:
        if self._side:
            side, self._side = self._side, None
            self.store.side_stage(tx, side)

    def add_commit_listener(self, listener: CommitListener) -> None:
        """Tell `listener` of every commit of item writes, after its transaction committed (step 3)."""
        self._commit_listeners.append(listener)

    def remove_commit_listener(self, listener: CommitListener) -> None:
        self._commit_listeners.remove(listener)

    def commit(
        self,
        writes: list[ItemWrite],
        token: TokenRecord | None = None,
        positions: list[tuple[str, str, str, int, int]] | None = None,
        side: list | None = None,
    ) -> CommitResult:
        """Apply item writes atomically and durably through the commit pipeline (module docstring). The only way
        items change.

        With a version source, local writes are stamped first (replica.py); a write that loses under the wall
        clock, or leaves a global table's item unchanged, is dropped from the batch (its `version` still says what
        it was given). `token` is a TransactWriteItems idempotency record and `positions` replication positions,
        both committed in the same store transaction as the writes, as are `side` records (storage/records.py
        `SideChange`). Returns the writes committed.
        """
        if self.versions is not None and writes:
            writes = self.replica.stamp_local_writes(writes)  # 1. stamp
        # Of the commit hooks (`_install_commit_steps`) only index maintenance refuses writes; a batch it cannot
        # refuse needs no savepoint of its own inside a group commit (storage/sqlite_store.py rule 5).
        refusable = self.indexes.may_refuse(writes)
        if side:  # staged by the store's commit hook `_stage_side`, inside the transaction
            self._side = side
            try:
                self.store.write(writes, token, positions, refusable)  # 2. items, indexes, change log, side records
            finally:
                self._side = None
        else:
            self.store.write(writes, token, positions, refusable)  # 2. items, indexes, change log: one transaction
        if not writes:
            return NOTHING
        result = CommitResult(writes)
        if self._grouped is not None:  # 3. once the group committed
            self._grouped.append(result)
            return result
        for listener in self._commit_listeners:  # 3. after the commit
            listener(result)
        return result

    @property
    def grouping(self) -> bool:
        """Whether a group commit is open."""
        return self._grouped is not None

    def after_commit(self, call: Callable[[], None]) -> None:
        """Call `call` once the commit just made is durable: now, or, inside a group commit, after the group
        committed (never, if it failed). For what a caller reports about a commit it made (replica.py's apply
        decisions)."""
        if self._grouped is None:
            call()
        else:
            self._after_group.append(call)

    def begin_group(self, savepoints: bool = True) -> None:
        """Open a group commit (module docstring): the commits until `commit_group` are made durable together.
        `savepoints` False: the commits are not savepoints, so one that fails fails the whole group at
        `commit_group` (cheaper per write: storage/sqlite_store.py rule 5)."""
        self.store.begin_group(savepoints)
        self._grouped = []

    def commit_group(self) -> None:
        """Commit the open group, then run step 3 for each of its commits, in order. Raises GroupCommitFailed if the
        store could not commit: the group is rolled back whole, and the change log's counters its writes advanced
        in memory are reloaded from the store (a listener's own error is raised as it is, after the commit)."""
        results, self._grouped = self._grouped or [], None
        after, self._after_group = self._after_group, []
        try:
            self.store.commit_group()
        except Exception as error:
            self.change_log.forget_uncommitted()
            raise GroupCommitFailed(str(error)) from error
        listeners = self._commit_listeners
        for result in results:
            for listener in listeners:
                listener(result)
        for call in after:
            call()
