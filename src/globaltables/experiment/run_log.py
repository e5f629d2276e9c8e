"""A sweep run's log records, kept with its verdict instead of going to the terminal.

Why: a sweep's workers share the terminal with its live progress bar, and a record a simulated run logs (a warning
that a remote HLC stamp is ahead of the local clock, under a skew fault, say) would be printed by Python's
last-resort handler straight through the bar, once per worker and run. So while `captured()` is open, the records
of the `globaltables` loggers are not passed on to the root logger's handlers (or to the last-resort one): each
run collects those its own thread emits (a thread-pool executor runs several runs at once in one process), and its
verdict carries how many there were by level and the first few lines (sweep.json); a run kept on disk (a failing
seed replayed on the sweep's machine) writes them all to `run.log` beside its results.

Lines hold the level, the logger's name and the message, and no wall-clock time: a seed's records are the same in
every replay of it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

LOGGER = "globaltables"
FIRST_LINES = 5  # lines kept in a verdict; the count says how many there were in all
FORMAT = "%(levelname)s %(name)s: %(message)s"

_lock = threading.Lock()
_open = 0  # captures open in this process: the logger propagates again when the last one closes
_propagated = True


class RunLog(logging.Handler):
    """The records one thread emits while it is open, formatted."""

    def __init__(self, thread: int) -> None:
        super().__init__(logging.NOTSET)
        self.thread = thread
        self.lines: list[str] = []
        self.levels: Counter = Counter()
        self.setFormatter(logging.Formatter(FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread != self.thread:
            return
        self.levels[record.levelname] += 1
        self.lines.append(self.format(record))

    def summary(self) -> dict[str, Any]:
        """What a verdict keeps: {"records": n, "levels": {level: n}, "first": [line, ...]}."""
        return {"records": len(self.lines), "levels": dict(sorted(self.levels.items())),
                "first": self.lines[:FIRST_LINES]}  # fmt: skip


@contextlib.contextmanager
def captured() -> Iterator[RunLog]:
    """Collect this thread's `globaltables` log records, and keep every thread's from the terminal, until closed."""
    global _open, _propagated
    logger = logging.getLogger(LOGGER)
    handler = RunLog(threading.get_ident())
    with _lock:
        if _open == 0:
            _propagated = logger.propagate
            logger.propagate = False
        _open += 1
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        with _lock:
            logger.removeHandler(handler)
            _open -= 1
            if _open == 0:
                logger.propagate = _propagated


__all__ = ["RunLog", "captured"]
