"""The pieces of the fault vocabulary in isolation: grudge builders, link fault draws, the skewed clock, CLI parsing."""

from __future__ import annotations

import random

import pytest

from globaltables.chaos import grudges as G
from globaltables.chaos.faults import FaultError, build, parse_duration
from globaltables.region.link_faults import LinkFaultState
from globaltables.region.skewed_clock import SkewedClock
from globaltables.runtime.link import LinkSettings

REGIONS = ("a-x-1", "b-x-1", "c-x-1", "d-x-1", "e-x-1")


def test_grudge_builders():
    assert G.two_way("a", "b") == {"a": {"b"}, "b": {"a"}}
    assert G.one_way("a", "b") == {"b": {"a"}}
    assert G.isolate("a", ["a", "b", "c"]) == {"a": {"b", "c"}, "b": {"a"}, "c": {"a"}}
    assert G.split([["a", "b"], ["c"]]) == {"a": {"c"}, "b": {"c"}, "c": {"a", "b"}}
    assert G.bridge("m", ["a"], ["b"]) == {"a": {"b"}, "b": {"a"}}  # m hears and is heard by both
    ring = G.majorities_ring(REGIONS)
    for region in REGIONS:  # everyone still sees a majority (itself included), and no two see the same one
        assert len(REGIONS) - len(ring.get(region, ())) > len(REGIONS) / 2
    assert len({frozenset(REGIONS) - ring[r] for r in REGIONS}) == len(REGIONS)
    assert G.majorities_ring(REGIONS[:3]) == {}


def test_durations_and_fault_fields():
    assert parse_duration("200ms", "x") == pytest.approx(0.2)
    assert parse_duration("+2s", "x", signed=True) == 2.0
    assert parse_duration("-500ms", "x", signed=True) == -0.5
    with pytest.raises(FaultError, match="must not be negative"):
        parse_duration("-1s", "for")
    with pytest.raises(FaultError, match="unknown field"):
        build("partition", {"between": ["a-x-1", "b-x-1"], "rate": 1}, REGIONS)
    with pytest.raises(FaultError, match="rate"):
        build("loss", {"between": ["a-x-1", "b-x-1"], "rate": 1.5}, REGIONS)


def test_bursty_loss_keeps_its_long_run_rate_and_comes_in_bursts():
    state = LinkFaultState(random.Random(4))
    state.set(LinkSettings(loss=0.2, loss_burst=5))
    draws = [state.lose() for _ in range(50_000)]
    assert sum(draws) / len(draws) == pytest.approx(0.2, abs=0.02)
    runs = sum(1 for i in range(1, len(draws)) if draws[i] and not draws[i - 1])
    assert sum(draws) / runs == pytest.approx(5, rel=0.15)  # mean burst length


def test_bandwidth_cap_builds_a_backlog():
    state = LinkFaultState(random.Random(1))
    state.set(LinkSettings(bandwidth_kbps=100))  # 100 KB/s: a 10 KB message takes 0.1 s
    assert state.transmission_s(0.0, 10_000) == pytest.approx(0.1)
    assert state.transmission_s(0.0, 10_000) == pytest.approx(0.2)  # queued behind the first


def test_skewed_clock_models_and_exact_heal():
    clock = SkewedClock(offset_s=0.25)
    clock.set_offset(2.0)
    clock.set_drift(1e6)  # 100% fast: obvious in a few ms
    clock.strobe(5.0, 0.001)
    clock.bump(-1.0)
    assert clock.offset_s == pytest.approx(1.0, abs=0.01)
    clock.heal()
    assert (clock.offset_s, clock.drift_ppm, clock.strobe_delta_s) == (0.25, 0.0, 0.0)
    assert clock.offset_at(clock.monotonic()) == 0.25
