"""The change log's tables, in the region's SQLite database next to the items (see `engine/change_log.py`).

Rules
1. `change_log` holds one row per effective item change, keyed (table id, sequence number): reading "the records
   of a table after sequence N" is one range scan, whether the reader is a stream consumer or (later) replication.
   Table ids are the store's, never reused, so the rows of a dropped table can never show up under a new one.
2. A row holds the full old and new images (orjson, NULL when absent): what a stream shows of them is decided when
   it is read (the stream view type), so one log serves every view type and replication.
3. Rows are inserted on the caller's open transaction (the commit hook's), so they commit or roll back with the
   item changes they record.
4. Sequence numbers are never reused, also across restarts: the next one is one past the greatest ever written,
   which is the greatest row still present or, when retention trimmed them all, the trim floor recorded in
   `change_log_tables`.
5. `streams` is the registry of streams, current and past: a stream is a range [start_seq, end_seq] of its table's
   log (end_seq NULL while enabled). A past stream stays readable until retention drops it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from operator import itemgetter

import orjson

from .records import NO_END, LogRecord, StreamRow, trim_cut
from .sqlite_store import SqliteStore, insert_rows, multi_row

SCHEMA = """
CREATE TABLE IF NOT EXISTS change_log (
    tid INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    created REAL NOT NULL,
    old BLOB,
    new BLOB,
    service INTEGER NOT NULL DEFAULT 0,
    origin TEXT,
    version TEXT,
    lane INTEGER,
    size INTEGER,
    PRIMARY KEY (tid, seq)
) WITHOUT ROWID;
-- Replication reads this region's own records lane by lane (docs/replication.md): origin NULL means local.
CREATE INDEX IF NOT EXISTS change_log_local_lanes ON change_log (tid, lane, seq) WHERE origin IS NULL;
CREATE TABLE IF NOT EXISTS change_log_tables (
    tid INTEGER PRIMARY KEY,
    trimmed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS streams (
    arn TEXT PRIMARY KEY,
    tid INTEGER NOT NULL,
    table_name TEXT NOT NULL,
    label TEXT NOT NULL,
    view_type TEXT NOT NULL,
    key_schema BLOB NOT NULL,
    created REAL NOT NULL,
    start_seq INTEGER NOT NULL,
    end_seq INTEGER,
    disabled REAL
);
"""

INSERT_RECORD = (
    "INSERT INTO change_log (tid, seq, created, old, new, service, origin, version, lane, size)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


# A batch of records (a replicated batch: hundreds) goes many rows to a statement (sqlite_store.py `insert_rows`): no
# conflict is expected at all, sequence numbers being never reused (rule 4). Rows that all lack an old image (a
# backlog of new items) have the NULL written in the statement, not bound: the driver's adapter lookup for a None
# parameter costs about as much as binding the rest of the row's integers (sqlite_store.py `_PUT_ITEM_NO_SK`).
INSERT_RECORDS = multi_row(INSERT_RECORD)
INSERT_NEW_RECORD = INSERT_RECORD.replace("VALUES (?, ?, ?, ?,", "VALUES (?, ?, ?, NULL,")
INSERT_NEW_RECORDS = multi_row(INSERT_NEW_RECORD)
_OLD = itemgetter(3)


_STREAM_COLUMNS = "arn, tid, table_name, label, view_type, key_schema, created, start_seq, end_seq, disabled"


def _stream(row: tuple) -> StreamRow:
    arn, tid, table_name, label, view_type, key_schema, created, start_seq, end_seq, disabled = row
    return StreamRow(
        arn, tid, table_name, label, view_type, orjson.loads(key_schema), created, start_seq, end_seq, disabled
    )


class ChangeLogStore:
    """Change log rows and the stream registry, on the item store's connection."""

    def __init__(self, store: SqliteStore) -> None:
        self.db: sqlite3.Connection = store.db
        self.db.executescript(SCHEMA)
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(change_log)")}
        if "size" not in columns:  # a log written before records carried their item's size: NULL there
            self.db.execute("ALTER TABLE change_log ADD COLUMN size INTEGER")

    # ------------------------------------------------------------------------------------------------ sequences

    def last_seq(self, tid: int) -> int:
        """The greatest sequence number ever written for a table (0 if none)."""
        (present,) = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM change_log WHERE tid = ?", (tid,)).fetchone()
        return max(present, self.trimmed(tid))

    def trimmed(self, tid: int) -> int:
        """The greatest sequence number retention has removed (0 if none)."""
        row = self.db.execute("SELECT trimmed FROM change_log_tables WHERE tid = ?", (tid,)).fetchone()
        return row[0] if row else 0

    # -------------------------------------------------------------------------------------------------- records

    def read(self, tid: int, first: int, last: int | None, limit: int) -> Iterator[LogRecord]:
        """Records of a table with first <= seq (<= last), in sequence order, at most `limit`."""
        sql = (
            "SELECT seq, created, old, new, service FROM change_log WHERE tid = ? AND seq >= ? AND seq <= ? "
            "ORDER BY seq LIMIT ?"
        )
        args = (tid, first, NO_END if last is None else last, limit)
        for seq, created, old, new, service in self.db.execute(sql, args):
            yield LogRecord(
                seq, created, None if old is None else orjson.loads(old), None if new is None else orjson.loads(new),
                bool(service),
            )  # fmt: skip

    def trim(
        self,
        before: float,
        limit: int,
        ceilings: dict[int, int] | None = None,
        horizons: dict[int, float] | None = None,
    ) -> int:
        """Delete up to `limit` records created before `before` (oldest first, table by table); how many.

        `ceilings` caps, per table id, the sequence numbers that may go: a global table keeps its records until
        every peer has acknowledged them, whatever their age. `horizons` keeps, per table id, every record created
        at or after its horizon (point-in-time recovery's window).
        """
        removed = 0
        tables = [tid for (tid,) in self.db.execute("SELECT tid FROM change_log_tables ORDER BY tid").fetchall()]
        for tid in tables:
            if removed >= limit:
                break
            rows = self.db.execute(
                "SELECT seq, created FROM change_log WHERE tid = ? ORDER BY seq LIMIT ?", (tid, limit - removed)
            ).fetchall()
            cut = trim_cut(tid, rows, before, ceilings, horizons)
            if cut <= 0:
                continue
            self.db.execute("BEGIN")
            try:
                cursor = self.db.execute("DELETE FROM change_log WHERE tid = ? AND seq <= ?", (tid, cut))
                self.db.execute("UPDATE change_log_tables SET trimmed = MAX(trimmed, ?) WHERE tid = ?", (cut, tid))
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            removed += cursor.rowcount
        return removed

    # ---------------------------------------------------------------------------------------------- replication

    # The queries of this region's own records name their index (`INDEXED BY`): SQLite's planner, without statistics,
    # prefers the primary key's range `seq > ?` for a count or a maximum, which walks every record after it, the
    # replicated ones included (a status call of a region that applied a 40,000-record backlog then took 10 ms per
    # lane, instead of a few microseconds).

    def local_lane_records(self, tid: int, lane: int, after: int, limit: int) -> list[tuple]:
        """(seq, created, new image, old image, version, service, new image's size or None) of this region's own
        records in a lane, after `after` (images as stored blobs)."""
        return self.db.execute(
            "SELECT seq, created, new, old, version, service, size FROM change_log"
            " WHERE tid = ? AND lane = ? AND origin IS NULL AND seq > ? ORDER BY seq LIMIT ?",
            (tid, lane, after, limit),
        ).fetchall()

    def append(self, tx: sqlite3.Connection, rows: list[tuple]) -> None:
        """Insert records on the commit hook's open transaction; a row is (tid, seq, created, old blob, new blob,
        service, origin, version, lane, new item's size)."""
        if len(rows) == 1:
            tx.execute(INSERT_RECORD, rows[0])
        elif any(map(_OLD, rows)):
            insert_rows(tx, INSERT_RECORD, INSERT_RECORDS, rows)
        else:
            insert_rows(tx, INSERT_NEW_RECORD, INSERT_NEW_RECORDS, [row[:3] + row[4:] for row in rows])

    def local_lane_count(self, tid: int, lane: int, after: int) -> int:
        """How many of this region's own records in a lane lie after `after`."""
        (count,) = self.db.execute(
            "SELECT count(*) FROM change_log INDEXED BY change_log_local_lanes"
            " WHERE tid = ? AND lane = ? AND origin IS NULL AND seq > ?",
            (tid, lane, after),
        ).fetchone()
        return count

    def local_lane_end(self, tid: int, lane: int) -> int:
        (end,) = self.db.execute(
            "SELECT MAX(seq) FROM change_log INDEXED BY change_log_local_lanes"
            " WHERE tid = ? AND lane = ? AND origin IS NULL",
            (tid, lane),
        ).fetchone()
        return end or 0

    # -------------------------------------------------------------------------------------------------- streams

    def streams(self) -> list[StreamRow]:
        """Every stream in the registry, ordered by ARN (the order ListStreams pages in)."""
        return [_stream(row) for row in self.db.execute(f"SELECT {_STREAM_COLUMNS} FROM streams ORDER BY arn")]

    def stream(self, arn: str) -> StreamRow | None:
        row = self.db.execute(f"SELECT {_STREAM_COLUMNS} FROM streams WHERE arn = ?", (arn,)).fetchone()
        return _stream(row) if row else None

    def add_stream(self, stream: StreamRow) -> None:
        self.db.execute(
            f"INSERT INTO streams ({_STREAM_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                stream.arn, stream.tid, stream.table_name, stream.label, stream.view_type,
                orjson.dumps(stream.key_schema), stream.created, stream.start_seq, stream.end_seq, stream.disabled,
            ),
        )  # fmt: skip
        self.db.execute("INSERT OR IGNORE INTO change_log_tables (tid) VALUES (?)", (stream.tid,))

    def register_table(self, tid: int) -> None:
        """Have retention trim this table's log (a logged table without a stream: point-in-time recovery)."""
        self.db.execute("INSERT OR IGNORE INTO change_log_tables (tid) VALUES (?)", (tid,))

    def close_stream(self, arn: str, end_seq: int, disabled: float) -> None:
        self.db.execute("UPDATE streams SET end_seq = ?, disabled = ? WHERE arn = ?", (end_seq, disabled, arn))

    def drop_stream(self, arn: str) -> None:
        self.db.execute("DELETE FROM streams WHERE arn = ?", (arn,))
