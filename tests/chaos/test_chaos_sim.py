"""Chaos schedules on the simulator (SimTarget): fast and deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest

from globaltables.chaos.checkers.causal import check_causal
from globaltables.chaos.checkers.convergence import check_convergence
from globaltables.chaos.checkers.lww import check_lww
from globaltables.chaos.checkers.staleness import check_staleness
from globaltables.chaos.controller import Controller
from globaltables.chaos.schedule import ScheduleError, load_schedule, parse_schedule
from globaltables.chaos.target import SimTarget
from globaltables.engine.mutation import Mutation
from globaltables.sim.cluster import SimCluster

ROOT = Path(__file__).resolve().parents[2]
REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-1")
TABLE = "Items"


def item(key: str, value: str) -> dict:
    return {"pk": {"S": key}, "value": {"S": value}}


def workload(cluster: SimCluster, writes: int, span_s: float) -> None:
    for n in range(writes):
        region = REGIONS[n % 3]
        key = f"k{n % 7}"
        cluster.at(span_s * n / writes, cluster.put, region, TABLE, item(key, f"w{n}"))


def run_schedule(document: dict, seed: int = 1, port_wrapper=None) -> SimCluster:
    cluster = SimCluster(REGIONS, seed, journal=False, port_wrapper=port_wrapper)
    schedule = parse_schedule(document, REGIONS)
    workload(cluster, 120, max(schedule.end_s, 1.0))
    Controller(SimTarget(cluster), cluster.history).run(schedule)
    cluster.run_until_quiescent()
    return cluster


@pytest.mark.parametrize("name", ["partition-and-heal", "isolate-one-region", "flaky-links", "clock-skew"])
def test_shipped_schedules_converge_with_lww_winners_on_the_simulator(name):
    schedule_doc = __import__("yaml").safe_load((ROOT / "chaos" / f"{name}.yaml").read_text())
    cluster = run_schedule(schedule_doc)
    final = cluster.final_states()
    assert check_convergence(final, history=cluster.history).passed
    assert check_lww(cluster.history, final).passed
    assert check_causal(cluster.history, final).passed
    starts = [op for op in cluster.history.faults() if isinstance(op.value, dict) and op.value.get("phase") == "start"]
    assert starts, "faults are recorded in the history"


def test_partition_really_cuts_and_heal_restores_the_links():
    cluster = SimCluster(REGIONS, 3, journal=False)
    target = SimTarget(cluster)
    schedule = parse_schedule({"steps": [{"at": 0, "do": "partition", "between": list(REGIONS[:2]), "for": "2s"}]},
                              REGIONS)  # fmt: skip
    controller = Controller(target, cluster.history)
    cluster.at(0.5, cluster.put, "us-east-1", TABLE, item("p", "during"))
    cluster.run_until(0.01)
    controller.start(schedule.faults[0])
    cluster.run_until(1.5)
    assert cluster.items("eu-west-1", TABLE) == {}
    assert cluster.items("ap-southeast-1", TABLE)
    controller.final_heal()
    cluster.run_until_quiescent()
    assert cluster.network.grudges() == {}
    assert cluster.items("eu-west-1", TABLE) == cluster.items("us-east-1", TABLE)


def test_nemesis_is_reproducible_from_its_seed_and_a_different_seed_differs():
    document = ROOT / "chaos" / "random-mix.yaml"
    first = load_schedule(document, REGIONS)
    again = load_schedule(document, REGIONS)
    other = load_schedule(document, REGIONS, seed=99)
    assert first.faults == again.faults and first.seed == 8
    assert other.faults != first.faults


def test_a_replica_dropping_one_replicated_write_fails_convergence_naming_the_key():
    class DroppingPort:  # test-only: eu-west-1 turns the first replicated record of k3 into a losing delete
        dropped: list = []  # noqa: RUF012

        def __init__(self, port):
            self._port = port

        def __getattr__(self, name):
            return getattr(self._port, name)

        def apply_replicated(self, origin, table, lane, records):
            changed = []
            for r in records:
                if not DroppingPort.dropped:  # the only replicated write in this run: k3's
                    DroppingPort.dropped.append(r)
                    r = Mutation(r.pos, r.key or {"pk": r.image["pk"]}, f"A0.A0/{origin}", None, r.commit_ms)
                changed.append(r)
            return self._port.apply_replicated(origin, table, lane, changed)

    cluster = SimCluster(
        REGIONS,
        5,
        journal=False,
        port_wrapper=lambda region, port: DroppingPort(port) if region == "eu-west-1" else port,
    )
    cluster.put("us-east-1", TABLE, item("k3", "only"))
    cluster.run_until_quiescent()
    result = check_convergence(cluster.final_states(), history=cluster.history)
    assert DroppingPort.dropped
    assert not result.passed
    assert result.offending_keys() == [(TABLE, '{"pk":{"S":"k3"}}')]


@pytest.mark.parametrize("clock,passes", [("hlc", True), ("wall", False)])
def test_causally_later_write_loses_only_under_wall_clock(clock, passes):
    cluster = SimCluster(REGIONS, 2, journal=False, conflict_clock=clock)
    target = SimTarget(cluster)
    target.set_clock("eu-west-1", -2000.0, 0.0, 0.0, None)  # eu-west-1's clock 2 s behind
    cluster.put("us-east-1", TABLE, item("c", "first"))
    cluster.run_for(1.0)
    assert cluster.get("eu-west-1", TABLE, {"pk": {"S": "c"}})[0] == "ok"  # eu-west-1 has seen "first"
    cluster.put("eu-west-1", TABLE, item("c", "second"))
    target.heal_all()
    cluster.run_until_quiescent()
    final = cluster.final_states()
    result = check_causal(cluster.history, final)
    assert result.passed is passes, str(result)
    if not passes:
        assert result.offending_keys() == [(TABLE, '{"pk":{"S":"c"}}')]
    _, stats = check_staleness(cluster.history)
    assert stats["eu-west-1"]["reads"] == 1


@pytest.mark.parametrize(
    "step,message",
    [
        ({"at": "1s", "do": "partition", "between": ["us-east-1", "eu-west-9"]}, "steps[0] (at 1s, do: partition): between[1]: unknown region 'eu-west-9'"),
        ({"at": "1s", "do": "crash", "region": "us-east-1", "for": "-2s"}, "steps[0] (at 1s, do: crash): for: must not be negative"),
        ({"at": "1s", "do": "explode", "region": "us-east-1"}, "do: unknown fault 'explode'"),
    ],
)  # fmt: skip
def test_bad_schedules_are_refused_with_file_and_step(tmp_path, step, message):
    path = tmp_path / "bad.yaml"
    path.write_text(__import__("yaml").safe_dump({"steps": [step]}))
    with pytest.raises(ScheduleError) as caught:
        load_schedule(path, REGIONS)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_overlapping_contradictory_faults_are_refused():
    with pytest.raises(ScheduleError, match=r"steps\[1\] .*contradicts steps\[0\]"):
        parse_schedule({"steps": [
            {"at": "0s", "do": "skew", "region": "us-east-1", "offset": "+1s", "for": "5s"},
            {"at": "2s", "do": "skew", "region": "us-east-1", "offset": "-1s", "for": "5s"},
        ]}, REGIONS, source="chaos/x.yaml")  # fmt: skip


def test_bandwidth_caps_and_stalls_act_on_the_simulated_links_as_on_real_ones():
    # A stall holds us-east-1 -> eu-west-1 for 2 s (nothing lost: it all arrives when the stall ends), then a cap of
    # 1 KB/s makes the link's messages queue behind each other; every write still converges with LWW winners.
    document = {
        "steps": [
            {"at": "0s", "do": "stall", "between": ["us-east-1", "eu-west-1"], "for": "2s"},
            {"at": "2s", "do": "bandwidth", "between": ["us-east-1", "eu-west-1"], "kbps": 1, "for": "3s"},
        ]
    }
    cluster = run_schedule(document, seed=4)
    final = cluster.final_states()
    assert check_convergence(final, history=cluster.history).passed
    assert check_lww(cluster.history, final).passed
    stats = cluster.network.statistics()
    assert stats["dropped"]["loss"] == 0  # a stall is not loss
    assert stats["delivered"] > 0
