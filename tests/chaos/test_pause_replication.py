"""`pause-replication` (after AWS FIS's aws:dynamodb:global-table-pause-replication): a table's replication is held
for the fault's duration — writes stay in their region, other tables keep replicating — and the run converges once
it ends. On the simulator, on real region processes through the controller and the CLI, and in `globaltables run`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from globaltables.chaos.checkers.convergence import check_convergence
from globaltables.chaos.controller import Controller
from globaltables.chaos.faults import FaultError, build
from globaltables.chaos.schedule import ScheduleError, parse_schedule
from globaltables.chaos.target import RegionControlTarget, SimTarget
from globaltables.experiment.chaos_commands import replica_states, wait_quiescent
from globaltables.experiment.runner import run_experiment
from globaltables.sim.cluster import SimCluster
from mrec_cluster import SRC, TOPOLOGY, start_up, stop_up

ROOT = Path(__file__).resolve().parents[2]
REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-1")
A, B, C = REGIONS
pytestmark = pytest.mark.timeout(180)


def test_the_fault_holds_every_link_of_the_table_or_one_replicas_both_ways():
    everywhere = build("pause-replication", {"table": "Items"}, REGIONS)
    assert everywhere.held_replication(REGIONS) == {
        A: {"Items": {B, C}}, B: {"Items": {A, C}}, C: {"Items": {A, B}},
    }  # fmt: skip
    one = build("pause-replication", {"table": "Items", "region": B}, REGIONS)
    assert one.held_replication(REGIONS) == {A: {"Items": {B}}, B: {"Items": {A, C}}, C: {"Items": {B}}}
    assert one.describe() == {"regions": [B], "table": "Items"}
    with pytest.raises(FaultError, match="table: required"):
        build("pause-replication", {}, REGIONS)
    with pytest.raises(FaultError, match="unknown region 'eu-west-9'"):
        build("pause-replication", {"table": "Items", "region": "eu-west-9"}, REGIONS)
    with pytest.raises(ScheduleError, match="overlap|contradict"):
        parse_schedule({"steps": [
            {"at": 0, "do": "pause-replication", "table": "Items", "for": "2s"},
            {"at": 1, "do": "pause-replication", "table": "Items", "for": "2s"},
        ]}, REGIONS)  # fmt: skip


def _item(key: str, value: str) -> dict:
    return {"pk": {"S": key}, "value": {"S": value}}


def test_on_the_simulator_the_table_is_held_for_the_duration_then_converges():
    cluster = SimCluster(REGIONS, 4, journal=False)
    cluster.create_global_table({"TableName": "Other", "AttributeDefinitions": [{"AttributeName": "pk",
                                 "AttributeType": "S"}], "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                                 "BillingMode": "PAY_PER_REQUEST"})  # fmt: skip
    schedule = parse_schedule({"quiet": "0.1s", "steps": [
        {"at": "0.1s", "do": "pause-replication", "table": "Items", "for": "3s"}]}, REGIONS)  # fmt: skip
    cluster.at(0.5, cluster.put, A, "Items", _item("held", "a1"))
    cluster.at(0.5, cluster.put, A, "Other", _item("free", "a1"))
    cluster.at(2.5, lambda: seen.update(
        items=cluster.items(B, "Items"), other=cluster.items(B, "Other")))  # fmt: skip
    seen: dict = {}
    Controller(SimTarget(cluster), cluster.history).run(schedule)
    assert seen["items"] == {} and len(seen["other"]) == 1  # 2 s after the write: held, while Other replicated
    cluster.run_until_quiescent()
    assert check_convergence(cluster.final_states()).passed
    assert len(cluster.items(B, "Items")) == 1 and len(cluster.items(C, "Items")) == 1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = start_up(TOPOLOGY, tmp_path_factory.mktemp("pause"))
    try:
        yield running
    finally:
        assert stop_up(running.process) == 0


def _cli(cluster, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "globaltables.cli.main", "chaos", str(TOPOLOGY), *args,
               "--data-dir", str(cluster.data_dir)]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


def _target(cluster) -> RegionControlTarget:
    return RegionControlTarget.from_state(cluster.state(), cluster.secret)


def _has(cluster, region: str, table: str, key: dict) -> bool:
    return "Item" in cluster.clients[region].get_item(TableName=table, Key=key, ConsistentRead=True)


def test_the_cli_verb_holds_one_table_for_its_duration_and_replication_resumes(cluster):
    key = {"id": {"S": f"paused-{time.monotonic_ns()}"}}
    done = _cli(cluster, "pause-replication", "Nope")
    assert done.returncode == 2 and "no table 'Nope'" in done.stderr
    command = [sys.executable, "-m", "globaltables.cli.main", "chaos", str(TOPOLOGY), "pause-replication", "Items",
               "--for", "3s", "--data-dir", str(cluster.data_dir)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    pausing = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = pausing.stdout.readline()  # printed once the holds are in place
        assert '"paused_replication"' in line, pausing.stderr.read()
        held = cluster.status(A)["held"]
        assert held == {"Items": sorted([B, C])}
        cluster.clients[A].put_item(TableName="Items", Item={**key, "value": {"S": "v"}})
        time.sleep(1.0)  # a floor: well past the links' latency, the write is still only in A
        assert _has(cluster, A, "Items", key) and not _has(cluster, B, "Items", key)
        assert not _has(cluster, C, "Items", key)
        assert pausing.wait(timeout=60) == 0
    finally:
        if pausing.poll() is None:
            pausing.kill()
    assert all(not cluster.status(region)["held"] for region in REGIONS)
    wait_quiescent(_target(cluster), list(REGIONS), 60)
    assert _has(cluster, B, "Items", key) and _has(cluster, C, "Items", key)


def test_heal_ends_a_pause_without_a_duration(cluster):
    assert _cli(cluster, "pause-replication", "Items", B).returncode == 0
    assert cluster.status(A)["held"] == {"Items": [B]} and cluster.status(B)["held"] == {"Items": sorted([A, C])}
    assert cluster.status(C)["held"] == {"Items": [B]}
    assert _cli(cluster, "heal").returncode == 0
    assert all(not cluster.status(region)["held"] for region in REGIONS)
    wait_quiescent(_target(cluster), list(REGIONS), 60)
    states = replica_states(_target(cluster), list(REGIONS), ["Items"])
    assert check_convergence(states).passed


async def test_a_run_with_a_pause_replication_step_holds_the_table_and_converges(tmp_path):
    schedule = tmp_path / "pause.yaml"
    schedule.write_text("quiet: 0.3s\nsteps:\n  - {at: 0.3s, do: pause-replication, table: Orders, for: 1.5s}\n")
    outcome = await run_experiment(ROOT / "topologies" / "quickstart.yaml", chaos_path=schedule, out_dir=tmp_path / "o",
                                   duration_s=1.0, make_plots=False)  # fmt: skip
    assert outcome.exit_code == 0, outcome.reason or outcome.results["checks"]
    results = outcome.results
    phases = [(f["f"], (f["value"] or {}).get("phase")) for f in results["faults"]]
    assert ("pause-replication", "start") in phases and ("pause-replication", "end") in phases
    start = next(f["mono"] for f in results["faults"] if f["f"] == "pause-replication")
    end = next(f["mono"] for f in results["faults"] if f["f"] == "pause-replication" and f["value"]["phase"] == "end")
    # The lag probe's writes acknowledged while the table was held waited for the hold to end.
    origin = results["measure_from_mono"]
    held = [row for row in results["lag_timeline"] if start + 0.1 < origin + row["t_s"] < end - 0.5]
    assert held and all(origin + row["t_s"] + row["lag_ms"] / 1000.0 >= end - 0.05 for row in held)
    assert results["quiesced"] and [c["after"] for c in results["convergence_ms"]] == ["end of load", "final heal"]


def test_the_control_api_refuses_bad_holds_and_guards_the_apply_decisions(cluster):
    url = f"{cluster.endpoints[A]}/control/faults"
    code, answer = cluster.control(url, {"held_replication": {"Nope": [B]}})
    assert code == 400 and "'Nope' is not a global table here" in answer["error"]
    code, answer = cluster.control(url, {"held_replication": {"Items": ["eu-west-9"]}})
    assert code == 400 and "eu-west-9" in answer["error"]
    code, _ = cluster.control(url, {"held_replication": {"Items": [B]}}, secret=None)
    assert code == 401 and cluster.status(A)["held"] == {}  # refused as a whole: nothing held
    decisions = f"{cluster.endpoints[B]}/control/apply-decisions"
    assert cluster.control(decisions, secret=None)[0] == 401
    key = {"id": {"S": f"decided-{time.monotonic_ns()}"}}
    cluster.clients[A].put_item(TableName="Items", Item={**key, "value": {"S": "v"}})
    wait_quiescent(_target(cluster), list(REGIONS), 60)
    code, answer = cluster.control(decisions)
    assert code == 200 and answer["region"] == B and answer["dropped"] == 0
    mine = [d for d in answer["decisions"] if d["key"] == key]
    assert len(mine) == 1 and mine[0]["origin"] == A and mine[0]["lost_to"] is None and mine[0]["table"] == "Items"


async def test_a_schedule_pausing_an_undeclared_table_is_refused_before_anything_starts(tmp_path):
    schedule = tmp_path / "bad-pause.yaml"
    schedule.write_text("steps:\n  - {at: 1s, do: pause-replication, table: Invoices, for: 2s}\n")
    outcome = await run_experiment(ROOT / "topologies" / "quickstart.yaml", chaos_path=schedule, out_dir=tmp_path / "o")
    assert outcome.exit_code == 2 and outcome.results is None and not (tmp_path / "o").exists()
    assert f"{schedule}: pause-replication at 1s: table: no table 'Invoices' in the topology" in outcome.reason
    done = subprocess.run(
        [sys.executable, "-m", "globaltables.cli.main", "validate", str(schedule), "--topology",
         str(ROOT / "topologies" / "quickstart.yaml")],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))},
    )  # fmt: skip
    assert done.returncode != 0 and "no table 'Invoices'" in done.stdout + done.stderr
