"""The capacity experiments in virtual time (`globaltables run --simulated`, experiment/simulated_run.py): each region
models capacity as the topology says, on the simulator's clock, so a hot partition throttles, an under-provisioned
global table defers its replicated writes until an update-table step raises its capacity, the SDK retry modes
retry in virtual time, and all of it replays byte for byte from the seed."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from globaltables.experiment.results import SCHEMA
from globaltables.experiment.runner import load_experiment
from globaltables.experiment.simulated_run import SimulatedRun, run_simulated
from globaltables.topology.load import load_topology

ROOT = Path(__file__).resolve().parents[2]
HOT = ROOT / "topologies" / "hot-partition.yaml"
UNDERPROVISIONED = ROOT / "topologies" / "underprovisioned-global-table.yaml"
# One partition serves 1,000 WCU a second; the hot partition's puts are 8 KB items, 8 WCU each.
PARTITION_PUTS_PER_S = 1000 / 8


def run(topology: Path, chaos: Path | None, seed: int, duration_s: float, out: Path | None, **options) -> SimulatedRun:
    loaded, workload = load_experiment(topology)
    return run_simulated(loaded, workload, chaos, seed, duration_s, out, topology_path=topology, make_plots=False,
                         **options)  # fmt: skip


def test_a_simulated_hot_partition_throttles_every_region_at_the_partition_cap_and_replays_from_the_seed(tmp_path):
    first = run(HOT, None, 3, 2.0, tmp_path / "a")
    run(HOT, None, 3, 2.0, tmp_path / "b")
    for name in ("results.json", "history.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    jsonschema.validate(results, SCHEMA)
    assert first.exit_code == 0, results["checks"]
    throttles = results["throttles"]
    assert throttles["attempts"] > 0
    assert set(throttles["by_reason"]) == {"TableWriteKeyRangeThroughputExceeded"}
    assert set(throttles["by_error"]) == {"ThrottlingException"}
    assert sorted(throttles["by_region"]) == sorted(results["regions"])
    for region in results["regions"]:
        assert throttles["by_region"][region]["TableWriteKeyRangeThroughputExceeded"] > 0, region
    # Open loop: each region asked 300 puts a second of the key; one partition accepted about 125 of them.
    for region, rate in results["throughput"].items():
        assert rate["achieved_per_s"] == 300.0, (region, rate)
        assert 0.8 * PARTITION_PUTS_PER_S <= rate["ok_per_s"] <= 1.1 * PARTITION_PUTS_PER_S, (region, rate)
    assert throttles["operations_failed"] == throttles["attempts"]  # sdk_retries: none, one attempt each
    assert sum(row["throttled"] for row in results["timeline"]) == throttles["attempts"]
    # The regions' own counters and Contributor Insights, as a process run's capacity phase collects them.
    for region in results["regions"]:
        found = results["capacity"][region]
        assert found["modelled"] and found["contributor_insights"], region
        hot = found["tables"]["Hot"]
        throttled = throttles["by_region"][region]["TableWriteKeyRangeThroughputExceeded"]
        assert hot["WriteKeyRangeThroughputThrottleEvents"] == throttled, region
        top = {rule.split("-")[1]: rows[0] for rule, rows in hot["top_keys"].items()}
        assert top["PKT"]["key"] == {"id": {"S": "k000000"}} and top["PKC"]["key"] == {"id": {"S": "k000000"}}
    report = (tmp_path / "a" / "report.md").read_text()
    assert "| TableWriteKeyRangeThroughputExceeded |" in report and "## Hottest keys" in report


def test_a_simulated_region_with_unlimited_capacity_never_throttles(tmp_path):
    topology = tmp_path / "hot-partition-unlimited.yaml"
    text = HOT.read_text().replace("  - name: eu-west-1\n", "  - name: eu-west-1\n    capacity: unlimited\n")
    topology.write_text(text)
    assert load_topology(topology).region("eu-west-1").capacity == "unlimited"
    results = run(topology, None, 3, 1.0, None).results
    by_region = results["throttles"]["by_region"]
    assert "eu-west-1" not in by_region and by_region["us-east-1"] and by_region["ap-southeast-1"]
    assert results["throughput"]["eu-west-1"]["ok_per_s"] == 300.0
    assert results["capacity"]["eu-west-1"]["modelled"] is False
    assert results["capacity"]["eu-west-1"]["contributor_insights"] is False
    assert results["capacity"]["us-east-1"]["modelled"] is True


def test_simulated_sdk_retries_wait_in_virtual_time_and_count_every_attempt(tmp_path):
    topology = tmp_path / "hot-partition-legacy.yaml"
    topology.write_text(HOT.read_text().replace("sdk_retries: none", "sdk_retries: legacy"))
    outcome = run(topology, None, 3, 1.0, tmp_path / "out")
    results = outcome.results
    throttles = results["throttles"]
    assert results["workload"]["sdk_retries"] == "legacy"
    assert throttles["retries"] > 0
    assert throttles["attempts"] == throttles["retries"] + throttles["operations_failed"]
    # An MREC request takes no virtual time: a put's latency is its retry delays (legacy: 50 ms, then 100 ms, ...).
    for region, ops in results["latency_ms"].items():
        assert ops["put"]["max"] >= 50.0, (region, ops["put"])
    assert run(topology, None, 3, 1.0, None).results["throttles"] == throttles


def test_a_simulated_underprovisioned_table_lags_then_drains_after_update_table_and_loses_nothing(tmp_path):
    schedule = tmp_path / "raise-capacity.yaml"  # chaos/raise-capacity.yaml, sooner
    schedule.write_text(
        "quiet: 1s\nsteps:\n  - {at: 4s, do: update-table, table: 'tables[0]', read_capacity: 400, "
        "write_capacity: 400}\n"
    )
    outcome = run(UNDERPROVISIONED, schedule, 3, 7.0, tmp_path / "under")
    results = outcome.results
    jsonschema.validate(results, SCHEMA)
    assert outcome.exit_code == 0, results["checks"]
    assert results["throttles"]["replication_deferred"] > 0  # the receivers deferred replicated writes
    assert results["throttles"]["operations_failed"] == 0  # the regions' own clients were served
    raised = next(f["mono"] for f in results["faults"] if f["f"] == "update-table") - results["measure_from_mono"]
    assert raised == 4.0
    before = [row["lag_ms"] for row in results["lag_timeline"] if row["t_s"] < raised]
    last = [row["lag_ms"] for row in results["lag_timeline"] if row["t_s"] > results["duration_s"] - 1.5]
    assert before and last and max(last) < max(before), (max(before), last)
    assert max(before) > 1000.0  # the lag grew to seconds while the replicated writes exceeded the capacity
    assert results["lost_writes"]["count"] == 0
    assert results["quiesced"] and all(check["passed"] for check in results["checks"])
    assert outcome.verdicts["convergence"] == "valid"
