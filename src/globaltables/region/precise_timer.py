"""A wake-up at an absolute `time.monotonic()` instant, to the tens of microseconds, for asyncio on Linux.

Why: asyncio's timers wake up to a millisecond late. The event loop sleeps in epoll_wait, whose timeout is whole
milliseconds, and CPython rounds the time left up, so a `loop.call_at(t)` runs between t and t + 1 ms: half a
millisecond late on average. A replication link holds every envelope until its latency has passed
(http_transport.py), so it would add that to every hop: a millisecond to every MRSC round trip, a third of the
overhead a strong write may have beyond the round trip (docs/mrsc.md, "Latency"). A Linux timerfd armed at an
absolute CLOCK_MONOTONIC time (the clock `time.monotonic()` reads) becomes readable at that time and wakes epoll
through the loop's reader, with the kernel's high-resolution timers.

Rules
1. The callback never runs before the instant armed (a timerfd does not fire early; the loop's fallback neither).
2. `arm(when)` replaces the previous instant; `arm(None)` disarms; a past instant runs the callback at the loop's
   next iteration. A callback runs at most once per `arm`.
3. Where timerfd is missing (not Linux, or the monotonic clock is not CLOCK_MONOTONIC), the timer is
   `loop.call_at`, as precise as asyncio is.
4. `close()` releases the descriptor; the owner calls it when it stops (http_transport.py, a link's writer).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import time
from collections.abc import Callable

_TFD_TIMER_ABSTIME = 1
_TFD_NONBLOCK = os.O_NONBLOCK
_TFD_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc_timerfd() -> tuple[Callable[[], int], Callable[[int, float], None]] | None:
    """(create, set_absolute) over libc's timerfd calls, or None where there are none."""
    if not hasattr(time, "CLOCK_MONOTONIC") or time.get_clock_info("monotonic").implementation != (
        "clock_gettime(CLOCK_MONOTONIC)"
    ):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        create_fd, settime = libc.timerfd_create, libc.timerfd_settime
    except (OSError, AttributeError):
        return None
    create_fd.argtypes = [ctypes.c_int, ctypes.c_int]
    settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p]

    def create() -> int:
        fd = create_fd(time.CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "timerfd_create failed")
        return fd

    def set_absolute(fd: int, when: float) -> None:
        """Arm at `when` (monotonic seconds); 0 disarms. A time of 0 ns would disarm, so it is never asked."""
        seconds = int(when)
        nanoseconds = max(1, int((when - seconds) * 1e9)) if when else 0
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(seconds, nanoseconds))
        if settime(fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")

    try:  # one round trip through the kernel, so a failure shows here and not on a link
        set_absolute(probe := create(), 0)
        os.close(probe)
    except OSError:
        return None
    return create, set_absolute


_TIMERFD = _libc_timerfd()


class PreciseTimer:
    """Calls `callback()` at the instant last `arm`ed (see the module doc)."""

    def __init__(self, callback: Callable[[], None], loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._callback = callback
        self._loop = loop or asyncio.get_running_loop()
        self._fd: int | None = None
        self._handle: asyncio.TimerHandle | None = None  # the fallback's, or a past instant's
        self._armed = False
        if _TIMERFD is not None:
            self._fd = _TIMERFD[0]()
            self._loop.add_reader(self._fd, self._fired)

    @property
    def precise(self) -> bool:
        return self._fd is not None

    def arm(self, when: float | None) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed = when is not None
        if self._fd is None:
            if when is not None:
                self._handle = self._loop.call_at(when, self._run)
            return
        if when is not None and when <= time.monotonic():
            _TIMERFD[1](self._fd, 0)  # type: ignore[index]
            self._handle = self._loop.call_soon(self._run)
            return
        _TIMERFD[1](self._fd, when or 0)  # type: ignore[index]

    def close(self) -> None:
        self.arm(None)
        if self._fd is not None:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = None

    def _fired(self) -> None:
        try:
            os.read(self._fd, 8)  # type: ignore[arg-type]
        except (BlockingIOError, InterruptedError):  # re-armed or disarmed since it became readable
            return
        self._run()

    def _run(self) -> None:
        self._handle = None
        if self._armed:
            self._armed = False
            self._callback()
