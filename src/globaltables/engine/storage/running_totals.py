"""Row counts and bytes kept beside the rows, per table (items) and per index (index entries).

Why: DescribeTable's ItemCount and TableSizeBytes, and the throughput model's 10 GB rule (engine/throughput.py,
SIZE_RECHECK_S), ask for a table's size. Summing its rows costs a pass over every item, and a region serves
nothing meanwhile: about 0.2 s at 200,000 items, seconds at millions, once a minute. The totals are kept instead,
inside the transaction of every insert, replace and delete; reading them is one row. Two ways:
- `install`: two triggers keep them (index entries), whichever statement changed a row. A REPLACE fires the delete
  trigger only with `recursive_triggers` on, so `enable` sets it on the connection (a per-connection setting, not
  stored in the file).
- `keep`: the rows' one writer adds each batch's change itself (`add`; items, storage/sqlite_store.py
  `_write_items`), which costs a batch one statement instead of a trigger program per row.

A database made before the totals existed gets them counted once, when the triggers are first installed.
"""

from __future__ import annotations

import sqlite3


def enable(db: sqlite3.Connection) -> None:
    """Triggers fire for the rows a REPLACE removes (SQLite: "delete triggers fire if and only if recursive triggers
    are enabled")."""
    db.execute("PRAGMA recursive_triggers = ON")


def install(db: sqlite3.Connection, rows: str, key: str, totals: str) -> None:
    """Keep `totals` (key -> count, bytes) for table `rows`, whose rows carry `key` and `size` columns. Names are
    the stores' own constants, never input. Counts what is already there when the triggers are new."""
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?", (f"{totals}_add",))
    if exists.fetchone() is not None:
        return
    db.execute("BEGIN")
    try:
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {totals} "
            f"(key INTEGER PRIMARY KEY, count INTEGER NOT NULL, bytes INTEGER NOT NULL)"
        )
        db.execute(f"DELETE FROM {totals}")
        db.execute(f"INSERT INTO {totals} SELECT {key}, COUNT(*), SUM(size) FROM {rows} GROUP BY {key}")
        db.execute(
            f"CREATE TRIGGER {totals}_add AFTER INSERT ON {rows} BEGIN "
            f"INSERT INTO {totals} (key, count, bytes) VALUES (NEW.{key}, 1, NEW.size) "
            f"ON CONFLICT (key) DO UPDATE SET count = count + 1, bytes = bytes + excluded.bytes; END"
        )
        db.execute(
            f"CREATE TRIGGER {totals}_remove AFTER DELETE ON {rows} BEGIN "
            f"UPDATE {totals} SET count = count - 1, bytes = bytes - OLD.size WHERE key = OLD.{key}; END"
        )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def keep(db: sqlite3.Connection, rows: str, key: str, totals: str) -> None:
    """Keep `totals` (key -> count, bytes) for table `rows` without triggers: its one writer adds each batch's
    change itself (`add`, in the batch's transaction; the item store, whose rows change in one place). Counts what
    is there when the totals table is new; drops the triggers a database of an earlier release has (the totals they
    kept are current). An earlier release opening the database again finds no trigger and counts afresh."""
    exists = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (totals,)).fetchone()
    triggers = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?)", (f"{totals}_add", f"{totals}_remove")
    ).fetchone()
    if exists is not None and triggers is None:
        return
    db.execute("BEGIN")
    try:
        if exists is None:
            db.execute(
                f"CREATE TABLE {totals} (key INTEGER PRIMARY KEY, count INTEGER NOT NULL, bytes INTEGER NOT NULL)"
            )
            db.execute(f"INSERT INTO {totals} SELECT {key}, COUNT(*), SUM(size) FROM {rows} GROUP BY {key}")
        db.execute(f"DROP TRIGGER IF EXISTS {totals}_add")
        db.execute(f"DROP TRIGGER IF EXISTS {totals}_remove")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def add(db: sqlite3.Connection, totals: str, changes: dict[int, list[int]]) -> None:
    """Add each key's [count, bytes] change to `totals` (`keep`), on the writer's open transaction."""
    for key, (count, size) in changes.items():
        if count or size:
            db.execute(
                f"INSERT INTO {totals} (key, count, bytes) VALUES (?, ?, ?) "
                f"ON CONFLICT (key) DO UPDATE SET count = count + excluded.count, bytes = bytes + excluded.bytes",
                (key, count, size),
            )


def read(db: sqlite3.Connection, totals: str, key: int) -> tuple[int, int]:
    """(row count, total bytes) under `key`: (0, 0) for one that never had a row."""
    row = db.execute(f"SELECT count, bytes FROM {totals} WHERE key = ?", (key,)).fetchone()
    return (row[0], row[1]) if row is not None else (0, 0)


def forget(db: sqlite3.Connection, totals: str, key: int) -> None:
    """Drop the (zero) totals of a key whose rows are all gone for good (a dropped table or index id)."""
    db.execute(f"DELETE FROM {totals} WHERE key = ?", (key,))
