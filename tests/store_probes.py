"""What a test may count inside a store, whatever its kind (each probe reads the kind's own structures), and the one
raw change tests make behind the engine's back (`drop_item_rows`)."""

from __future__ import annotations

from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.engine.storage.sorted_table import SortedTable


def index_entry_count(store) -> int:
    if isinstance(store, MemoryStore):
        return sum(len(entries) for entries in store.index_entries.values())
    return store.db.execute("SELECT COUNT(*) FROM index_items").fetchone()[0]


def index_id_count(store) -> int:
    if isinstance(store, MemoryStore):
        return len(store.index_ids)
    return store.db.execute("SELECT COUNT(*) FROM index_ids").fetchone()[0]


def change_log_count(store) -> int:
    if isinstance(store, MemoryStore):
        return sum(len(seqs) for seqs in store.log_seqs.values())
    return store.db.execute("SELECT COUNT(*) FROM change_log").fetchone()[0]


def token_count(store) -> int:
    if isinstance(store, MemoryStore):
        return len(store.tokens)
    return store.db.execute("SELECT COUNT(*) FROM transaction_tokens").fetchone()[0]


def items_and_index_entries(store) -> tuple[list, list]:
    """Every item row and index entry, in key order, as comparable tuples."""
    if isinstance(store, MemoryStore):
        items = [(tid, *key, *row) for tid, table in sorted(store.items.items()) for key, row in table.items()]
        entries = [(iid, *key, *row) for iid, table in sorted(store.index_entries.items()) for key, row in table.items()]
        return items, entries
    db = store.db
    return (
        db.execute("SELECT * FROM items ORDER BY 1, 2, 3, 4").fetchall(),
        db.execute("SELECT * FROM index_items ORDER BY 1, 2, 3, 4, 5, 6").fetchall(),
    )


def drop_item_rows(store) -> None:
    """Delete every item row of every table, leaving tombstones, hooks' state and side records alone: a region that
    lost items without knowing it (what only a sync repairs)."""
    if isinstance(store, MemoryStore):
        for tid in store.items:
            store.items[tid] = SortedTable()
            store.stats[tid] = (0, 0)
        return
    store.db.execute("DELETE FROM items")
    store.db.execute("UPDATE item_totals SET count = 0, bytes = 0")  # the store keeps its totals itself
