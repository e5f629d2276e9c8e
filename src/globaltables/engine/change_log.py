"""The change log: one ordered log of item changes per table, the source of DynamoDB Streams (and of replication).

Theory of operation
- `ChangeLog.on_commit` is a step of the engine's commit pipeline (`Engine.commit`), a store commit hook run after
  index maintenance: for every effective item change of a logged table it appends one record, in the same store
  transaction as the item rows, so the log holds exactly the committed changes, in commit order, across crashes and
  restarts. A record keeps the full old and new images (the event, INSERT/MODIFY/REMOVE, follows from which of them
  exist) and whether DynamoDB itself made the change (a TTL deletion, `ItemWrite.service`). What a stream shows of a record (its view type) is decided when it
  is read: one log serves every view type, and replication can ship the same records.
- "Effective": a PutItem or UpdateItem that leaves the item equal (by DynamoDB equality, sets unordered) writes no
  record, nor does a DeleteItem that finds nothing (the writers do not even commit that).
- Sequence numbers increase per table and are never reused, also across restarts (storage/change_log_store.py).
  A rolled-back transaction may leave a gap; readers never rely on consecutive numbers.
- Which tables are logged: those with an enabled stream, global tables (replication ships their log) and tables
  with point-in-time recovery enabled (restores reconstruct from it, engine/point_in_time.py). A stream is a range of
  its table's log: from the sequence number current when it was enabled to the last one written before it was
  disabled (or its table deleted). Streams live in a registry of their own, so a disabled stream, or the stream of
  a deleted table, stays readable until retention (24 hours by default) has passed since it was disabled.
- Retention is applied by `trim`, a bounded periodic step on the injected clock (the region server runs it). A
  table with point-in-time recovery keeps every record back to its earliest restorable time (up to its recovery
  period of 1 to 35 days), whatever the stream retention: a restore to any instant of the window undoes the records
  after it, so none of them may be missing.
- The registry follows the table definitions: `table_saved` / `table_dropped` are called by the engine after every
  definition change, and the whole registry is reconciled with the definitions at startup, so a crash between
  saving a definition and registering its stream heals itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson

from .errors import ResourceNotFoundException
from .schema import TableDefinition
from .storage.records import ItemWrite, LogRecord, StreamRow, partition_hash
from .values import values_equal

if TYPE_CHECKING:
    from ..runtime.clock import Clock

DEFAULT_RETENTION_S = 24 * 3600.0
TRIM_CHUNK = 5000  # records removed per trim step: a few milliseconds

LABEL_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


def label_time(label: str) -> float:
    """The epoch seconds a stream label (ISO 8601 with milliseconds, UTC) stands for."""
    return datetime.strptime(label, LABEL_FORMAT).replace(tzinfo=UTC).timestamp()


def label_after(label: str) -> str:
    """The label one millisecond later (two streams of one table never share a label, hence an ARN)."""
    moment = datetime.strptime(label, LABEL_FORMAT) + timedelta(milliseconds=1)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def items_equal(old: dict, new: dict) -> bool:
    """DynamoDB equality of two items (sets unordered); plain comparisons first, they settle nearly every case."""
    if old.keys() != new.keys():
        return False
    for name, value in old.items():
        other = new[name]
        if value != other and not values_equal(value, other):
            return False
    return True


class ChangeLog:
    """The change log of one engine: the commit hook, the stream registry, reads and retention."""

    def __init__(
        self,
        store: Any,
        clock: Clock,
        tables: Mapping[str, TableDefinition],
        trim_ceilings: Callable[[], dict[int, int]],
        retention_s: float = DEFAULT_RETENTION_S,
    ) -> None:
        """`store`: the engine's store (the log lives in its `change_log_store()`); `tables`: the engine's table
        registry (read live); `trim_ceilings`: how far replication lets each global table's log be trimmed
        (`ReplicaPort.trim_ceilings`)."""
        self._items = store
        self._clock = clock
        self._tables = tables
        self._trim_ceilings = trim_ceilings
        self.store = store.change_log_store()
        self.retention_s = retention_s
        self.trim_chunk = TRIM_CHUNK
        self._logged: dict[str, int] = {}  # table name -> store table id, for every table whose changes are logged
        self._next: dict[int, int] = {}  # table id -> next sequence number (loaded lazily)
        self._open: dict[str, StreamRow] = {}  # table name -> its enabled stream
        self._lanes: dict[str, int] = {}  # global table name -> replication lanes (its records carry a lane)
        # (table id, lane) -> this region's last record in the lane; filled lazily by `lane_end`, then kept by the
        # commit hook, so replication links learn of new records without a query.
        self.lane_ends: dict[tuple[int, int], int] = {}
        for stream in self.store.streams():
            if stream.enabled:
                self._open[stream.table_name] = stream
        for definition in list(tables.values()):
            self.table_saved(definition)
        for name in [name for name in self._open if name not in tables]:
            self._close(name)

    # ------------------------------------------------------------------------------------------------ write path

    def on_commit(self, tx: Any, writes: list[ItemWrite]) -> None:
        logged = self._logged
        if not logged:
            return
        now = None
        dumps = orjson.dumps
        lanes = self._lanes
        nexts = self._next
        rows = []
        # A batch's writes are mostly of one table (a replicated batch: all of them): its log's id and lanes are
        # looked up again only when the table changes.
        table = tid = lane_count = None
        for write in writes:
            if write.table is not table:
                table = write.table
                tid = logged.get(table)
                lane_count = lanes.get(table)
            if tid is None:
                continue
            old, new = write.old, write.item
            if old is None:
                if new is None:
                    continue
            elif new is not None and not write.reassert and items_equal(old, new):
                continue  # an unchanged item: no record
            if now is None:
                now = self._clock.wall_time()
            seq = nexts.get(tid) or self.next_seq(tid)
            lane = None if lane_count is None else partition_hash(write.pk) % lane_count
            origin = write.origin
            rows.append(
                (tid, seq, now, None if old is None else dumps(old),
                 None if new is None else (write.blob or dumps(new)),
                 1 if write.service else 0, origin, write.version, lane, None if new is None else write.size),
            )  # fmt: skip
            nexts[tid] = seq + 1
            if lane is not None and origin is None:
                self.lane_ends[(tid, lane)] = seq
        if rows:
            self.store.append(tx, rows)

    def forget_uncommitted(self) -> None:
        """After a group commit that failed (Engine.commit_group): the sequence numbers and lane ends its writes
        advanced in memory are reloaded from the store on next use."""
        self._next.clear()
        self.lane_ends.clear()

    def next_seq(self, tid: int) -> int:
        """The sequence number the table's next record will get."""
        seq = self._next.get(tid)
        if seq is None:
            seq = self._next[tid] = self.store.last_seq(tid) + 1
        return seq

    # ------------------------------------------------------------------------------------------- stream registry

    def table_saved(self, definition: TableDefinition) -> None:
        """Follow a saved table definition: register its newly enabled stream, close its disabled one."""
        name = definition.name
        current = self._open.get(name)
        wanted = definition.stream_arn if definition.stream_enabled else None
        if current is not None and current.arn != wanted:
            self._close(name)
            current = None
        if wanted is not None and current is None:
            self._open_stream(definition)
        if definition.replicas:
            self._lanes[name] = definition.replication_lanes
        else:
            self._lanes.pop(name, None)
        if name in self._open or definition.replicas or definition.point_in_time_recovery:
            # Global tables are always logged: the log is also what replication ships (docs/replication.md); so are
            # tables with point-in-time recovery, whose restores are reconstructed from it.
            tid = self._logged[name] = self._items.table_id(name)
            if definition.point_in_time_recovery:
                self.store.register_table(tid)  # trimmed by retention like a stream's table
        else:
            self._logged.pop(name, None)

    def table_dropped(self, name: str) -> None:
        if name in self._open:
            self._close(name)
        self._logged.pop(name, None)
        self._lanes.pop(name, None)

    def _open_stream(self, definition: TableDefinition) -> None:
        label = definition.stream["LatestStreamLabel"]
        if self.store.stream(definition.stream_arn) is not None:
            # A stream of this table (or of a deleted table of the same name) already has this label: enabled again
            # within the same millisecond. Move the new one's label on, so every stream keeps its own ARN.
            while self.store.stream(f"{definition.arn}/stream/{label}") is not None:
                label = label_after(label)
            definition.stream = {**definition.stream, "LatestStreamLabel": label}
            self._items.save_table(definition.name, definition.to_dict())
        tid = self._items.table_id(definition.name)
        stream = StreamRow(
            arn=definition.stream_arn,
            tid=tid,
            table_name=definition.name,
            label=label,
            view_type=definition.stream["StreamViewType"],
            key_schema=definition.key.to_wire(),
            created=label_time(label),
            start_seq=self.next_seq(tid),
            end_seq=None,
            disabled=None,
        )
        self.store.add_stream(stream)
        self._open[definition.name] = stream

    def _close(self, name: str) -> None:
        stream = self._open.pop(name)
        self.store.close_stream(stream.arn, self.next_seq(stream.tid) - 1, self._clock.wall_time())

    # ---------------------------------------------------------------------------------------------------- reads

    def stream(self, arn: str) -> StreamRow:
        """The stream with this ARN, current or past; DynamoDB's ResourceNotFoundException if there is none."""
        stream = self.store.stream(arn) if isinstance(arn, str) else None
        if stream is None:
            raise ResourceNotFoundException(f"Requested resource not found: Stream: {arn} not found")
        return stream

    def streams(self) -> list[StreamRow]:
        return self.store.streams()

    def trimmed(self, tid: int) -> int:
        """The greatest sequence number of the table that retention has removed (0: none)."""
        return self.store.trimmed(tid)

    def last_seq(self, stream: StreamRow) -> int:
        """The last sequence number written to a stream so far (start_seq - 1 if none)."""
        return stream.end_seq if stream.end_seq is not None else self.next_seq(stream.tid) - 1

    def read(self, stream: StreamRow, first: int, limit: int) -> Iterator[LogRecord]:
        """The stream's records from sequence number `first` on, at most `limit`; close the iterator when done."""
        return self.store.read(stream.tid, first, stream.end_seq, limit)

    def lane_end(self, tid: int, lane: int) -> int:
        """This region's last record in a replication lane of a table (0: none yet)."""
        end = self.lane_ends.get((tid, lane))
        if end is None:
            end = self.lane_ends[(tid, lane)] = self.store.local_lane_end(tid, lane)
        return end

    # ------------------------------------------------------------------------------------------------ retention

    def recovery_horizons(self, now: float) -> dict[int, float]:
        """Per table id with point-in-time recovery, the time from which its records must stay (its earliest
        restorable time)."""
        from .point_in_time import earliest_restorable

        horizons = {}
        for name, tid in self._logged.items():
            definition = self._tables.get(name)
            if definition is not None and definition.point_in_time_recovery:
                horizons[tid] = earliest_restorable(definition.point_in_time_recovery, now)
        return horizons

    def trim(self, limit: int | None = None) -> int:
        """Drop records older than the retention period, and streams disabled longer ago than that; one bounded
        step (at most `limit` records). How many records were removed."""
        now = self._clock.wall_time()
        before = now - self.retention_s
        removed = self.store.trim(before, limit or self.trim_chunk, self._trim_ceilings(), self.recovery_horizons(now))
        for stream in self.store.streams():
            if stream.disabled is not None and stream.disabled < before:
                self.store.drop_stream(stream.arn)
        return removed
