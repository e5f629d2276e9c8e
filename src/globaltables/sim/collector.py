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

from collections.abc import Iterator
from contextlib import contextmanager

from ..runtime.collector_hold import hold, release

SIMULATION_THRESHOLDS = (100_000, 50, 100)


@contextmanager
def simulation_collector(thresholds: tuple[int, int, int] = SIMULATION_THRESHOLDS) -> Iterator[None]:
    """Hold `thresholds` for the block; overlapping holders give back the settings from before the first of them
    (runtime/collector_hold.py)."""
    hold(thresholds)
    try:
        yield
    finally:
        release()
