"""Garbage-collector thresholds held by count: `hold(thresholds)` and `release()`.

Why: the thresholds are one setting of the whole process, while simulations that want other ones may overlap:
harnesses closed out of order, runs on threads of one process (a sweep's thread executor, an in-process Dask worker).
So the first holder saves what was there and the last to leave puts it back, whatever the order in between. The lock
is here, in runtime, because the simulator itself runs on one thread and imports no threading (tests/sim).
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_holders = 0
_outside: tuple[int, int, int] | None = None


def hold(thresholds: tuple[int, int, int]) -> None:
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
