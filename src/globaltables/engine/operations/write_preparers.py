"""The single-item write operations and their `prepare` functions: the one table every path that validates a write
before running it looks up (engine/phased.py's batches of one operation, TransactWriteItems' Put/Update/Delete
actions, strong mode's write path, the MRSC simulator).

`prepare(engine, request) -> WriteRequest` validates everything it can before any data is read
(read_modify_write.py, rule 1); `read_modify_write.execute` or a replication protocol runs the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import delete_item, put_item, update_item
from .read_modify_write import WriteRequest

Prepare = Callable[[Any, dict], WriteRequest]

PREPARE: dict[str, Prepare] = {
    "PutItem": put_item.prepare,
    "UpdateItem": update_item.prepare,
    "DeleteItem": delete_item.prepare,
}
