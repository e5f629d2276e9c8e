"""The durable store: one SQLite database per region, in WAL mode.

Rules
1. Every change to items goes through `write`, one SQLite transaction per call, so a batch of writes (one item, a
   transaction, a replicated batch) is all-or-nothing and is durable when `write` returns. WAL with
   `synchronous=NORMAL` survives the death of the process (`kill -9`): committed pages are in the WAL file, which
   the OS keeps. (It does not promise survival of a power cut; this is a testbed, not a bank.)
2. Keys are stored as order-preserving byte strings (see `values.encode_key_value`), so SQLite's blob order (memcmp)
   is DynamoDB's sort-key order and ranges are index range scans.
3. Rows are keyed (table id, partition hash, partition key, sort key). The hash spreads partitions the way
   DynamoDB's hash partitioning does: Scan walks tables in hash order, and a parallel scan's segments are ranges
   of the hash, so each item falls in exactly one segment.
4. Items are stored as their normalised wire JSON (orjson bytes); the engine never needs another representation.
5. Group commit (`begin_group` ... `commit_group`): while a group is open, every `write` (and the store's other
   transactions) runs as a SAVEPOINT inside one SQLite transaction, so a write that fails rolls back alone, and the
   group's writes become durable together at `commit_group` (one WAL commit for many writes). Reads on this
   connection see the group's uncommitted writes: whoever opens a group (the region's committer,
   region/group_commit.py) lets nothing else read or answer until it committed. A failed `commit_group` rolls the
   whole group back.
   A group opened `begin_group(savepoints=False)` runs its writes on the transaction itself, all-or-nothing as one:
   a write that fails cannot roll back alone, so it leaves the group broken, and `commit_group` then rolls the whole
   group back and raises. Why: a savepoint makes SQLite copy every page a write touches into its sub-journal
   (spilled to a temporary file past 64 KiB, and then also every page of each trigger-firing statement's own
   statement journal), about a third of a replicated batch's cost; the region's replication inbox, whose applies
   succeed or are all retransmitted together anyway, opens its groups so (region/group_commit.py).
   Inside a group with savepoints, a `write(..., refusable=False)` (a batch no commit hook can refuse: the engine
   says so for writes to tables without indexes, engine/indexes.py `may_refuse`) runs on the transaction itself too:
   what could still fail it is the database's own failure (I/O, a full disk), which would fail the group's commit
   anyway, so it breaks the group as above. That saves a client write on disk about 4.5 % of its CPU (the
   savepoint's two statements and its sub-journal's copy of every page the write touches).
6. Side records (`side_records`) are a layer's own durable state beside the items, opaque to the store: (space, key)
   -> bytes, read by key or key prefix in key order, written on their own (`side_write`) or inside an item write's
   transaction by a commit hook (`side_stage`), so they survive exactly what the items survive.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator
from itertools import chain
from pathlib import Path

import orjson

from . import running_totals
from .records import (
    HASH_SPACE,
    UNKNOWN,
    CommitHook,
    ItemWrite,
    SideChange,
    StoredItem,
    TokenRecord,
    partition_hash,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    name TEXT PRIMARY KEY,
    tid INTEGER NOT NULL UNIQUE,
    definition BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    tid INTEGER NOT NULL,
    h INTEGER NOT NULL,
    pk BLOB NOT NULL,
    sk BLOB NOT NULL,
    item BLOB NOT NULL,
    size INTEGER NOT NULL,
    version TEXT,
    PRIMARY KEY (tid, h, pk, sk)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
"""


# Idempotency tokens of TransactWriteItems (engine/transactions.py): written in the same SQLite transaction as the
# transaction's items, so a token is recorded exactly when its writes are, and survives a restart with them.
TOKENS_SCHEMA = """
CREATE TABLE IF NOT EXISTS transaction_tokens (
    token TEXT PRIMARY KEY,
    fingerprint BLOB NOT NULL,
    expires REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS transaction_tokens_by_expiry ON transaction_tokens (expires);
"""


# Global tables (docs/replication.md): a delete leaves a tombstone with the delete's version, so an older write that
# arrives later cannot resurrect the item; positions record, per (origin or peer, table, lane), how far this region
# has applied another region's log ("applied") and how far a peer has acknowledged ours ("acked"). Both are written
# in the same transaction as the items they describe.
REPLICATION_SCHEMA = """
CREATE TABLE IF NOT EXISTS tombstones (
    tid INTEGER NOT NULL,
    h INTEGER NOT NULL,
    pk BLOB NOT NULL,
    sk BLOB NOT NULL,
    version TEXT NOT NULL,
    deleted_at REAL NOT NULL,
    PRIMARY KEY (tid, h, pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tombstones_by_age ON tombstones (deleted_at);
CREATE TABLE IF NOT EXISTS replication_positions (
    kind TEXT NOT NULL,
    region TEXT NOT NULL,
    tid INTEGER NOT NULL,
    lane INTEGER NOT NULL,
    pos INTEGER NOT NULL,
    PRIMARY KEY (kind, region, tid, lane)
) WITHOUT ROWID;
"""

# Side records (rule 5): keys are text, compared as UTF-8 bytes (SQLite's BINARY collation), which is the order of
# Python's str comparison, so both stores list a space in the same order.
SIDE_SCHEMA = """
CREATE TABLE IF NOT EXISTS side_records (
    space TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (space, key)
) WITHOUT ROWID;
"""


def add_sort_key_bounds(
    clauses: list[str], args: list, lower: tuple[bytes, bool] | None, upper: tuple[bytes, bool] | None
) -> None:
    """Append SQL conditions (on column `sk`) for optional (bound, inclusive) sort-key limits."""
    if lower is not None:
        clauses.append("sk >= ?" if lower[1] else "sk > ?")
        args.append(lower[0])
    if upper is not None:
        clauses.append("sk <= ?" if upper[1] else "sk < ?")
        args.append(upper[0])


# sqlite3 binds int, float, str and bytearray parameters as they are, but first looks for an adapter for one of any
# other type, bytes and None included: not finding one costs a tuple, a registry lookup and an AttributeError raised
# and cleared inside the module, some 2,000 instructions a parameter (a replicated record binds seven: its keys, its
# images, a NULL old image), a tenth of a backlog's apply. Identity adapters make the lookup find one at once. The
# registry is the sqlite3 module's, for the whole process; what they return is what they were given, so nothing
# binds differently (an exact type is matched: a subclass of bytes still takes the long way).
def _same(value: None) -> None:
    return value


sqlite3.register_adapter(bytes, bytes.__bytes__)  # an exact bytes object's __bytes__ is the object itself
sqlite3.register_adapter(type(None), _same)

WAL_CHECKPOINT_PAGES = 10_000
CACHE_KIB = 64 * 1024
_KEYS_PER_QUERY = 256  # keys per batched read: 770 parameters, well under SQLite's limit
_RECORDS_BY_KEYS = (
    "SELECT k.column2, k.column3, i.item, i.version, t.version, i.size FROM (VALUES {values}) AS k"
    " LEFT JOIN items AS i ON i.tid = ? AND i.h = k.column1 AND i.pk = k.column2 AND i.sk = k.column3"
    " LEFT JOIN tombstones AS t ON t.tid = ? AND t.h = k.column1 AND t.pk = k.column2 AND t.sk = k.column3"
)


# The same read of a table that holds no tombstone (most tables; a global table before its first delete): the items
# alone, and only the keys that have one (a backlog of new items reads no row at all).
_ITEMS_BY_KEYS = (
    "SELECT k.column2, k.column3, i.item, i.version, NULL, i.size FROM (VALUES {values}) AS k"
    " CROSS JOIN items AS i ON i.tid = ? AND i.h = k.column1 AND i.pk = k.column2 AND i.sk = k.column3"
)  # CROSS JOIN: SQLite keeps the keys the outer loop, each a primary-key seek (never a scan of the items)
_HAS_TOMBSTONES = "SELECT 1 FROM tombstones WHERE tid = ? LIMIT 1"

# The same reads for keys without a sort key (a table with a partition key only, where every sort key is b""): the
# rows of the keys' partition hashes, a list of integers instead of (h, pk, sk) triples (a third of the parameters
# to bind, no VALUES table to build: about a quarter less per key). A hash shared with another key (two partition
# keys of one 32-bit hash) also brings that key's row: the caller keeps only the keys it asked for.
_ITEMS_BY_HASHES = "SELECT pk, sk, item, version, size FROM items WHERE tid = ? AND h IN ({values})"
_TOMBSTONES_BY_HASHES = "SELECT pk, sk, version FROM tombstones WHERE tid = ? AND h IN ({values})"

# The stored sizes of a batch's keys that hold an item (`_item_totals_change`).
_SIZES_BY_KEYS = (
    "SELECT k.column2, k.column3, i.size FROM (VALUES {values}) AS k"
    " CROSS JOIN items AS i ON i.tid = ? AND i.h = k.column1 AND i.pk = k.column2 AND i.sk = k.column3"
)


def _padded(count: int) -> int:
    """A batched read's VALUES length for `count` keys: as it is under 8, else the multiple of 8 above (the list is
    padded by repeating a key, which finds the same rows), so a few dozen statement texts serve every batch size
    (sqlite3 caches prepared statements by text)."""
    return count if count < 8 else -(-count // 8) * 8


@functools.lru_cache(maxsize=256)
def _by_keys(template: str, size: int) -> str:
    """`template` (one of the *_BY_KEYS reads) with a VALUES list of `size` (h, pk, sk) rows."""
    return template.format(values=",".join(["(?, ?, ?)"] * size))


@functools.lru_cache(maxsize=256)
def _by_hashes(template: str, size: int) -> str:
    """`template` (one of the *_BY_HASHES reads) with an IN list of `size` hashes."""
    return template.format(values=",".join(["?"] * size))


def _rows_by_hashes(db: sqlite3.Connection, template: str, tid: int, hashes: list[int]):
    """The rows of a *_BY_HASHES read for `hashes`, a chunk of _KEYS_PER_QUERY at a time (padded as `_rows_by_keys`
    pads, by repeating a hash: an IN list finds each row once)."""
    for start in range(0, len(hashes), _KEYS_PER_QUERY):
        chunk = hashes[start : start + _KEYS_PER_QUERY]
        size = _padded(len(chunk))
        yield from db.execute(_by_hashes(template, size), [tid, *chunk, *chunk[-1:] * (size - len(chunk))])


def _rows_by_keys(db: sqlite3.Connection, template: str, keys: list[tuple[int, bytes, bytes]], tail: tuple):
    """The rows of a *_BY_KEYS read for `keys` ((h, pk, sk) each; `tail` binds the statement's table ids), a chunk
    of _KEYS_PER_QUERY at a time. The keys are a VALUES list joined to the tables' primary keys: a row-value IN
    would scan the whole table."""
    for start in range(0, len(keys), _KEYS_PER_QUERY):
        chunk = keys[start : start + _KEYS_PER_QUERY]
        size = _padded(len(chunk))
        args: list = []
        for key in chunk:
            args += key
        args += args[-3:] * (size - len(chunk))
        args += tail
        yield from db.execute(_by_keys(template, size), args)


ITEM_TOTALS = "item_totals"  # each table's item count and bytes (running_totals.py)

_PUT_ITEM = "INSERT OR REPLACE INTO items (tid, h, pk, sk, item, size, version) VALUES (?, ?, ?, ?, ?, ?, ?)"
# The same put of an item whose sort key is empty (every item of a table without one): the empty blob is written in
# the statement instead of bound (X'' is the blob b"" binds to, so the row is the same). Why: even with the identity
# adapter (`_same`), the driver's adapter lookup for a bytes or None parameter builds a tuple, hashes it, looks it up
# and calls the adapter, some 1,100 instructions a parameter. For the same reason `_write_items` binds an item's
# serialisation as a bytearray (which the driver binds as it is, as a BLOB of the same bytes): the copy costs about
# half a lookup, and the change log's row binds the same object (`ItemWrite.blob`), so it saves two.
_PUT_ITEM_NO_SK = "INSERT OR REPLACE INTO items (tid, h, pk, sk, item, size, version) VALUES (?, ?, ?, X'', ?, ?, ?)"
# Inserts of many rows (a replicated batch's) go ROWS_PER_STATEMENT rows to a statement, the rest with `executemany`
# (`insert_rows`): one execution of a statement per row costs its program's setup and teardown, a call through the
# driver and a release and reacquisition of the GIL each. 64 rows of up to 10 parameters stay far below SQLite's
# limit of 32,766.
ROWS_PER_STATEMENT = 64


def multi_row(insert: str) -> str:
    """`insert` (an `INSERT [OR REPLACE] INTO ... VALUES (...)` of one row) as an INSERT OR FAIL of
    ROWS_PER_STATEMENT rows. OR FAIL: a statement of many rows that could abort part-way (the default resolution, or
    REPLACE, which aborts on a NULL in a NOT NULL column) makes SQLite keep a statement journal, a copy of every page
    the statement changes, written to a temporary file; FAIL keeps the statement's earlier rows instead and stops with
    the IntegrityError, on which the write rolls back whole (its transaction or savepoint), as after any failure. So
    it only serves rows no existing row can conflict with."""
    head, row = insert.split(" VALUES ", 1)
    head = head.replace("INSERT OR REPLACE INTO ", "INSERT INTO ").replace("INSERT INTO ", "INSERT OR FAIL INTO ", 1)
    return f"{head} VALUES " + ", ".join([row] * ROWS_PER_STATEMENT)


def insert_rows(db: sqlite3.Connection, insert: str, many: str, rows: list[tuple]) -> None:
    """Insert `rows` in the order given: ROWS_PER_STATEMENT at a time with `many` (`multi_row(insert)`), the rest
    with `executemany` of `insert`."""
    whole = len(rows) - len(rows) % ROWS_PER_STATEMENT
    for start in range(0, whole, ROWS_PER_STATEMENT):
        db.execute(many, list(chain.from_iterable(rows[start : start + ROWS_PER_STATEMENT])))
    if whole < len(rows):
        db.executemany(insert, rows[whole:])


# A replicated batch's puts of keys that hold no item row (`_add_items`). Only where the row is known to be absent:
# a replicated batch read every key's row in its own transaction, before any write of it (`ItemWrite.old_size` None,
# engine/replica.py), so a plain INSERT does what the REPLACE would. A row there after all (never, by the read)
# fails the batch with IntegrityError rather than count an item twice.
_ADD_ITEMS = {put: multi_row(put) for put in (_PUT_ITEM, _PUT_ITEM_NO_SK)}


def _add_items(db: sqlite3.Connection, sql: str, rows: list[tuple]) -> None:
    """A run's puts of absent keys (`sql` the run's put, `_PUT_ITEM` or `_PUT_ITEM_NO_SK`), before its other puts:
    a key absent when its put was prepared was put by no earlier write of the run (it would hold a row then), so its
    later puts in the run, all among the others, still come after it."""
    insert_rows(db, sql, _ADD_ITEMS[sql], rows)


_DELETE_ITEM = "DELETE FROM items WHERE tid = ? AND h = ? AND pk = ? AND sk = ?"
_PUT_TOMBSTONE = "INSERT OR REPLACE INTO tombstones (tid, h, pk, sk, version, deleted_at) VALUES (?, ?, ?, ?, ?, ?)"
_DELETE_TOMBSTONE = "DELETE FROM tombstones WHERE tid = ? AND h = ? AND pk = ? AND sk = ?"


def _item_totals_change(db: sqlite3.Connection, changes: list[tuple]) -> dict:
    """Per table id, [items, bytes] the batch's item rows add (negative: remove). `changes` are (tid, h, pk, sk, new
    size or None for a delete, the replaced row's size: `ItemWrite.old_size`) in the batch's order. Where the writer
    did not give the replaced row's size, it is read (one batched read of the rows stored before the batch); then
    the changes are followed one by one, so a key written twice in the batch counts as its last write left it.
    When every change gives its replaced size, nothing is read and no key needs following (`_write_items` sums such
    a batch's totals itself, without calling this)."""
    keys: dict[int, dict[tuple[int, bytes, bytes], None]] = {}
    for tid, h, pk, sk, _size, old_size in changes:
        if old_size is UNKNOWN:
            keys.setdefault(tid, {})[(h, pk, sk)] = None
    stored: dict[tuple[int, bytes, bytes], int] = {}
    for tid, wanted in keys.items():
        for pk, sk, stored_size in _rows_by_keys(db, _SIZES_BY_KEYS, list(wanted), (tid,)):
            stored[(tid, pk, sk)] = stored_size
    follow = bool(keys)
    totals: dict[int, list[int]] = {}
    for tid, _h, pk, sk, size, old in changes:
        if follow:
            key = (tid, pk, sk)
            if old is UNKNOWN:
                old = stored.get(key)  # as stored before the batch, or as a write before this one in it left it
            if size is None:
                stored.pop(key, None)
            else:
                stored[key] = size
        change = totals.get(tid)
        if change is None:
            change = totals[tid] = [0, 0]
        if old is not None:
            change[0] -= 1
            change[1] -= old
        if size is not None:
            change[0] += 1
            change[1] += size
    return totals


def _write_items(db: sqlite3.Connection, tids: dict[str, int], writes: list[ItemWrite]) -> None:
    """The item and tombstone rows of a batch, in the batch's order, and the item totals they change. Consecutive
    rows of the same statement go in one `executemany` (a replicated batch of 500 puts is one call, not 500): each
    statement still runs once per row in order, so a key written twice in a batch ends as its last write left it.
    A replicated batch's puts of keys that hold no row go many rows to a statement instead (`_add_items`).

    The totals (running_totals.py) are counted here, for the batch at once, rather than by row triggers: a trigger
    costs each row a program of its own and a statement journal, about a third of a row's insert, while a batch's
    replaced sizes are given by its writer (a replicated batch read them with its stored versions) or read at once."""
    statement: str | None = None
    rows: list[tuple] = []
    added: list[tuple] = []  # the current run's puts of keys known to hold no item row (`_add_items`)
    runs: list[tuple[str, list[tuple], list[tuple]]] = []
    # Whether some write did not give the size of the row it replaces: then the totals need its changes followed one
    # by one (`_item_totals_change`); else (a replicated batch) they are summed here as the rows are made. A local
    # batch's first write usually does not give it, so this looks no further.
    unknown = any(w.old_size is UNKNOWN for w in writes)
    changes: list[tuple] = []  # for `_item_totals_change`, when `unknown`
    totals: dict[int, list[int]] = {}  # per table id, [items, bytes] added (when not `unknown`)
    change: list[int] = [0, 0]
    dumps = orjson.dumps
    table = tid = None
    for w in writes:
        if w.table is not table:  # a batch's writes are mostly of one table (a replicated batch: all of them)
            table = w.table
            tid = tids[table]
            change = totals.setdefault(tid, [0, 0])
        pk, sk = w.pk, w.sk
        h = partition_hash(pk)
        item = w.item
        old_size = w.old_size
        new = False
        if item is None:
            sql, row = _DELETE_ITEM, (tid, h, pk, sk)
            extra = (_PUT_TOMBSTONE, (tid, h, pk, sk, w.version, w.deleted_at)) if w.tombstone else None
            if unknown:
                changes.append((tid, h, pk, sk, None, old_size))
            elif old_size is not None:
                change[0] -= 1
                change[1] -= old_size  # type: ignore[operator]
        else:
            # A bytearray: bound without the adapter lookup (see `_PUT_ITEM_NO_SK`), here and in the change log's row.
            w.blob = blob = bytearray(dumps(item))
            size = w.size
            if sk:
                sql, row = _PUT_ITEM, (tid, h, pk, sk, blob, size, w.version)
            else:  # a table without a sort key (or its empty one): the sort key is written in the statement
                sql, row = _PUT_ITEM_NO_SK, (tid, h, pk, blob, size, w.version)
            extra = (_DELETE_TOMBSTONE, (tid, h, pk, sk)) if w.had_tombstone else None
            if unknown:
                changes.append((tid, h, pk, sk, size, old_size))
            else:
                if old_size is not None:
                    change[0] -= 1
                    change[1] -= old_size  # type: ignore[operator]
                change[0] += 1
                change[1] += size
                new = old_size is None and w.origin is not None
        if sql is not statement:
            if rows or added:
                runs.append((statement, rows, added))  # type: ignore[arg-type]
            statement, rows, added = sql, [], []
        if new:
            added.append(row)
        else:
            rows.append(row)
        if extra is not None:
            sql, row = extra
            if rows or added:
                runs.append((statement, rows, added))  # type: ignore[arg-type]
            statement, rows, added = sql, [row], []
    if rows or added:
        runs.append((statement, rows, added))  # type: ignore[arg-type]
    if not writes:
        return
    if unknown:
        totals = _item_totals_change(db, changes)  # before the rows change: it reads what they replace
    for sql, batch, new_rows in runs:
        if new_rows:
            _add_items(db, sql, new_rows)  # before the run's other rows: see `_add_items`
        if batch:
            db.executemany(sql, batch)
    running_totals.add(db, ITEM_TOTALS, totals)


class SqliteStore:
    """Items and table definitions of one region. `path=None` keeps everything in memory. `exclusive`: this
    connection is the database's only user for its lifetime (a region process, which locks its data dir), so
    SQLite keeps the WAL's index in process memory and takes no file locks per transaction
    (docs/architecture.md, group commit decision 9); other processes cannot open the file meanwhile."""

    def __init__(self, path: str | Path | None = None, exclusive: bool = False) -> None:
        self.path = str(path) if path is not None else ":memory:"
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        if path is not None:
            if exclusive:
                self.db.execute("PRAGMA locking_mode=EXCLUSIVE")
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            # Checkpoints (WAL pages copied back into the database, with an fsync of both) every ~40 MB of WAL rather
            # than SQLite's 4 MB: a replicated batch of 500 items on a random-keyed table dirties ~500 pages, so the
            # default checkpointed every other batch, and a page rewritten by several batches is now copied once.
            self.db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
            # A page cache of 64 MB rather than 2 MB, so the B-tree pages a batch of random keys touches stay in
            # memory (read from the OS cache, with a system call each, otherwise).
            self.db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self.db.executescript(SCHEMA)
        self.db.executescript(TOKENS_SCHEMA)
        self.db.executescript(REPLICATION_SCHEMA)
        self.db.executescript(SIDE_SCHEMA)
        running_totals.enable(self.db)
        running_totals.keep(self.db, "items", "tid", ITEM_TOTALS)  # counted by `_write_items`, not triggers
        self._tids: dict[str, int] = {}
        self._backups = None  # backup_store(), made on first use
        self.commit_hooks: list[CommitHook] = []
        self.grouped = False  # a group commit is open (rule 5)
        self._savepoints = True  # the open group's writes are savepoints (rule 5)
        self._savepoint = False  # the write in progress in the open group has a savepoint of its own (rule 5)
        self._broken = False  # a write of the open group (without savepoints) failed: it can only roll back whole
        for name, tid in self.db.execute("SELECT name, tid FROM tables"):
            self._tids[name] = tid

    # ----------------------------------------------------------------------------------------------- transactions

    def _begin(self, refusable: bool = True) -> None:
        if self.grouped:
            self._savepoint = self._savepoints and refusable
            if self._savepoint:
                self.db.execute("SAVEPOINT write")
            return
        self.db.execute("BEGIN")

    def _end(self) -> None:
        if self.grouped:
            if self._savepoint:
                self.db.execute("RELEASE write")
            return
        self.db.execute("COMMIT")

    def _abort(self) -> None:
        if self.grouped:
            if not self._savepoint:  # part of this write may be in the transaction: the group goes whole
                self._broken = True
                return
            self.db.execute("ROLLBACK TO write")  # this write alone: the group's earlier writes stay
            self.db.execute("RELEASE write")
        elif self.db.in_transaction:  # a failed COMMIT of SQLite's own may have rolled back already
            self.db.execute("ROLLBACK")

    def begin_group(self, savepoints: bool = True) -> None:
        """Open a group commit (rule 5): the writes until `commit_group` commit in one transaction, each a
        savepoint unless `savepoints` is False (then they stand or fall together)."""
        assert not self.grouped, "a group commit is already open"
        self.db.execute("BEGIN")
        self.grouped = True
        self._savepoints = savepoints
        self._broken = False

    def commit_group(self) -> None:
        """Commit the open group: durable when this returns, as a single `write` is. If the commit fails, or a
        write of a group without savepoints failed, the whole group is rolled back and the error raised."""
        self.grouped = False
        try:
            if self._broken:
                raise sqlite3.OperationalError("a write of the group failed: the group is rolled back")
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        finally:
            self._savepoints, self._broken = True, False

    def change_log_store(self):
        from .change_log_store import ChangeLogStore

        return ChangeLogStore(self)

    def index_store(self):
        from .index_store import IndexStore

        return IndexStore(self)

    def backup_store(self):
        """The store's backups, made once: its schema is created the first time (executescript commits whatever is
        pending, so it must not run again on every backup call)."""
        if self._backups is None:
            from .backup_store import BackupStore

            self._backups = BackupStore(self)
        return self._backups

    def snapshot(self) -> SqliteStore:
        """A new in-memory store holding exactly this store's committed data: what a restarted process finds on
        its disk (the simulator's crash); hooks and caches stay with this object."""
        fresh = SqliteStore(None)
        self.db.backup(fresh.db)
        fresh._tids = {name: tid for name, tid in fresh.db.execute("SELECT name, tid FROM tables")}
        return fresh

    def purge_tombstones(self, before: float, limit: int) -> int:
        """Delete up to `limit` tombstones of deletes made before `before`; how many."""
        cursor = self.db.execute(
            "DELETE FROM tombstones WHERE (tid, h, pk, sk) IN"
            " (SELECT tid, h, pk, sk FROM tombstones WHERE deleted_at < ? LIMIT ?)",
            (before, limit),
        )
        return cursor.rowcount

    def highest_version(self) -> str | None:
        """The greatest item version this store holds, live or tombstoned (versions compare as text)."""
        (live,) = self.db.execute("SELECT MAX(version) FROM items").fetchone()
        (dead,) = self.db.execute("SELECT MAX(version) FROM tombstones").fetchone()
        found = [v for v in (live, dead) if v is not None]
        return max(found) if found else None

    def close(self) -> None:
        self.db.close()

    def setting(self, key: str) -> str | None:
        """A value the region keeps about itself across restarts (not about any one table's items)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", ("setting:" + key,)).fetchone()
        return None if row is None else (row[0].decode() if isinstance(row[0], bytes) else str(row[0]))

    def save_setting(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", ("setting:" + key, value))

    # ------------------------------------------------------------------------------------------- table definitions

    def load_tables(self) -> dict[str, dict]:
        return {name: orjson.loads(d) for name, d in self.db.execute("SELECT name, definition FROM tables")}

    def save_table(self, name: str, definition: dict) -> None:
        """Create or replace a table's definition."""
        blob = orjson.dumps(definition)
        if name in self._tids:
            self.db.execute("UPDATE tables SET definition = ? WHERE name = ?", (blob, name))
            return
        tid = self._next_tid()
        self._begin()
        try:
            self.db.execute("INSERT INTO tables (name, tid, definition) VALUES (?, ?, ?)", (name, tid, blob))
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('next_tid', ?)", (str(tid + 1),))
            self._end()
        except BaseException:
            self._abort()
            raise
        self._tids[name] = tid

    def _next_tid(self) -> int:
        # Table ids are never reused, so rows of a dropped table can never show up under a new one.
        row = self.db.execute("SELECT value FROM meta WHERE key = 'next_tid'").fetchone()
        return int(row[0]) if row else 1

    def drop_table(self, name: str) -> None:
        tid = self._tids.pop(name)
        self._begin()
        try:
            # Tombstones and replication positions go with the items: table ids are never reused, so nothing else
            # could ever read them.
            for table in ("items", "tombstones", "replication_positions"):  # fixed names, no input
                self.db.execute(f"DELETE FROM {table} WHERE tid = ?", (tid,))
            self.db.execute("DELETE FROM tables WHERE name = ?", (name,))
            running_totals.forget(self.db, ITEM_TOTALS, tid)
            self._end()
        except BaseException:
            self._abort()
            raise

    # ------------------------------------------------------------------------------------------------------ items

    def get(self, table: str, pk: bytes, sk: bytes, raw: bool = False) -> dict | None:
        """The item, or None; `raw`: as its stored JSON bytes (records.py rule on raw reads)."""
        row = self.db.execute(
            "SELECT item FROM items WHERE tid = ? AND h = ? AND pk = ? AND sk = ?",
            (self._tids[table], partition_hash(pk), pk, sk),
        ).fetchone()
        if row is None:
            return None
        return row[0] if raw else orjson.loads(row[0])

    def get_sized(self, table: str, pk: bytes, sk: bytes, raw: bool = False) -> tuple[dict | None, int, int]:
        """`get` with the item's stored size (0 without one) and the key's partition hash: what the throughput
        model charges, and where, with nothing measured or hashed again."""
        h = partition_hash(pk)
        row = self.db.execute(
            "SELECT item, size FROM items WHERE tid = ? AND h = ? AND pk = ? AND sk = ?", (self._tids[table], h, pk, sk)
        ).fetchone()
        if row is None:
            return None, 0, h
        return (row[0] if raw else orjson.loads(row[0])), row[1], h

    def get_record_sized(
        self, table: str, pk: bytes, sk: bytes, raw: bool = False
    ) -> tuple[dict | None, str | None, bool, int, int]:
        """`get_record` with the live item's stored size (0 without one) and the key's partition hash."""
        tid = self._tids[table]
        h = partition_hash(pk)
        row = self.db.execute(
            "SELECT item, version, size FROM items WHERE tid = ? AND h = ? AND pk = ? AND sk = ?", (tid, h, pk, sk)
        ).fetchone()
        if row is not None:
            return (row[0] if raw else orjson.loads(row[0])), row[1], False, row[2], h
        row = self.db.execute(
            "SELECT version FROM tombstones WHERE tid = ? AND h = ? AND pk = ? AND sk = ?", (tid, h, pk, sk)
        ).fetchone()
        return (None, row[0], True, 0, h) if row is not None else (None, None, False, 0, h)

    def get_record(
        self, table: str, pk: bytes, sk: bytes, raw: bool = False
    ) -> tuple[dict | None, str | None, bool]:
        """(item, version, is_tombstone): the live item and its version, or a tombstone's version, or nothing."""
        tid = self._tids[table]
        h = partition_hash(pk)
        row = self.db.execute(
            "SELECT item, version FROM items WHERE tid = ? AND h = ? AND pk = ? AND sk = ?", (tid, h, pk, sk)
        ).fetchone()
        if row is not None:
            return (row[0] if raw else orjson.loads(row[0])), row[1], False
        row = self.db.execute(
            "SELECT version FROM tombstones WHERE tid = ? AND h = ? AND pk = ? AND sk = ?", (tid, h, pk, sk)
        ).fetchone()
        return (None, row[0], True) if row is not None else (None, None, False)

    def get_records(
        self, table: str, keys: list[tuple[bytes, bytes]]
    ) -> dict[tuple[bytes, bytes], tuple[dict | None, str | None, bool, int | None]]:
        """`get_record` for many keys at once (a replicated batch), with the live item's stored size (None for a
        tombstone): one query per chunk of keys instead of up to two per key. Keys holding neither an item nor a
        tombstone are absent from the result."""
        tid = self._tids[table]
        found: dict[tuple[bytes, bytes], tuple[dict | None, str | None, bool, int | None]] = {}
        if not keys:
            return found
        loads = orjson.loads
        db = self.db
        tombstones = db.execute(_HAS_TOMBSTONES, (tid,)).fetchone() is not None  # else none per key for them
        if not any(sk for _pk, sk in keys):
            return self._records_by_hashes(tid, keys, tombstones)
        if not tombstones:
            template, tail = _ITEMS_BY_KEYS, (tid,)
        else:
            template, tail = _RECORDS_BY_KEYS, (tid, tid)
        rows = _rows_by_keys(db, template, [(partition_hash(pk), pk, sk) for pk, sk in keys], tail)
        for pk, sk, item, version, tombstone, stored_size in rows:
            if item is not None:
                found[(pk, sk)] = (loads(item), version, False, stored_size)
            elif tombstone is not None:
                found[(pk, sk)] = (None, tombstone, True, None)
        return found

    def _records_by_hashes(
        self, tid: int, keys: list[tuple[bytes, bytes]], tombstones: bool
    ) -> dict[tuple[bytes, bytes], tuple[dict | None, str | None, bool, int | None]]:
        """`get_records` for keys without a sort key, read by partition hash (`_ITEMS_BY_HASHES`); an item shadows
        a tombstone of the same key, as in `_RECORDS_BY_KEYS`."""
        wanted = set(keys)
        hashes = list(dict.fromkeys([partition_hash(pk) for pk, _sk in keys]))
        found: dict[tuple[bytes, bytes], tuple[dict | None, str | None, bool, int | None]] = {}
        if tombstones:
            for pk, sk, version in _rows_by_hashes(self.db, _TOMBSTONES_BY_HASHES, tid, hashes):
                if (pk, sk) in wanted:
                    found[(pk, sk)] = (None, version, True, None)
        loads = orjson.loads
        for pk, sk, item, version, stored_size in _rows_by_hashes(self.db, _ITEMS_BY_HASHES, tid, hashes):
            if (pk, sk) in wanted:
                found[(pk, sk)] = (loads(item), version, False, stored_size)
        return found

    def table_id(self, table: str) -> int:
        return self._tids[table]

    def position(self, kind: str, region: str, table: str, lane: int) -> int:
        row = self.db.execute(
            "SELECT pos FROM replication_positions WHERE kind = ? AND region = ? AND tid = ? AND lane = ?",
            (kind, region, self._tids[table], lane),
        ).fetchone()
        return row[0] if row else 0

    def save_position(self, kind: str, region: str, table: str, lane: int, pos: int) -> None:
        """Record one replication position on its own: a single statement is its own transaction (cheaper than
        `write([], positions=...)`'s BEGIN/COMMIT pair, and as atomic)."""
        self.db.execute(
            "INSERT OR REPLACE INTO replication_positions (kind, region, tid, lane, pos) VALUES (?, ?, ?, ?, ?)",
            (kind, region, self._tids[table], lane, pos),
        )

    def delete_positions(self, table: str, region: str) -> None:
        """Forget every position kept about `region` in a table (it left the table's replicas)."""
        self.db.execute(
            "DELETE FROM replication_positions WHERE region = ? AND tid = ?", (region, self._tids[table])
        )

    def table_records(self, table: str, pk: bytes | None = None) -> Iterator[tuple[bytes, bytes, dict, str | None]]:
        """Every item of a table (or of its partition `pk`) as (pk, sk, item, version), in no particular order (a
        new replica's snapshot, a strong range read)."""
        where, args = self._records_where(table, pk)
        for pk_, sk, blob, version in self.db.execute(f"SELECT pk, sk, item, version FROM items WHERE {where}", args):
            yield pk_, sk, orjson.loads(blob), version

    def table_tombstones(self, table: str, pk: bytes | None = None) -> Iterator[tuple[bytes, bytes, str, float]]:
        """Every tombstone of a table (or of its partition `pk`) as (pk, sk, version, deleted_at)."""
        where, args = self._records_where(table, pk)
        yield from self.db.execute(f"SELECT pk, sk, version, deleted_at FROM tombstones WHERE {where}", args)

    def _records_where(self, table: str, pk: bytes | None) -> tuple[str, list]:
        if pk is None:
            return "tid = ?", [self._tids[table]]
        return "tid = ? AND h = ? AND pk = ?", [self._tids[table], partition_hash(pk), pk]

    # ----------------------------------------------------------------------------------------------- side records

    def side_get(self, space: str, key: str) -> bytes | None:
        row = self.db.execute("SELECT value FROM side_records WHERE space = ? AND key = ?", (space, key)).fetchone()
        return row[0] if row else None

    def side_scan(self, space: str, prefix: str = "") -> list[tuple[str, bytes]]:
        """(key, value) of every record of `space` whose key starts with `prefix`, in key order."""
        out = []
        rows = self.db.execute(
            "SELECT key, value FROM side_records WHERE space = ? AND key >= ? ORDER BY key", (space, prefix)
        )
        for key, value in rows:
            if not key.startswith(prefix):
                break
            out.append((key, value))
        return out

    def side_write(self, changes: list[SideChange]) -> None:
        """Apply side-record changes ((space, key, value), value None deleting) in one transaction of their own."""
        self._begin()
        try:
            self.side_stage(self.db, changes)
            self._end()
        except BaseException:
            self._abort()
            raise

    def side_stage(self, tx: sqlite3.Connection, changes: list[SideChange]) -> None:
        """Apply side-record changes on an open transaction (a commit hook's handle): they commit with its items."""
        for space, key, value in changes:
            if value is None:
                tx.execute("DELETE FROM side_records WHERE space = ? AND key = ?", (space, key))
            else:
                tx.execute(
                    "INSERT OR REPLACE INTO side_records (space, key, value) VALUES (?, ?, ?)", (space, key, value)
                )

    def write(
        self,
        writes: list[ItemWrite],
        token: TokenRecord | None = None,
        positions: list[tuple[str, str, str, int, int]] | None = None,
        refusable: bool = True,
    ) -> None:
        """Apply a batch of item writes, and what the commit hooks add to it, atomically and durably.

        `token` (TransactWriteItems' ClientRequestToken) is recorded in the same transaction; the batch may then be
        empty (a transaction of condition checks), and the hooks are not called for an empty batch. `refusable`
        False: no commit hook can refuse this batch, so inside a group it needs no savepoint (rule 5).
        """
        db = self.db
        self._begin(refusable)
        try:
            _write_items(db, self._tids, writes)
            for kind, region, table, lane, pos in positions or ():
                db.execute(
                    "INSERT OR REPLACE INTO replication_positions (kind, region, tid, lane, pos) VALUES (?, ?, ?, ?, ?)",
                    (kind, region, self._tids[table], lane, pos),
                )
            if writes:
                for hook in self.commit_hooks:
                    hook(db, writes)
            if token is not None:
                db.execute("DELETE FROM transaction_tokens WHERE expires <= ?", (token.now,))
                db.execute(
                    "INSERT OR REPLACE INTO transaction_tokens (token, fingerprint, expires) VALUES (?, ?, ?)",
                    (token.token, token.fingerprint, token.expires),
                )
            self._end()
        except BaseException:
            self._abort()
            raise

    def transaction_token(self, token: str, now: float) -> bytes | None:
        """The fingerprint recorded with an unexpired client request token, or None."""
        row = self.db.execute(
            "SELECT fingerprint FROM transaction_tokens WHERE token = ? AND expires > ?", (token, now)
        ).fetchone()
        return row[0] if row else None

    def query(
        self,
        table: str,
        pk: bytes,
        lower: tuple[bytes, bool] | None = None,
        upper: tuple[bytes, bool] | None = None,
        forward: bool = True,
        start_after: bytes | None = None,
        raw: bool = False,
    ) -> Iterator[StoredItem]:
        """Items of one partition in sort-key order, within optional (bound, inclusive) limits.

        `start_after` is the sort key of the last item already returned (ExclusiveStartKey); iteration resumes
        strictly after it in the direction of travel. `raw`: items as their stored JSON bytes.
        """
        h = partition_hash(pk)
        clauses = ["tid = ?", "h = ?", "pk = ?"]
        args: list = [self._tids[table], h, pk]
        add_sort_key_bounds(clauses, args, lower, upper)
        if start_after is not None:
            clauses.append("sk > ?" if forward else "sk < ?")
            args.append(start_after)
        order = "ASC" if forward else "DESC"
        sql = f"SELECT sk, item, size FROM items WHERE {' AND '.join(clauses)} ORDER BY sk {order}"
        if raw:
            for sk, item, size in self.db.execute(sql, args):
                yield StoredItem(h, pk, sk, item, size)
            return
        loads = orjson.loads
        for sk, item, size in self.db.execute(sql, args):
            yield StoredItem(h, pk, sk, loads(item), size)

    def scan(
        self,
        table: str,
        hash_range: tuple[int, int] = (0, HASH_SPACE),
        start_after: tuple[int, bytes, bytes] | None = None,
    ) -> Iterator[StoredItem]:
        """Items in (hash, partition key, sort key) order, hashes in [lo, hi), resuming after `start_after`."""
        lo, hi = hash_range
        args: list = [self._tids[table], lo, hi]
        resume = ""
        if start_after is not None:
            resume = " AND (h, pk, sk) > (?, ?, ?)"
            args.extend(start_after)
        sql = (
            "SELECT h, pk, sk, item, size FROM items WHERE tid = ? AND h >= ? AND h < ?"
            f"{resume} ORDER BY h, pk, sk"
        )
        for h, pk, sk, item, size in self.db.execute(sql, args):
            yield StoredItem(h, pk, sk, orjson.loads(item), size)

    def table_stats(self, table: str) -> tuple[int, int]:
        """(item count, total item bytes) of a table."""
        return running_totals.read(self.db, ITEM_TOTALS, self._tids[table])

    def partition_bytes(self, table: str, pk: bytes) -> int:
        """Total size of one item collection (for the 10 GB local-secondary-index rule)."""
        (size,) = self.db.execute(
            "SELECT COALESCE(SUM(size), 0) FROM items WHERE tid = ? AND h = ? AND pk = ?",
            (self._tids[table], partition_hash(pk), pk),
        ).fetchone()
        return size
