"""The precise timer under the replication links (region/precise_timer.py): a callback never runs before the instant
armed, runs once per arm, re-arming moves it and disarming cancels it, on timerfd and on the loop's fallback."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from globaltables.region import precise_timer
from globaltables.region.precise_timer import PreciseTimer


@pytest.fixture(params=["timerfd", "fallback"])
def mode(request, monkeypatch):
    if request.param == "timerfd" and precise_timer._TIMERFD is None:
        assert not sys.platform.startswith("linux"), "timerfd is missing on Linux"
        pytest.skip("no timerfd on this platform")
    if request.param == "fallback":
        monkeypatch.setattr(precise_timer, "_TIMERFD", None)
    return request.param


async def fired_within(times: list[float], count: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while len(times) < count:
        assert time.monotonic() < deadline, "the timer did not fire"
        await asyncio.sleep(0.001)


async def test_never_before_the_instant_and_once_per_arm(mode):
    times: list[float] = []
    timer = PreciseTimer(lambda: times.append(time.monotonic()))
    assert timer.precise == (mode == "timerfd")
    try:
        for delay in (0.002, 0.0105, 0.0003):
            when = time.monotonic() + delay
            timer.arm(when)
            await fired_within(times, len(times) + 1)
            assert times[-1] >= when
        await asyncio.sleep(0.02)
        assert len(times) == 3  # once per arm
    finally:
        timer.close()


async def test_re_arming_moves_it_and_disarming_cancels_it(mode):
    times: list[float] = []
    timer = PreciseTimer(lambda: times.append(time.monotonic()))
    try:
        timer.arm(time.monotonic() + 0.005)
        later = time.monotonic() + 0.03
        timer.arm(later)  # replaces the first instant
        await fired_within(times, 1)
        assert times == [times[0]] and times[0] >= later
        timer.arm(time.monotonic() + 0.005)
        timer.arm(None)
        await asyncio.sleep(0.03)
        assert len(times) == 1
        timer.arm(time.monotonic() - 1.0)  # a past instant: at the loop's next turn
        await fired_within(times, 2)
    finally:
        timer.close()
