"""On-demand backups in the region's SQLite database, next to the tables they copy (see `engine/backups.py`).

Rules
1. A backup is one `backups` row (its ARN, creation time and the JSON record the engine keeps: the source table's
   definition at backup time and the backup's details) plus its items in `backup_items`, numbered from 0. Both are
   written in one transaction, so a backup is either whole or absent, also after `kill -9`.
2. Items are the stored item JSON, copied as they are: a backup never changes, whatever happens to its table
   (updates, deletion, a table of the same name created later).
3. Listing is in creation order (then ARN), the order ListBackups pages in.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

import orjson

from .sqlite_store import SqliteStore

SCHEMA = """
CREATE TABLE IF NOT EXISTS backups (
    arn TEXT PRIMARY KEY,
    created REAL NOT NULL,
    record BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS backup_items (
    arn TEXT NOT NULL,
    n INTEGER NOT NULL,
    item BLOB NOT NULL,
    PRIMARY KEY (arn, n)
) WITHOUT ROWID;
"""


class BackupStore:
    def __init__(self, store: SqliteStore) -> None:
        self.db: sqlite3.Connection = store.db
        self.db.executescript(SCHEMA)

    def add(self, arn: str, created: float, record: dict, items: Iterable[dict]) -> None:
        """Store a backup and its items atomically."""
        db = self.db
        db.execute("BEGIN")
        try:
            db.execute(
                "INSERT INTO backups (arn, created, record) VALUES (?, ?, ?)", (arn, created, orjson.dumps(record))
            )
            db.executemany(
                "INSERT INTO backup_items (arn, n, item) VALUES (?, ?, ?)",
                ((arn, n, orjson.dumps(item)) for n, item in enumerate(items)),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def get(self, arn: str) -> dict | None:
        row = self.db.execute("SELECT record FROM backups WHERE arn = ?", (arn,)).fetchone()
        return orjson.loads(row[0]) if row else None

    def records(self) -> list[dict]:
        """Every backup's record, in creation order (then ARN)."""
        return [orjson.loads(r) for (r,) in self.db.execute("SELECT record FROM backups ORDER BY created, arn")]

    def items(self, arn: str) -> Iterator[dict]:
        for (blob,) in self.db.execute("SELECT item FROM backup_items WHERE arn = ? ORDER BY n", (arn,)):
            yield orjson.loads(blob)

    def delete(self, arn: str) -> None:
        db = self.db
        db.execute("BEGIN")
        try:
            db.execute("DELETE FROM backup_items WHERE arn = ?", (arn,))
            db.execute("DELETE FROM backups WHERE arn = ?", (arn,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
