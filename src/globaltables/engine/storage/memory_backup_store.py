"""On-demand backups of a `MemoryStore` (the contract of storage/backup_store.py): per ARN its creation time, its
record and its items as orjson bytes, so nothing a caller does to what it read can change a backup."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import orjson

from .memory_store import MemoryStore, kept


class MemoryBackupStore:
    def __init__(self, store: MemoryStore) -> None:
        self.state = store

    def add(self, arn: str, created: float, record: dict, items: Iterable[dict]) -> None:
        if arn in self.state.backups:
            raise KeyError(f"backup {arn} already stored")  # the SQLite store's primary key refuses it
        blobs = [kept(orjson.dumps(item)) for item in items]  # all serialised first: nothing half-stored on error
        self.state.backups[arn] = (created, orjson.dumps(record), blobs)

    def get(self, arn: str) -> dict | None:
        entry = self.state.backups.get(arn)
        return orjson.loads(entry[1]) if entry else None

    def records(self) -> list[dict]:
        ordered = sorted(self.state.backups.items(), key=lambda pair: (pair[1][0], pair[0]))
        return [orjson.loads(record) for _arn, (_created, record, _items) in ordered]

    def items(self, arn: str) -> Iterator[dict]:
        entry = self.state.backups.get(arn)
        for blob in entry[2] if entry else ():
            yield orjson.loads(blob)

    def delete(self, arn: str) -> None:
        self.state.backups.pop(arn, None)
