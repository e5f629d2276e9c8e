"""Secondary index entries, in the region's SQLite database next to the items.

Rules
1. An index entry is keyed (index id, partition hash of the index partition key, index partition key, index sort
   key, base partition key, base sort key), all as order-preserving byte strings (`values.encode_key_value`), so a
   Query on an index is one range scan in DynamoDB's order and a Scan of an index walks it in hash order, the way
   Scan walks a table (a parallel scan's segments are ranges of the hash). The base key ends the primary key
   because many items may share one index key; it orders them stably.
2. The row holds the projected item (normalised wire JSON, orjson) and its size, so reads never touch the base
   table unless an LSI read asks for attributes the index does not project.
3. Index ids are never reused (AUTOINCREMENT): entries of a dropped index, or of an index of a dropped table, are
   purged in the background, and until then they can never show up under a new index of the same name.
   Ids are keyed by the table's `table_id` (a UUID per incarnation of a table), not its name, for the same reason.
4. Writes to entries happen on the caller's open transaction (the commit hook's), so they commit or roll back
   with the items they index.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import orjson

from . import running_totals
from .records import HASH_SPACE, IndexRow
from .sqlite_store import SqliteStore, add_sort_key_bounds

INDEX_TOTALS = "index_totals"  # each index's entry count and projected bytes (running_totals.py)

SCHEMA = """
CREATE TABLE IF NOT EXISTS index_ids (
    iid INTEGER PRIMARY KEY AUTOINCREMENT,
    table_uuid TEXT NOT NULL,
    name TEXT NOT NULL,
    dropped INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX IF NOT EXISTS index_ids_live ON index_ids (table_uuid, name) WHERE dropped = 0;
CREATE TABLE IF NOT EXISTS index_items (
    iid INTEGER NOT NULL,
    h INTEGER NOT NULL,
    pk BLOB NOT NULL,
    sk BLOB NOT NULL,
    bpk BLOB NOT NULL,
    bsk BLOB NOT NULL,
    item BLOB NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (iid, h, pk, sk, bpk, bsk)
) WITHOUT ROWID;
"""


class IndexStore:
    """Index entries of one region, on the item store's connection."""

    def __init__(self, store: SqliteStore) -> None:
        self.db: sqlite3.Connection = store.db
        self.db.executescript(SCHEMA)
        running_totals.install(self.db, "index_items", "iid", INDEX_TOTALS)

    # ------------------------------------------------------------------------------------------------- index ids

    def live_ids(self) -> dict[tuple[str, str], int]:
        """{(table uuid, index name): index id} of every index not dropped."""
        rows = self.db.execute("SELECT table_uuid, name, iid FROM index_ids WHERE dropped = 0")
        return {(table_uuid, name): iid for table_uuid, name, iid in rows}

    def create_id(self, table_uuid: str, name: str) -> int:
        cursor = self.db.execute("INSERT INTO index_ids (table_uuid, name) VALUES (?, ?)", (table_uuid, name))
        return cursor.lastrowid

    def drop_id(self, iid: int) -> None:
        """Retire an index id; its entries stay until `purge` removes them."""
        self.db.execute("UPDATE index_ids SET dropped = 1 WHERE iid = ?", (iid,))

    def dropped_ids(self) -> list[int]:
        return [iid for (iid,) in self.db.execute("SELECT iid FROM index_ids WHERE dropped = 1 ORDER BY iid")]

    def purge(self, iid: int, limit: int) -> int:
        """Delete up to `limit` entries of a dropped index (and the id itself once none is left); rows deleted."""
        db = self.db
        db.execute("BEGIN")
        try:
            deleted = db.execute(
                "DELETE FROM index_items WHERE (iid, h, pk, sk, bpk, bsk) IN "
                "(SELECT iid, h, pk, sk, bpk, bsk FROM index_items WHERE iid = ? LIMIT ?)",
                (iid, limit),
            ).rowcount
            if deleted < limit:
                db.execute("DELETE FROM index_ids WHERE iid = ? AND dropped = 1", (iid,))
                running_totals.forget(db, INDEX_TOTALS, iid)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return deleted

    # ---------------------------------------------------------------------------------------------------- writes
    # On the caller's transaction (see rule 4).

    @staticmethod
    def put(db: sqlite3.Connection, iid: int, key: tuple, item: dict, size: int) -> None:
        """Insert or replace an entry; `key` is (h, pk, sk, bpk, bsk)."""
        db.execute(
            "INSERT OR REPLACE INTO index_items (iid, h, pk, sk, bpk, bsk, item, size) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (iid, *key, orjson.dumps(item), size),
        )

    @staticmethod
    def delete(db: sqlite3.Connection, iid: int, key: tuple) -> None:
        db.execute(
            "DELETE FROM index_items WHERE iid = ? AND h = ? AND pk = ? AND sk = ? AND bpk = ? AND bsk = ?",
            (iid, *key),
        )

    def put_many(self, rows: list[tuple]) -> None:
        """Insert or replace (iid, h, pk, sk, bpk, bsk, item bytes, size) rows in one transaction (backfill)."""
        db = self.db
        db.execute("BEGIN")
        try:
            db.executemany(
                "INSERT OR REPLACE INTO index_items (iid, h, pk, sk, bpk, bsk, item, size) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # ----------------------------------------------------------------------------------------------------- reads

    def query(
        self,
        iid: int,
        h: int,
        pk: bytes,
        lower: tuple[bytes, bool] | None = None,
        upper: tuple[bytes, bool] | None = None,
        forward: bool = True,
        start_after: tuple[bytes, bytes, bytes] | None = None,
    ) -> Iterator[IndexRow]:
        """Entries of one index partition in (index sort key, base key) order, within optional sort-key bounds.

        `start_after` is the (index sort key, base partition key, base sort key) of the last entry already
        returned; iteration resumes strictly after it in the direction of travel.
        """
        clauses = ["iid = ?", "h = ?", "pk = ?"]
        args: list = [iid, h, pk]
        add_sort_key_bounds(clauses, args, lower, upper)
        if start_after is not None:
            clauses.append("(sk, bpk, bsk) > (?, ?, ?)" if forward else "(sk, bpk, bsk) < (?, ?, ?)")
            args.extend(start_after)
        order = "ASC" if forward else "DESC"
        sql = (
            f"SELECT sk, bpk, bsk, item, size FROM index_items WHERE {' AND '.join(clauses)} "
            f"ORDER BY sk {order}, bpk {order}, bsk {order}"
        )
        for sk, bpk, bsk, item, size in self.db.execute(sql, args):
            yield IndexRow(h, pk, sk, bpk, bsk, orjson.loads(item), size)

    def scan(
        self,
        iid: int,
        hash_range: tuple[int, int] = (0, HASH_SPACE),
        start_after: tuple[int, bytes, bytes, bytes, bytes] | None = None,
    ) -> Iterator[IndexRow]:
        """Entries in key order, index partition hashes in [lo, hi), resuming after `start_after`."""
        lo, hi = hash_range
        args: list = [iid, lo, hi]
        resume = ""
        if start_after is not None:
            resume = " AND (h, pk, sk, bpk, bsk) > (?, ?, ?, ?, ?)"
            args.extend(start_after)
        sql = (
            "SELECT h, pk, sk, bpk, bsk, item, size FROM index_items WHERE iid = ? AND h >= ? AND h < ?"
            f"{resume} ORDER BY h, pk, sk, bpk, bsk"
        )
        for h, pk, sk, bpk, bsk, item, size in self.db.execute(sql, args):
            yield IndexRow(h, pk, sk, bpk, bsk, orjson.loads(item), size)

    def stats(self, iid: int) -> tuple[int, int]:
        """(entry count, total projected bytes) of an index."""
        return running_totals.read(self.db, INDEX_TOTALS, iid)

    def partition_stats(self, iid: int, h: int, pk: bytes) -> tuple[int, int]:
        """(entry count, projected bytes) of one index partition (an LSI's share of an item collection)."""
        count, size = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM index_items WHERE iid = ? AND h = ? AND pk = ?",
            (iid, h, pk),
        ).fetchone()
        return count, size
