"""Group commit: the writes a region receives in one turn of its event loop are made durable in one SQLite commit.

Why: on the durable store a commit is most of a small write's cost (the WAL commit's system calls and locks, paid
once per transaction). Under concurrent clients several writes arrive in the same loop turn, so committing them
together pays it once.

Theory of operation (the host side of the engine's group commit, engine/engine.py; docs/architecture.md)
1. Work is submitted here instead of being run at once: an HTTP request (http_front.py) or the replication inbox
   (replication_host.py). The first submission of a turn schedules one `_drain` for the loop's next turn, so
   everything that arrives meanwhile (the sockets the loop found readable together, and what arrived while the
   previous drain ran) is drained together.
2. `_drain` runs the queue synchronously, in arrival order. A grouped item (a PutItem, UpdateItem, DeleteItem,
   BatchWriteItem request; replicated applies) runs inside the open group; its answer is held. Any other item
   (a read, a table operation) first commits the open group and delivers its held answers, then runs outside any
   group and is answered at once. So each write is validated and applied in arrival order, seeing the writes
   before it; and since the drain is one synchronous call, nothing else (no request, no link, no timer) can run
   while a group is open: no reader ever sees a write before it is durable (decision 1 of docs/architecture.md
   "Group commit").
3. At the end of the queue the group commits; only then are its answers delivered (acknowledged), the replication
   listener told, and the replicated applies' acks sent. If the commit fails, the whole group is rolled back and
   exactly its items fail: each HTTP request is answered InternalServerError (nothing of it took effect, so a retry
   is safe), the replication acks are dropped (the senders retransmit).
4. A process killed with `kill -9` mid-drain has sent no answer of the open group: an acknowledged write is one
   whose group committed (synchronous=NORMAL in WAL mode, as for single commits: storage/sqlite_store.py rule 1).
5. Grouped work that is `whole` (the replication inbox) is all-or-nothing as one: it runs in a group of its own,
   opened without savepoints (the open group commits first; the work that follows starts another), so its writes
   skip the savepoint's page copies (storage/sqlite_store.py rule 5), and if any of them fails the group is rolled
   back and the work fails, nothing of it having taken effect.
6. Work of one `batch` (the HTTP requests of one phased DynamoDB operation, `PHASED_TARGETS`) that follows one
   another in the queue runs together, through `run_many`: a run of GetItems, Queries or PutItems is checked as a whole,
   then executed request by request in arrival order (engine/phased.py), each answered as it would have been alone.
   Why: a request's code runs once per request, each time with the processor's caches and branch history full of
   the rest of that request; a dozen of them phase by phase run each stretch a dozen times in a row. That is also
   why every request of those operations is queued here, even when nothing is waiting (http_front.py rule 5): the
   ones its loop turn receives together are drained together.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from ..engine import phased
from ..engine.commit import GroupCommitFailed

log = logging.getLogger("globaltables.region")

# The HTTP requests that join a group: the single-item and batch writes (X-Amz-Target values).
GROUPED_TARGETS = frozenset(
    f"DynamoDB_20120810.{operation}" for operation in ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem")
)
# The HTTP requests run in batches of their operation (rule 6): X-Amz-Target -> operation, for every operation the
# engine runs phase by phase.
PHASED_TARGETS = {f"DynamoDB_20120810.{operation}": operation for operation in phased.OPERATIONS}


class Work(Protocol):
    grouped: bool
    whole: bool  # its writes stand or fall together, in a group of their own (rule 5)
    batch: str | None  # work of one batch that follows one another runs together through `run_many` (rule 6)

    def run(self) -> Any:
        """Do the work (inside the open group when `grouped`); what `deliver` gets. Must not raise."""

    def run_many(self, works: list[Any]) -> list[Any]:
        """Do `works` (this one first, all of its batch and kind) as `run` does each, in order; what each `deliver`
        gets. Must not raise."""

    def deliver(self, result: Any) -> None:
        """Acknowledge: send the answer (after the group that holds the work committed)."""

    def fail(self) -> None:
        """The group that held the work failed to commit."""


class GroupCommit:
    """One region's committer (module docstring). `groups` and `largest_group` count committed groups of grouped
    work and the most items one held (shown in /metrics); `failed_groups` those whose commit failed."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self._queue: list[Work] = []
        self.groups = 0
        self.grouped_items = 0
        self.largest_group = 0
        self.failed_groups = 0

    @property
    def busy(self) -> bool:
        """Whether work is waiting: whatever comes now must queue behind it, to be answered in order."""
        return bool(self._queue)

    def submit(self, work: Work) -> None:
        self._queue.append(work)
        if len(self._queue) == 1:
            asyncio.get_running_loop().call_soon(self._drain)

    def _drain(self) -> None:
        engine = self.engine
        queue = self._queue
        held: list[tuple[Work, Any]] = []
        index = 0
        try:
            # Work submitted while draining (a delivered answer lets its connection serve the requests it buffered
            # behind it) is appended to this same queue and drained here too, until nothing is left.
            while index < len(queue):
                while index < len(queue):
                    work = queue[index]
                    start, index = index, index + 1
                    batch = work.batch
                    if batch is not None:  # the run of its batch that follows it (rule 6)
                        kind = type(work)
                        while index < len(queue) and queue[index].batch == batch and type(queue[index]) is kind:
                            index += 1
                    if work.grouped:
                        whole = work.whole
                        if whole and engine.grouping:
                            committed, held = held, []
                            self._commit(committed)
                        if not engine.grouping:
                            try:
                                engine.begin_group(savepoints=not whole)
                            except Exception:  # the store cannot open a transaction: this work fails, alone
                                log.exception("group commit could not begin")
                                index = start + 1  # the rest of its run is tried again
                                work.fail()
                                continue
                        if index - start == 1:
                            held.append((work, work.run()))
                        else:
                            works = queue[start:index]
                            held.extend(zip(works, work.run_many(works), strict=True))
                        if whole:
                            committed, held = held, []
                            self._commit(committed)
                    else:
                        if engine.grouping:
                            committed, held = held, []
                            self._commit(committed)
                        if index - start == 1:
                            work.deliver(work.run())
                        else:
                            works = queue[start:index]
                            for done, result in zip(works, work.run_many(works), strict=True):
                                done.deliver(result)
                if engine.grouping:
                    committed, held = held, []
                    self._commit(committed)
        finally:
            self._queue = []
            if engine.grouping:  # only after a bug in a work item: commit what ran, answer it
                self._commit(held)
            for work in queue[index:]:  # and answer what never ran, rather than leave its client waiting
                work.fail()

    def _commit(self, held: list[tuple[Work, Any]]) -> None:
        try:
            self.engine.commit_group()
        except GroupCommitFailed:
            self.failed_groups += 1
            log.exception("group commit of %d items failed; each is answered as failed", len(held))
            for work, _ in held:
                work.fail()
            return
        except Exception:  # committed, but an after-commit listener failed: the writes are durable, answer them
            log.exception("after-commit listener failed")
        self.groups += 1
        self.grouped_items += len(held)
        if len(held) > self.largest_group:
            self.largest_group = len(held)
        for work, result in held:
            work.deliver(result)

    def prometheus(self) -> str:
        return (
            "# HELP globaltables_group_commits_total Group commits of the durable store.\n"
            "# TYPE globaltables_group_commits_total counter\n"
            f"globaltables_group_commits_total {self.groups}\n"
            "# HELP globaltables_group_commit_items_total Writes (requests, replicated batches) in group commits.\n"
            "# TYPE globaltables_group_commit_items_total counter\n"
            f"globaltables_group_commit_items_total {self.grouped_items}\n"
            "# HELP globaltables_group_commit_largest Most writes one group commit held.\n"
            "# TYPE globaltables_group_commit_largest gauge\n"
            f"globaltables_group_commit_largest {self.largest_group}\n"
            "# HELP globaltables_group_commit_failures_total Group commits that failed (their writes failed).\n"
            "# TYPE globaltables_group_commit_failures_total counter\n"
            f"globaltables_group_commit_failures_total {self.failed_groups}\n"
        )
