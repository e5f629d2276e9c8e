"""Garbage-collector settings for a simulation: `simulation_collector()`.

Why: a simulation allocates a stream of short-lived containers (requests, decoded messages, write batches) while its
regions' stores grow large long-lived ones. Under CPython's default thresholds (700, 10, 10) a young collection runs
every few hundred allocations, and each full collection walks every stored row again; on bench/sim_throughput.py
that is a tenth to a sixth of the wall time. Inside `simulation_collector()` collections run less often (cyclic
garbage is still collected); the previous thresholds come back on exit. Determinism is unaffected: nothing in the
simulator depends on when the collector runs.

The pytest kit's simulated harnesses hold these settings for the life of a test; a long simulation driven by hand
(a benchmark, a chaos run on `SimCluster`) can wrap itself in the context manager.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SIMULATION_THRESHOLDS = (100_000, 50, 100)

# The thresholds are one setting of the whole process, while simulations may overlap: harnesses closed out of order,
# runs on threads of one process (a sweep's thread executor, an in-process Dask worker). So the settings are held by
# count: the first holder saves what was there, the last to leave puts it back, whatever the order in between.
_lock = threading.Lock()
_holders = 0
_outside: tuple[int, int, int] | None = None


def hold(thresholds: tuple[int, int, int] = SIMULATION_THRESHOLDS) -> None:
    global _holders, _outside
    with _lock:
        if _holders == 0:
            _outside = gc.get_threshold()
        _holders += 1
        gc.set_threshold(*thresholds)


def release() -> None:
    global _holders, _outside
    with _lock:
        _holders -= 1
        if _holders == 0 and _outside is not None:
            gc.set_threshold(*_outside)
            _outside = None


@contextmanager
def simulation_collector(thresholds: tuple[int, int, int] = SIMULATION_THRESHOLDS) -> Iterator[None]:
    hold(thresholds)
    try:
        yield
    finally:
        release()
