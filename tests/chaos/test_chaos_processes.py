"""Chaos against real region processes started by `globaltables up` (module-scoped), checked from the history.

Each test writes unique keys on several regions while faults are in force (through the `globaltables chaos` CLI or
the controller on a RegionControlTarget), heals, waits for `globaltables check`, and runs the checkers on the
recorded history plus the replicas' final states.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from botocore.exceptions import BotoCoreError, ClientError

from globaltables.chaos.checkers.causal import check_causal
from globaltables.chaos.checkers.convergence import check_convergence
from globaltables.chaos.checkers.lww import check_lww
from globaltables.chaos.controller import Controller
from globaltables.chaos.history import History, key_id
from globaltables.chaos.schedule import parse_schedule
from globaltables.chaos.target import RegionControlTarget
from globaltables.experiment.chaos_commands import replica_states, wait_quiescent
from globaltables.runtime.clock import SystemClock
from globaltables.runtime.transport import VERSION_HEADER
from mrec_cluster import SRC, TOPOLOGY, Cluster, start_up, stop_up

pytestmark = pytest.mark.timeout(180)
TABLE = "Items"
A, B, C = "us-east-1", "eu-west-1", "ap-southeast-1"
_unique = itertools.count()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    running = start_up(TOPOLOGY, tmp_path_factory.mktemp("chaos"))
    running.topology = TOPOLOGY
    try:
        yield running
    finally:
        assert stop_up(running.process) == 0


def cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "globaltables.cli.main", args[0], str(cluster.topology), *args[1:],
               "--data-dir", str(cluster.data_dir)]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


def target_of(cluster: Cluster) -> RegionControlTarget:
    return RegionControlTarget.from_state(cluster.state(), cluster.secret)


def put(cluster: Cluster, history: History, process: int, region: str, name: str, value: str) -> None:
    """One recorded PutItem: ok with the version header, or fail / info by the error's type."""
    key = {"id": {"S": name}}
    op = history.invoke(process, region, "put", TABLE, key, value)
    try:
        answer = cluster.clients[region].put_item(TableName=TABLE, Item={**key, "value": {"S": value}})
    except ClientError as error:
        history.error(op, error.response["Error"]["Code"])
        return
    except BotoCoreError as error:  # connection refused / reset, timeout: possibly applied
        history.info(op, type(error).__name__)
        return
    history.ok(op, version=answer["ResponseMetadata"]["HTTPHeaders"].get(VERSION_HEADER))


def get(cluster: Cluster, history: History, process: int, region: str, name: str) -> None:
    key = {"id": {"S": name}}
    op = history.invoke(process, region, "get", TABLE, key)
    answer = cluster.clients[region].get_item(TableName=TABLE, Key=key)
    item = answer.get("Item")
    history.ok(op, value=None if item is None else item["value"]["S"],
               version=answer["ResponseMetadata"]["HTTPHeaders"].get(VERSION_HEADER))  # fmt: skip


def settle_and_check(cluster: Cluster, history: History, prefix: str, regions=(A, B, C)):
    target = target_of(cluster)
    wait_quiescent(target, list(cluster.regions), 60)
    states = replica_states(target, list(regions), [TABLE])
    mine = {
        region: {TABLE: {k: v for k, v in tables[TABLE].items() if prefix in k}} for region, tables in states.items()
    }
    convergence = check_convergence(mine, history=history)
    lww = check_lww(history, mine)
    assert convergence.passed, str(convergence)
    assert lww.passed, str(lww)
    return mine


def expected_winners(history: History) -> dict[str, str]:
    best: dict[str, tuple] = {}
    for invocation, completion in history.pairs():
        if completion is not None and completion.type == "ok" and invocation.is_write:
            candidate = (completion.version.rpartition("/")[0], completion.region, invocation.value)
            name = key_id(invocation.key)
            best[name] = max(best.get(name, candidate), candidate)
    return {name: entry[2] for name, entry in best.items()}


def test_partition_write_both_sides_heal_converges_on_the_lww_winners(cluster: Cluster):
    prefix = f"part{next(_unique)}-"
    history = History(SystemClock())
    result = cli(cluster, "chaos", "partition", A, B)
    assert result.returncode == 0, result.stderr
    assert B in cluster.status(A)["transport"]["grudges"] and A in cluster.status(B)["transport"]["grudges"]
    for n in range(6):
        put(cluster, history, 1, A, f"{prefix}{n % 3}", f"{prefix}a{n}")
        put(cluster, history, 2, B, f"{prefix}{n % 3}", f"{prefix}b{n}")
    assert cluster.clients[B].get_item(TableName=TABLE, Key={"id": {"S": f"{prefix}0"}})["Item"]["value"]["S"] \
        .startswith(f"{prefix}b")  # eu-west-1 has not heard us-east-1's writes  # fmt: skip
    assert cli(cluster, "chaos", "heal", "all").returncode == 0
    checked = cli(cluster, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    final = settle_and_check(cluster, history, prefix)
    for name, value in expected_winners(history).items():
        assert all(final[region][TABLE][name]["value"]["S"] == value for region in (A, B, C))


def test_loss_duplication_and_reordering_then_heal_converges(cluster: Cluster):
    prefix = f"lossy{next(_unique)}-"
    history = History(SystemClock())
    controller = Controller(target_of(cluster), history)
    schedule = parse_schedule({"steps": [
        {"at": 0, "do": "loss", "between": [A, B], "rate": 0.3, "burst": 2},
        {"at": 0, "do": "reorder", "between": [A, B], "rate": 0.3, "delay": "40ms"},
        {"at": 0, "do": "duplicate", "between": [A, C], "rate": 0.3},
        {"at": 0, "do": "latency", "between": [B, C], "latency": "30ms", "jitter": "30ms", "distribution": "pareto"},
    ]}, cluster.regions)  # fmt: skip
    for fault in schedule.faults:
        controller.start(fault)
    status = cluster.status(A)["transport"]["peers"][B]
    assert status["fault"]["loss"] == 0.3 and status["fault"]["reorder"] == 0.3
    def lost_between_a_and_b() -> int:
        return cluster.status(A)["transport"]["peers"][B]["lost_by_fault"] + \
            cluster.status(B)["transport"]["peers"][A]["lost_by_fault"]  # fmt: skip

    for n in range(30):
        put(cluster, history, 1 + n % 3, (A, B, C)[n % 3], f"{prefix}{n % 5}", f"{prefix}{n}")
    # Replication ships asynchronously, so the loss shows once enough messages crossed the lossy link: keep writing
    # (bounded) until it does. At a 30% loss rate, 200 more messages without one loss would be a broken fault.
    n = 30
    deadline = time.monotonic() + 20.0
    while lost_between_a_and_b() == 0 and n < 230 and time.monotonic() < deadline:
        put(cluster, history, 1 + n % 2, (A, B)[n % 2], f"{prefix}{n % 5}", f"{prefix}{n}")
        n += 1
    lost = lost_between_a_and_b()
    controller.final_heal()
    assert cluster.status(A)["transport"]["peers"][B]["fault"] is None
    settle_and_check(cluster, history, prefix)
    assert lost > 0, "a 30% loss lost nothing"


def test_crash_restart_mid_load_converges(cluster: Cluster):
    prefix = f"crash{next(_unique)}-"
    history = History(SystemClock())
    target = target_of(cluster)
    controller = Controller(target, history)
    crash = parse_schedule({"steps": [{"at": 0, "do": "crash", "region": B, "for": "1s"}]}, cluster.regions)
    for n in range(8):
        put(cluster, history, 1, A, f"{prefix}{n % 4}", f"{prefix}a{n}")
    controller.start(crash.faults[0])
    for n in range(8, 16):
        put(cluster, history, 1, A, f"{prefix}{n % 4}", f"{prefix}a{n}")
        put(cluster, history, 2, B, f"{prefix}{n % 4}", f"{prefix}b{n}")  # refused: B is down
    assert any(op.type in ("info", "fail") and op.region == B for op in history)
    controller.end(crash.faults[0])  # restart on the same data dir and port
    for n in range(16, 20):
        put(cluster, history, 2, B, f"{prefix}{n % 4}", f"{prefix}b{n}")
    controller.final_heal()
    settle_and_check(cluster, history, prefix)


def test_cli_refuses_unknown_region_or_verb_and_changes_nothing(cluster: Cluster):
    before = cluster.status(A)["transport"]["grudges"]
    assert cli(cluster, "chaos", "partition", A, "eu-west-9").returncode == 2
    assert cli(cluster, "chaos", "explode", A).returncode == 2
    assert cluster.status(A)["transport"]["grudges"] == before


def test_cli_link_faults_add_up_on_a_link_and_heal_clears_them(cluster: Cluster):
    # One-shot verbs for every link fault; each adds to what the link already has (loss, then duplication, then a
    # reordering with its delay, a bandwidth cap and a stall), one direction only with --one-way.
    for args in (("loss", A, B, "0.1"), ("duplicate", A, B, "0.05"), ("reorder", A, B, "0.2", "40ms"),
                 ("bandwidth", A, B, "500"), ("stall", A, B)):  # fmt: skip
        result = cli(cluster, "chaos", "--one-way", *args)
        assert result.returncode == 0, result.stderr
    fault = cluster.status(A)["transport"]["peers"][B]["fault"]
    assert fault["loss"] == 0.1 and fault["duplicate"] == 0.05 and fault["reorder"] == 0.2
    assert fault["reorder_ms"] == 40 and fault["bandwidth_kbps"] == 500 and fault["stalled"] is True
    assert cluster.status(B)["transport"]["peers"][A]["fault"] is None  # --one-way: A -> B only
    assert cli(cluster, "chaos", "reorder", A, B, "not-a-rate").returncode == 2
    assert cli(cluster, "chaos", "heal").returncode == 0
    assert cluster.status(A)["transport"]["peers"][B]["fault"] is None


WALL_TOPOLOGY = """
name: chaos-{clock}
mode: mrec
conflict_clock: {clock}
regions:
  - name: us-east-1
  - name: eu-west-1
links:
  default: {{latency_ms: 5, jitter_ms: 0}}
tables:
  - TableName: Items
    AttributeDefinitions: [{{AttributeName: id, AttributeType: S}}]
    KeySchema: [{{AttributeName: id, KeyType: HASH}}]
"""


@pytest.mark.parametrize("clock", ["hlc", "wall"])
def test_skew_of_two_seconds_loses_the_causally_later_write_only_under_wall(tmp_path, clock):
    topology = tmp_path / f"chaos-{clock}.yaml"
    topology.write_text(WALL_TOPOLOGY.format(clock=clock))
    running = start_up(topology, tmp_path)
    running.topology = topology
    try:
        history = History(SystemClock())
        assert cli(running, "chaos", "skew", A, "+2s").returncode == 0
        put(running, history, 1, A, "c", "first")  # stamped 2 s in the future
        wait_quiescent(target_of(running), [A, B], 30)
        get(running, history, 2, B, "c")  # eu-west-1 has seen it...
        put(running, history, 2, B, "c", "second")  # ...so this write causally follows it
        assert cli(running, "chaos", "heal").returncode == 0
        target = target_of(running)
        wait_quiescent(target, [A, B], 30)
        final = replica_states(target, [A, B], [TABLE])
        causal = check_causal(history, final)
        assert check_convergence(final).passed
        if clock == "hlc":
            assert causal.passed, str(causal)
            assert final[A][TABLE][key_id({"id": {"S": "c"}})]["value"]["S"] == "second"
        else:
            assert not causal.passed
            assert causal.offending_keys() == [(TABLE, key_id({"id": {"S": "c"}}))]
            assert final[A][TABLE][key_id({"id": {"S": "c"}})]["value"]["S"] == "first"
    finally:
        assert stop_up(running.process) == 0


def test_stall_builds_a_backlog_that_drains_and_heal_restores_links_and_clocks_exactly(cluster: Cluster):
    prefix = f"stall{next(_unique)}-"
    history = History(SystemClock())
    target = target_of(cluster)
    before = {region: cluster.status(region) for region in cluster.regions}
    controller = Controller(target, history)
    faults = parse_schedule({"steps": [
        {"at": 0, "do": "stall", "between": [A, B], "one_way": True},
        {"at": 0, "do": "latency", "between": [A, C], "latency": "80ms"},
        {"at": 0, "do": "drift", "region": C, "ppm": 100000},
        {"at": 0, "do": "strobe", "region": B, "delta": "300ms", "period": "50ms"},
        {"at": 0, "do": "skew", "region": A, "offset": "-1s"},
    ]}, cluster.regions).faults  # fmt: skip
    for fault in faults:
        controller.start(fault)
    for n in range(5):
        put(cluster, history, 1, A, f"{prefix}{n}", f"{prefix}{n}")
    link = cluster.status(A)["transport"]["peers"][B]
    assert link["fault"]["stalled"] and link["queued"] > 0  # the backlog builds
    assert cluster.status(A)["clock_offset_ms"] == -1000
    controller.final_heal()  # the backlog drains
    settle_and_check(cluster, history, prefix)
    for region in cluster.regions:
        after = cluster.status(region)
        assert after["clock"] == {**before[region]["clock"], "offset_ms": after["clock"]["offset_ms"]}
        assert after["clock_offset_ms"] == before[region]["clock_offset_ms"]
        assert after["transport"]["grudges"] == []
        for peer, link in after["transport"]["peers"].items():
            was = before[region]["transport"]["peers"][peer]
            assert (link["latency_ms"], link["jitter_ms"], link["fault"]) == (was["latency_ms"], was["jitter_ms"], None)
