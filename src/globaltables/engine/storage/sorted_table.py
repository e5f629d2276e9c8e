"""`SortedTable`: a dict whose keys can also be walked in order, with the ordering paid for when it is read.

A simulated region writes far more often than it range-reads (every replicated record is a write), so new keys wait
in a set and join the sorted key list in one sorted merge at the next range read, instead of one insertion each.
Point reads and writes are dict operations.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sortedcontainers import SortedList

_MISSING = object()


class SortedTable:
    __slots__ = ("_keys", "_pending", "rows")

    def __init__(self) -> None:
        self.rows: dict = {}
        self._keys = SortedList()
        self._pending: set = set()  # keys in `rows` not yet in `_keys`

    def get(self, key: Any, default: Any = None) -> Any:
        return self.rows.get(key, default)

    def __getitem__(self, key: Any) -> Any:
        return self.rows[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        if key not in self.rows:
            self._pending.add(key)
        self.rows[key] = value

    def put(self, key: Any, value: Any) -> Any:
        """Set `key` to `value` (never None); the value it replaces, or None (one lookup, not `get` then a set)."""
        rows = self.rows
        previous = rows.get(key)
        if previous is None:
            self._pending.add(key)
        rows[key] = value
        return previous

    def __delitem__(self, key: Any) -> None:
        self.pop(key)

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        value = self.rows.pop(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise KeyError(key)
            return default
        if key in self._pending:
            self._pending.discard(key)
        else:
            self._keys.remove(key)
        return value

    def __len__(self) -> int:
        return len(self.rows)

    def __contains__(self, key: Any) -> bool:
        return key in self.rows

    def values(self):
        return self.rows.values()

    def _sorted(self) -> SortedList:
        if self._pending:
            self._keys.update(self._pending)  # one sort-and-merge for every key added since the last range read
            self._pending.clear()
        return self._keys

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every (key, value) in key order."""
        rows = self.rows
        for key in self._sorted():
            yield key, rows[key]

    def irange(self, minimum: Any, maximum: Any, inclusive: tuple[bool, bool] = (True, True), reverse: bool = False):
        """Keys between the bounds, in order (reversed if asked); the table must not change while it is walked."""
        return self._sorted().irange(minimum, maximum, inclusive, reverse)

    def first(self, count: int) -> list:
        return list(self._sorted().islice(0, count))
