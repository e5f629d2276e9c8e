"""Every shipped chaos schedule runs on every shipped topology (on the simulator, with a light workload), except that
a table pause (pause-replication, MREC only) and a capacity change (update-table, MREC only) are refused on an MRSC
topology with the reason.

Schedules name regions by role and position (`replica[0]`, `region[2]`, chaos/region_refs.py), so each one loads
against each topology's regions; then it runs on the simulated cluster of that topology (MREC: `SimCluster`, MRSC:
`MrscCluster`) through the chaos controller, and the mode's checkers must say valid: MREC replicas converge, MRSC
strong reads and writes are linearizable per key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from globaltables.chaos.checkers import linearizable
from globaltables.chaos.checkers.convergence import check_convergence
from globaltables.chaos.controller import Controller
from globaltables.chaos.faults import CAPACITY_VERBS, TABLE_VERBS
from globaltables.chaos.schedule import ScheduleError, fit_tables, load_schedule, parse_schedule
from globaltables.chaos.target import SimTarget
from globaltables.experiment.topology import load_topology
from globaltables.runtime.rng import Rng
from globaltables.sim.cluster import SimCluster
from globaltables.sim.mrsc_cluster import MrscCluster

ROOT = Path(__file__).resolve().parents[2]
SCHEDULES = sorted(path.stem for path in (ROOT / "chaos").glob("*.yaml"))
TOPOLOGIES = sorted(path.stem for path in (ROOT / "topologies").glob("*.yaml"))


def key_of(topology, n: int, *, indexed: bool = False) -> dict:
    """The first table's key attributes for item n (`indexed`: every defined attribute, so index keys too)."""
    spec = topology.tables[0].request()
    types = {a["AttributeName"]: a["AttributeType"] for a in spec["AttributeDefinitions"]}
    names = list(types) if indexed else [k["AttributeName"] for k in spec["KeySchema"]]
    return {name: {types[name]: f"k{n}" if types[name] == "S" else str(n)} for name in names}


def run_mrec(topology, schedule) -> None:
    cluster = SimCluster(topology, 1, journal=False)
    table = cluster.table_names[0]
    names = cluster.region_names
    span = max(schedule.end_s, 1.0)
    for n in range(90):
        item = {**key_of(topology, n % 5, indexed=True), "value": {"S": f"w{n}"}}
        cluster.at(span * n / 90, cluster.put, names[n % len(names)], table, item)
    Controller(SimTarget(cluster), cluster.history).run(schedule)
    cluster.run_until_quiescent()
    result = check_convergence(cluster.final_states(), history=cluster.history)
    assert result.verdict == "valid", result


def run_mrsc(topology, schedule) -> None:
    cluster = MrscCluster.from_topology(topology, 1, journal=False)
    rng = Rng(7).fork("workload")
    keys = [key_of(topology, n) for n in range(4)]
    stop = max(schedule.end_s, 1.0)
    written = iter(range(1, 1_000_000))

    def issue(process: str, region: str) -> None:
        if cluster.now() >= stop:
            return
        key, roll = rng.choice(keys), rng.random()
        if roll < 0.4:
            cluster.read(region, key, process=process)
        else:
            extra = {"ConditionExpression": "attribute_not_exists(#v)", "ExpressionAttributeNames": {"#v": "value"}}
            cluster.write(region, "put", key, {"S": f"w{next(written)}"}, process=process,
                          **(extra if roll > 0.85 else {}))  # fmt: skip

    cluster.on_complete = lambda process, region: cluster.scheduler.call_later(
        rng.uniform(0.0, 0.1), issue, process, region
    )
    for region in cluster.replicas():
        for i in range(2):
            cluster.on_complete(f"{region}/{i}", region)
    Controller(SimTarget(cluster), cluster.history).run(schedule)
    cluster.run_until_quiescent()
    cluster.on_complete = None
    for n, key in enumerate(keys):
        for region in cluster.replicas():
            cluster.read(region, key, process=f"final/{region}/{n}")
    cluster.run_until_quiescent()
    result = linearizable.check(cluster.history)
    assert result.verdict == "valid", result
    assert result.stats["keys"] == len(keys)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("topology_name", TOPOLOGIES)
@pytest.mark.parametrize("schedule_name", SCHEDULES)
def test_every_shipped_schedule_runs_on_every_shipped_topology(schedule_name, topology_name):
    topology = load_topology(ROOT / "topologies" / f"{topology_name}.yaml")
    witnesses = [region.name for region in topology.regions if region.role == "witness"]
    path = ROOT / "chaos" / f"{schedule_name}.yaml"
    schedule = load_schedule(path, list(topology.region_names), witnesses)
    assert schedule.faults
    tables = [spec.name for spec in topology.tables]
    schedule, problems = fit_tables(schedule, tables, topology.mode)
    if topology.mode == "mrsc" and any(fault.verb in TABLE_VERBS for fault in schedule.faults):
        # A table pause holds asynchronous replication, which a strong table has not: `run` and `validate` refuse
        # the pair before anything starts, saying what to use instead (chaos/schedule.py fit_tables).
        assert problems and all("no asynchronous replication to pause" in line for line in problems), problems
        return
    if topology.mode == "mrsc" and any(fault.verb in CAPACITY_VERBS for fault in schedule.faults):
        # A capacity change on a strong table is not scheduled (docs/capacity.md, decision 21): `run` and
        # `validate` refuse the pair, saying so.
        assert problems and all("does not change a strong table's capacity" in line for line in problems), problems
        return
    assert problems == []
    (run_mrsc if topology.mode == "mrsc" else run_mrec)(topology, schedule)


def test_role_references_expand_and_name_what_the_topology_lacks():
    regions, witness = ["a", "b", "w"], ["w"]
    schedule = parse_schedule(
        {"steps": [
            {"at": 0, "do": "loss", "between": ["replica[0]", "others"], "rate": 0.1, "for": "1s"},
            {"at": 2, "do": "skew", "region": "all", "offset": "1s", "for": "1s"},
            {"at": 4, "do": "split", "sides": [["witness"], "others"], "for": "1s"},
            {"at": 6, "do": "crash", "region": "replica[-1]", "for": "1s"},
        ]},
        regions, witness,
    )  # fmt: skip
    described = [(f.verb, f.regions, f.sides) for f in schedule.faults]
    assert described == [
        ("loss", ("a", "b"), ()), ("loss", ("a", "w"), ()),
        ("skew", ("a",), ()), ("skew", ("b",), ()), ("skew", ("w",), ()),
        ("split", (), (("w",), ("a", "b"))),
        ("crash", ("b",), ()),
    ]  # fmt: skip
    with pytest.raises(ScheduleError) as refused:
        parse_schedule({"steps": [{"at": 0, "do": "crash", "region": "replica[2]", "for": "1s"}]}, regions, witness,
                       source="chaos/x.yaml")  # fmt: skip
    assert "chaos/x.yaml: steps[0] (at 0, do: crash): region: replica[2]: the topology has 2 replicas (a, b)" in str(
        refused.value
    )
    with pytest.raises(ScheduleError, match="the topology has no witness"):
        parse_schedule({"steps": [{"at": 0, "do": "isolate", "region": "witness", "for": "1s"}]}, ["a", "b", "c"])


def test_the_chaos_command_takes_a_region_by_role_or_position_too():
    from globaltables.chaos.faults import FaultError
    from globaltables.experiment.chaos_commands import cli_fault

    topology = load_topology(ROOT / "topologies" / "mrsc-witness.yaml")
    fault = cli_fault(topology, "partition", ["replica[0]", "witness"], False)
    assert fault.regions == ("us-east-1", "us-west-2")
    assert cli_fault(topology, "crash", ["replica[-1]"], False).regions == ("us-east-2",)
    with pytest.raises(FaultError, match="names 2 faults"):
        cli_fault(topology, "crash", ["replicas"], False)
