"""What a test may count inside a store, whatever its kind (each probe reads the kind's own structures)."""

from __future__ import annotations

from globaltables.engine.storage.memory_store import MemoryStore

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
