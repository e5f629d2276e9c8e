"""The hybrid logical clock: the HLC rules, skew accounting, restart floors, wall mode and the stamp encoding.

LWW correctness rests on two properties checked here: every stamp a clock issues exceeds everything it issued or
received before (whatever its physical clock does), and the text encoding sorts exactly like the stamps and
versions, so storage and headers can compare encoded forms.
"""

from __future__ import annotations

import logging
import random

import pytest

from globaltables.replication.hlc import (
    HlcTimestamp,
    HybridLogicalClock,
    Version,
    decode_uint,
    encode_uint,
)
from globaltables.runtime.clock import ManualClock


class Physical:
    """A settable physical clock in milliseconds."""

    def __init__(self, ms: int = 1_700_000_000_000) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


# ------------------------------------------------------------------------------------------------- send rule


def test_local_stamps_follow_the_physical_clock_when_it_moves_forward():
    physical = Physical(1000)
    clock = HybridLogicalClock(physical, max_offset_ms=500)
    assert clock.now() == HlcTimestamp(1000, 0)
    assert clock.now() == HlcTimestamp(1000, 1)  # same millisecond: the counter orders them
    physical.ms = 1005
    assert clock.tick() == HlcTimestamp(1005, 0)


def test_stamps_stay_monotonic_when_the_physical_clock_goes_backwards():
    physical = Physical(10_000)
    clock = HybridLogicalClock(physical, max_offset_ms=500)
    first = clock.now()
    physical.ms = 9_000  # an NTP step backwards
    later = [clock.now() for _ in range(3)]
    assert later == [HlcTimestamp(10_000, 1), HlcTimestamp(10_000, 2), HlcTimestamp(10_000, 3)]
    assert first < later[0]
    physical.ms = 10_001
    assert clock.now() == HlcTimestamp(10_001, 0)


def test_random_physical_walks_never_produce_a_non_increasing_stamp():
    rng = random.Random(5)
    physical = Physical(50_000)
    clock = HybridLogicalClock(physical, max_offset_ms=100)
    previous = clock.now()
    for _ in range(5000):
        physical.ms += rng.randint(-30, 30)
        if rng.random() < 0.3:
            stamp = clock.update(HlcTimestamp(physical.ms + rng.randint(-200, 200), rng.randint(0, 5)))
        else:
            stamp = clock.now()
        assert stamp > previous
        previous = stamp


def test_an_injected_runtime_clock_is_read_in_milliseconds():
    manual = ManualClock(wall_time=1_700_000_000.25)
    clock = HybridLogicalClock(manual, max_offset_ms=500)
    assert clock.now() == HlcTimestamp(1_700_000_000_250, 0)
    manual.advance(0.5)
    assert clock.now() == HlcTimestamp(1_700_000_000_750, 0)


# ---------------------------------------------------------------------------------------------- receive rule


@pytest.mark.parametrize(
    ("state", "remote", "physical", "expected"),
    [
        # The physical clock is ahead of both: counter resets.
        (HlcTimestamp(100, 4), HlcTimestamp(90, 7), 200, HlcTimestamp(200, 0)),
        # The remote stamp is ahead of both: adopt it, one past its counter.
        (HlcTimestamp(100, 4), HlcTimestamp(150, 7), 120, HlcTimestamp(150, 8)),
        # The local state is ahead of both: one past our counter.
        (HlcTimestamp(100, 4), HlcTimestamp(90, 7), 95, HlcTimestamp(100, 5)),
        # Local and remote share the top physical part: one past the larger counter.
        (HlcTimestamp(100, 4), HlcTimestamp(100, 9), 50, HlcTimestamp(100, 10)),
        (HlcTimestamp(100, 9), HlcTimestamp(100, 4), 100, HlcTimestamp(100, 10)),
    ],
)
def test_receive_rule(state, remote, physical, expected):
    clock = HybridLogicalClock(Physical(physical), max_offset_ms=10_000)
    clock.observe_floor(state)
    received = clock.update(remote)
    assert received == expected
    assert received > remote and received > state
    assert clock.last == expected


def test_messages_between_clocks_preserve_causality_despite_skew():
    # B's physical clock is 5 s behind A's; a reply from B still stamps after A's message.
    time_a, time_b = Physical(1_000_000), Physical(995_000)
    a = HybridLogicalClock(time_a, max_offset_ms=10_000)
    b = HybridLogicalClock(time_b, max_offset_ms=10_000)
    sent = a.now()
    received = b.update(sent)
    reply = b.now()
    assert sent < received < reply
    assert a.update(reply) > reply


# --------------------------------------------------------------------------------------------- skew accounting


def test_a_stamp_too_far_ahead_is_counted_logged_and_still_absorbed(caplog):
    physical = Physical(1_000_000)
    seen = []
    clock = HybridLogicalClock(physical, max_offset_ms=500, on_skew=lambda *args: seen.append(args))
    with caplog.at_level(logging.WARNING, logger="globaltables.replication.hlc"):
        clock.update(HlcTimestamp(1_000_500, 0))  # exactly at the bound: fine
        assert clock.statistics().remote_ahead_count == 0
        far = HlcTimestamp(1_002_000, 3)
        stamp = clock.update(far)
    assert stamp == HlcTimestamp(1_002_000, 4)  # never rejected: the clock jumps ahead with it
    statistics = clock.statistics()
    assert statistics.remote_ahead_count == 1 and statistics.max_remote_ahead_ms == 2000
    assert seen == [(far, 1_000_000, 2000)]
    assert "2000 ms ahead" in caplog.text and far.encode() in caplog.text


def test_skew_logging_is_rate_limited_but_every_stamp_is_counted(caplog):
    physical = Physical(0)
    clock = HybridLogicalClock(physical, max_offset_ms=10)
    with caplog.at_level(logging.WARNING, logger="globaltables.replication.hlc"):
        for index in range(100):
            clock.update(HlcTimestamp(1_000 + index, 0))
    assert clock.statistics().remote_ahead_count == 100
    assert len(caplog.records) == 7  # 1, 2, 4, ..., 64


def test_remote_stamps_behind_are_not_counted():
    clock = HybridLogicalClock(Physical(1_000_000), max_offset_ms=500)
    clock.update(HlcTimestamp(1, 0))
    assert clock.statistics().remote_ahead_count == 0


# ----------------------------------------------------------------------------------------------- restart floor


def test_after_a_restart_the_clock_starts_above_the_largest_logged_stamp():
    # Before the crash the clock ran ahead (it absorbed a fast peer); the restarted process's physical clock is
    # behind the log, yet its first stamp must exceed everything it logged.
    logged = [HlcTimestamp(2_000_000, 3), HlcTimestamp(2_000_000, 7), HlcTimestamp(1_999_000, 9)]
    restarted = HybridLogicalClock(Physical(1_000_000), max_offset_ms=500)
    for stamp in logged:
        restarted.observe_floor(stamp)
    assert restarted.now() == HlcTimestamp(2_000_000, 8)
    assert restarted.statistics().remote_ahead_count == 0  # a floor is not a receive


def test_next_stamp_above_beats_the_replaced_version():
    clock = HybridLogicalClock(Physical(1_000), max_offset_ms=500)
    assert clock.next_stamp_above(None) == HlcTimestamp(1_000, 0)
    replaced = Version(HlcTimestamp(9_000, 2), "eu-west-1")  # never received through update()
    stamp = clock.next_stamp_above(replaced)
    assert stamp > replaced.stamp and stamp == HlcTimestamp(9_000, 3)
    assert clock.next_stamp_above(HlcTimestamp(5, 0)) == HlcTimestamp(9_000, 4)  # already past: just advance


# --------------------------------------------------------------------------------------------------- wall mode


def test_wall_mode_follows_the_skewed_physical_clock_and_has_no_receive_rule():
    physical = Physical(1_000)
    clock = HybridLogicalClock(physical, max_offset_ms=500, mode="wall")
    assert clock.now() == HlcTimestamp(1_000, 0)
    assert clock.now() == HlcTimestamp(1_000, 1)  # tie counter within one millisecond
    assert clock.update(HlcTimestamp(50_000, 0)) == HlcTimestamp(1_000, 2)  # the remote stamp is not absorbed
    assert clock.statistics().remote_ahead_count == 1  # but counted
    physical.ms = 900  # the clock steps back: so do the stamps
    assert clock.now() == HlcTimestamp(900, 0)


def test_wall_mode_lets_a_write_lose_to_the_version_it_replaces():
    clock = HybridLogicalClock(Physical(1_000), max_offset_ms=500, mode="wall")
    replaced = Version(HlcTimestamp(5_000, 0), "us-east-1")
    stamp = clock.next_stamp_above(replaced)
    assert stamp == HlcTimestamp(1_000, 0)
    assert Version(stamp, "us-west-2") < replaced


def test_unknown_mode_and_negative_offset_are_refused():
    with pytest.raises(ValueError, match="hlc, wall"):
        HybridLogicalClock(Physical(), 500, mode="lamport")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        HybridLogicalClock(Physical(), -1)


# ---------------------------------------------------------------------------------------------------- ordering


def test_versions_order_by_stamp_then_region():
    early, late = HlcTimestamp(100, 5), HlcTimestamp(101, 0)
    assert Version(early, "us-west-2") < Version(late, "af-south-1")
    assert Version(late, "eu-west-1") < Version(late, "us-east-1")  # same stamp: greater region name wins
    assert max(Version(late, "us-east-1"), Version(late, "eu-west-1")).region == "us-east-1"


# ---------------------------------------------------------------------------------------------------- encoding


def test_encoding_examples_are_readable():
    assert HlcTimestamp(1_700_000_000_000, 0).encode() == "M1700000000000.A0"
    assert Version(HlcTimestamp(1_700_000_000_000, 12), "us-east-1").encode() == "M1700000000000.B12/us-east-1"
    assert HlcTimestamp(5, 0).to_bytes() == b"A5.A0"


def test_integer_encoding_round_trips_and_preserves_order_including_huge_integers():
    rng = random.Random(20260)
    numbers = [0, 1, 9, 10, 99, 100, 10**25, 10**26 - 1, 10**26, 10**51, 10**52 - 1, 10**52, 10**60, 10**200]
    numbers += [rng.randrange(10 ** rng.randint(1, 120)) for _ in range(2000)]
    for number in numbers:
        encoded = encode_uint(number)
        assert decode_uint(encoded) == (number, len(encoded))
    ordered = sorted(set(numbers))
    assert sorted(encode_uint(number) for number in ordered) == [encode_uint(number) for number in ordered]


def random_stamp(rng: random.Random) -> HlcTimestamp:
    # Mostly realistic stamps, bunched so that ties in the physical part are common, plus some extremes.
    physical = rng.choice(
        [0, 1, rng.randrange(10**14), 1_700_000_000_000 + rng.randrange(20), 10 ** rng.randint(20, 70)]
    )
    return HlcTimestamp(physical, rng.choice([0, 1, 9, 10, rng.randrange(10**6), 10 ** rng.randint(25, 60)]))


def test_encoded_stamps_and_versions_sort_like_the_values():
    rng = random.Random(7)
    regions = ["us-east-1", "us-east-10", "us-east-2", "eu-west-1", "ap-southeast-1", "a", "us"]
    stamps = [random_stamp(rng) for _ in range(3000)]
    versions = [Version(stamp, rng.choice(regions)) for stamp in stamps]
    for values in (stamps, versions):
        by_value = sorted(values)
        by_text = sorted(values, key=lambda value: value.encode())
        by_bytes = sorted(values, key=lambda value: value.to_bytes())
        assert by_text == by_value and by_bytes == by_value
        for value in values[:500]:
            assert type(value).parse(value.encode()) == value
            assert type(value).parse(value.to_bytes()) == value


@pytest.mark.parametrize(
    "text",
    ["", "A5", "A5.", "A5.A", "B05.A0", "A5.A0x", "A5,A0", "~A5" + "1" * 5 + ".A0", "Z" + "1" * 3 + ".A0", "A-.A0",
     # shapes the one-match common form must not take: a length letter that promises another digit count, a digit
     # that is not ASCII, a leading zero, a second length letter in place of a digit
     "B5.A0", "A5.B0", "A5.A00", "C12.A0", "A\u0665.A0", "A5.A\u0660", "B01.A0", "A5.AA0"],
)  # fmt: skip
def test_malformed_stamps_are_refused(text):
    with pytest.raises(ValueError, match="invalid HLC timestamp"):
        HlcTimestamp.parse(text)


@pytest.mark.parametrize("text", ["A5.A0", "A5.A0/", "A5.A0/us/east", "A5.A0us-east-1"])
def test_malformed_versions_are_refused(text):
    with pytest.raises(ValueError, match="invalid version"):
        Version.parse(text)


def test_a_clocks_encoding_of_its_stamps_is_the_stamps_own_whatever_other_clocks_encode():
    # Each clock keeps the text of its last physical part (HybridLogicalClock.encode): two regions stamping in turn,
    # in different milliseconds, must each get exactly HlcTimestamp.encode's text, never the other's cached part.
    rng = random.Random(3)
    millis = {"a": 1_700_000_000_000, "b": 1_600_000_000_000}
    clocks = {name: HybridLogicalClock(lambda name=name: millis[name], 500) for name in millis}
    for _ in range(2000):
        name = rng.choice("ab")
        if rng.random() < 0.3:
            millis[name] += rng.choice((1, 1, 7, 1000))
        stamp = clocks[name].now()
        assert clocks[name].encode(stamp) == stamp.encode()
        assert HlcTimestamp.parse(clocks[name].encode(stamp)) == stamp
    other = HlcTimestamp(millis["a"] + 5, 2)  # not this clock's own stamp: still encoded correctly
    assert clocks["b"].encode(other) == other.encode()
