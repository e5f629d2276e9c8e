"""Properties of the simulated network: latency floors, loss rates, partitions, FIFO lanes, duplication."""

from __future__ import annotations

import pytest

from globaltables.runtime.rng import Rng
from globaltables.runtime.transport import Envelope
from globaltables.sim.loop import Scheduler
from globaltables.sim.network import DISTRIBUTIONS, LinkSettings, SimNetwork


class Recorder:
    """Registers every region and remembers (arrival time, envelope) of each delivery."""

    def __init__(self, network: SimNetwork, regions=("a", "b", "c")) -> None:
        self.arrivals: list[tuple[int, Envelope]] = []
        for region in regions:
            network.register(region, self.receive)
        self.scheduler = network.scheduler

    def receive(self, envelope: Envelope) -> None:
        self.arrivals.append((self.scheduler.now_us, envelope))


def make(default: LinkSettings, seed: int = 1, journal: bool = True) -> tuple[Scheduler, SimNetwork, Recorder]:
    scheduler = Scheduler()
    network = SimNetwork(scheduler, Rng(seed).fork("network"), default, journal=journal)
    return scheduler, network, Recorder(network)


def send_at(scheduler: Scheduler, network: SimNetwork, when_us: int, envelope: Envelope) -> None:
    scheduler.call_at_us(when_us, network.send, envelope)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_latency_floor_is_respected_by_every_distribution(distribution):
    scheduler, network, recorder = make(LinkSettings(latency_ms=40, jitter_ms=15, distribution=distribution))
    sent_at = {}
    for i in range(2000):
        sent_at[i] = i * 100
        send_at(scheduler, network, i * 100, Envelope("a", "b", "m", i, lane=i % 4))
    scheduler.run_until_idle()
    delays = [now - sent_at[envelope.msg_id] for now, envelope in recorder.arrivals]
    assert len(delays) == 2000
    assert min(delays) >= 40_000
    if distribution == "constant":
        assert set(delays) == {40_000}
    else:
        # Jitter really is drawn (but the FIFO clamp may only add to it).
        assert len(set(delays)) > 100
        assert max(delays) > 40_000 + 1_000


def test_means_follow_the_distribution_scales_without_fifo():
    expected_mean_extra_ms = {"uniform": 5.0, "exponential": 10.0, "normal": 10.0 * (2 / 3.141592653589793) ** 0.5}
    for distribution, expected in expected_mean_extra_ms.items():
        scheduler, network, recorder = make(
            LinkSettings(latency_ms=20, jitter_ms=10, distribution=distribution, fifo=False)
        )
        for i in range(4000):
            send_at(scheduler, network, 0, Envelope("a", "b", "m", i))
        scheduler.run_until_idle()
        mean_extra_ms = sum(now - 20_000 for now, _ in recorder.arrivals) / len(recorder.arrivals) / 1000
        assert abs(mean_extra_ms - expected) < expected * 0.1, distribution


def test_loss_rate_stays_within_bounds_for_a_seeded_run():
    scheduler, network, recorder = make(LinkSettings(latency_ms=1, loss=0.2))
    n = 10_000
    for i in range(n):
        send_at(scheduler, network, i, Envelope("a", "b", "m", i))
    scheduler.run_until_idle()
    lost = network.dropped["loss"]
    # Binomial(10000, 0.2): sd = 40; 5 sd either side.
    assert 1800 < lost < 2200
    assert len(recorder.arrivals) == n - lost
    assert network.statistics()["delivered"] == n - lost


def test_partitions_are_receiver_grudges_that_drop_in_flight_messages_and_heal():
    scheduler, network, recorder = make(LinkSettings(latency_ms=10))
    network.send(Envelope("a", "b", "in-flight", 1))
    scheduler.run_until_us(5_000)
    network.partition("a", "b", one_way=True)  # b refuses a
    assert network.grudges() == {"b": ["a"]}
    network.send(Envelope("a", "b", "cut", 2))
    network.send(Envelope("b", "a", "other-way", 3))
    network.send(Envelope("a", "c", "elsewhere", 4))
    scheduler.run_until_idle()
    assert sorted(e.kind for _, e in recorder.arrivals) == ["elsewhere", "other-way"]
    assert network.dropped["partition"] == 2  # the in-flight one at arrival, the new one at send
    network.partition("a", "b")
    network.send(Envelope("b", "a", "both-ways-now", 5))
    scheduler.run_until_idle()
    assert len(recorder.arrivals) == 2 and network.grudges() == {"a": ["b"], "b": ["a"]}
    network.heal()
    assert network.grudges() == {}
    network.send(Envelope("a", "b", "healed", 6))
    network.send(Envelope("b", "a", "healed", 7))
    scheduler.run_until_idle()
    assert [e.msg_id for _, e in recorder.arrivals[-2:]] == [6, 7]


def test_fifo_lanes_never_reorder_under_heavy_jitter_while_lanes_are_independent():
    scheduler, network, recorder = make(LinkSettings(latency_ms=5, jitter_ms=200, distribution="pareto"))
    for i in range(5000):
        send_at(scheduler, network, i * 10, Envelope("a", "b", "m", i, lane=i % 8))
    scheduler.run_until_idle()
    by_lane: dict[int, list[int]] = {}
    for _, envelope in recorder.arrivals:
        by_lane.setdefault(envelope.lane, []).append(envelope.msg_id)
    for lane, ids in by_lane.items():
        assert ids == sorted(ids), lane
    overall = [envelope.msg_id for _, envelope in recorder.arrivals]
    assert overall != sorted(overall), "lanes are independent, so messages of different lanes interleave"


def test_without_fifo_jitter_reorders():
    scheduler, network, recorder = make(LinkSettings(latency_ms=5, jitter_ms=50, fifo=False))
    for i in range(500):
        send_at(scheduler, network, i * 10, Envelope("a", "b", "m", i))
    scheduler.run_until_idle()
    ids = [envelope.msg_id for _, envelope in recorder.arrivals]
    assert ids != sorted(ids)


def test_reorder_fault_lets_later_messages_of_a_lane_overtake():
    scheduler, network, recorder = make(LinkSettings(latency_ms=5, reorder=0.1, reorder_ms=100))
    for i in range(1000):
        send_at(scheduler, network, i * 1000, Envelope("a", "b", "m", i))
    scheduler.run_until_idle()
    ids = [envelope.msg_id for _, envelope in recorder.arrivals]
    assert sorted(ids) == list(range(1000))
    assert ids != sorted(ids)
    held_back = {e.msg_id for _, tag, e, _ in network.journal if tag == "send-reordered"}
    assert 50 < len(held_back) < 150
    # Apart from the held-back messages the lane stays in order.
    rest = [i for i in ids if i not in held_back]
    assert rest == sorted(rest)


def test_duplication_delivers_the_same_envelope_twice():
    scheduler, network, recorder = make(LinkSettings(latency_ms=5, jitter_ms=5, duplicate=0.3))
    for i in range(2000):
        send_at(scheduler, network, i * 100, Envelope("a", "b", "m", i))
    scheduler.run_until_idle()
    counts: dict[int, int] = {}
    for _, envelope in recorder.arrivals:
        counts[envelope.msg_id] = counts.get(envelope.msg_id, 0) + 1
    assert set(counts) == set(range(2000))
    assert set(counts.values()) == {1, 2}
    assert 500 < network.duplicated < 700
    assert sum(counts.values()) == 2000 + network.duplicated


def test_link_faults_heal_back_to_the_baseline_and_directions_are_separate():
    scheduler, network, recorder = make(LinkSettings(latency_ms=40))
    network.set_baseline("a", "c", LinkSettings(latency_ms=110), bidirectional=True)
    network.update_link("a", "b", latency_ms=200)
    assert network.link_settings("a", "b").latency_ms == 200
    assert network.link_settings("b", "a").latency_ms == 40
    network.update_link("a", "c", bidirectional=True, loss=1.0)
    assert network.link_settings("c", "a") == LinkSettings(latency_ms=110, loss=1.0)
    network.send(Envelope("a", "b", "slow", 1))
    network.send(Envelope("c", "a", "lost", 2))
    scheduler.run_until_idle()
    assert [(now, e.kind) for now, e in recorder.arrivals] == [(200_000, "slow")]
    network.heal()
    assert network.link_settings("a", "b").latency_ms == 40
    assert network.link_settings("c", "a") == LinkSettings(latency_ms=110)
    start = scheduler.now_us
    network.send(Envelope("c", "a", "back", 3))
    scheduler.run_until_idle()
    assert recorder.arrivals[-1][0] - start == 110_000


def test_messages_to_an_unregistered_region_are_dropped_as_down():
    scheduler, network, recorder = make(LinkSettings(latency_ms=1))
    network.unregister("b")
    network.send(Envelope("a", "b", "m", 1))
    scheduler.run_until_idle()
    assert recorder.arrivals == [] and network.dropped["down"] == 1


def test_invalid_link_settings_name_the_field():
    with pytest.raises(ValueError, match="loss"):
        LinkSettings(loss=1.5)
    with pytest.raises(ValueError, match="distribution"):
        LinkSettings(distribution="lognormal")
    with pytest.raises(ValueError, match="latency_ms"):
        LinkSettings(latency_ms=-1)


def test_a_bulk_of_messages_all_arrive_each_lane_in_order():
    # The bulk path of long runs (journal off); its speed is bench/sim_throughput.py's business, not a test's.
    scheduler, network, recorder = make(LinkSettings(latency_ms=40, jitter_ms=5), journal=False)
    n = 50_000
    for i in range(n):
        network.send(Envelope("a", "b", "m", i, lane=i & 3))
    scheduler.run_until_idle()
    ids = [envelope.msg_id for _, envelope in recorder.arrivals]
    assert sorted(ids) == list(range(n))  # nothing lost or duplicated
    for lane in range(4):  # lanes are FIFO under jitter
        on_lane = [envelope.msg_id for _, envelope in recorder.arrivals if envelope.lane == lane]
        assert on_lane == sorted(on_lane) and len(on_lane) == n // 4


def test_a_bandwidth_cap_makes_each_message_wait_for_the_ones_before_it():
    # 10 KB/s: a 1,000-byte message takes 100 ms to go through, and the cap is shared by the link's lanes.
    scheduler, network, recorder = make(LinkSettings(latency_ms=5))
    network.update_link("a", "b", bandwidth_kbps=10)
    for i in range(5):
        send_at(scheduler, network, 0, Envelope("a", "b", "m", i, body=b"x" * 1000, lane=i % 2))
    send_at(scheduler, network, 0, Envelope("b", "a", "m", 99, body=b"x" * 1000))  # the other direction: no cap
    scheduler.run_until_idle()
    arrivals = {envelope.msg_id: now for now, envelope in recorder.arrivals}
    assert [arrivals[i] for i in range(5)] == [100_000 * (i + 1) + 5_000 for i in range(5)]
    assert arrivals[99] == 5_000
    network.heal()  # back to no cap: the next message only pays its latency
    send_at(scheduler, network, 1_000_000, Envelope("a", "b", "m", 5, body=b"x" * 1000))
    scheduler.run_until_idle()
    assert recorder.arrivals[-1][0] == 1_005_000


def test_a_stall_holds_messages_and_lets_them_go_in_order_when_it_ends():
    scheduler, network, recorder = make(LinkSettings(latency_ms=10))
    network.update_link("a", "b", stalled=True)
    for i in range(4):
        send_at(scheduler, network, i * 1_000, Envelope("a", "b", "m", i, lane=0))
    scheduler.run_until_us(500_000)
    assert recorder.arrivals == [] and network.dropped["loss"] == 0
    network.heal()  # the stall ends at 0.5 s
    scheduler.run_until_idle()
    assert [(now, envelope.msg_id) for now, envelope in recorder.arrivals] == [(510_000, i) for i in range(4)]
    assert network.statistics()["delivered"] == 4


def test_bursty_loss_keeps_its_rate_and_loses_in_runs():
    # The region processes' model (runtime/link.py): 20% lost in the long run, in bursts of 5 on average.
    scheduler, network, recorder = make(LinkSettings(latency_ms=1))
    network.update_link("a", "b", loss=0.2, loss_burst=5)
    n = 20_000
    for i in range(n):
        send_at(scheduler, network, i, Envelope("a", "b", "m", i))
    scheduler.run_until_idle()
    arrived = {envelope.msg_id for _, envelope in recorder.arrivals}
    lost = [i for i in range(n) if i not in arrived]
    lost_set = set(lost)
    runs = sum(1 for i in lost if i - 1 not in lost_set)
    assert 0.17 < len(lost) / n < 0.23
    assert 4 < len(lost) / runs < 6  # independent losses at 20% would give runs of 1.25 on average
