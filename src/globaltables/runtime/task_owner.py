"""Background tasks that live exactly as long as one block: the owner every long-running loop is started by.

    async with task_owner() as tasks:
        tasks.start(poll_forever(), name="poller")
        ...  # the block's own work
    # here every task started above has ended: cancelled when the block ended, and awaited

It is an `asyncio.TaskGroup` with two differences that a lifetime of background loops needs:
- leaving the block cancels the children (a TaskGroup would wait for loops that never end);
- an error of the block or of one child propagates as itself, not wrapped in an ExceptionGroup, so callers keep
  catching what they caught before (a port already taken is still an OSError). A child that fails cancels the
  block, as in any TaskGroup: a region whose poller crashed stops instead of serving without replication.

Finite fan-out (requests of one load phase, a race of two waits) uses a plain `asyncio.TaskGroup`.
tests/test_task_owners.py holds the package to this: every `create_task` is a TaskGroup's or this owner's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any


class TaskOwner:
    """The children of one block (see the module doc); made by `task_owner()`."""

    def __init__(self, group: asyncio.TaskGroup) -> None:
        self._group = group
        self._children: list[asyncio.Task] = []

    def start(self, coroutine: Coroutine[Any, Any, Any], *, name: str | None = None) -> asyncio.Task:
        """Run `coroutine` as a child of the block; it is cancelled when the block ends."""
        task = self._group.create_task(coroutine, name=name)
        self._children.append(task)
        task.add_done_callback(self._children.remove)
        return task

    def cancel(self) -> None:
        for task in list(self._children):
            task.cancel()


@contextlib.asynccontextmanager
async def task_owner() -> AsyncIterator[TaskOwner]:
    try:
        async with asyncio.TaskGroup() as group:
            owner = TaskOwner(group)
            try:
                yield owner
            finally:
                owner.cancel()  # the block is over: so is its background work (awaited by the group's exit)
    except BaseExceptionGroup as errors:
        if len(errors.exceptions) == 1:
            raise errors.exceptions[0] from None
        raise
