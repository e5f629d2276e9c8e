"""The shipped capacity experiments, short, on real region processes (capacity modelled): a hot partition pins the
accepted rate near one partition's 1,000 WCU/s and results.json and report.md name the throttles' reasons; an
under-provisioned global table defers replicated writes (lag grows), an update-table step raises the capacity
(lag drains), nothing is lost and the replicas converge."""

from __future__ import annotations

import csv
from pathlib import Path

import jsonschema
import pytest

from globaltables.experiment.results import SCHEMA
from globaltables.experiment.runner import run_experiment

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(240)


def accepted_hot_puts(samples_csv: Path) -> dict[str, tuple[int, float]]:
    """Per region, from samples.csv: the workload's accepted puts (the lag probe writes other keys) and the seconds
    from the first attempt's intended start to the last answer."""
    accepted: dict[str, int] = {}
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    with open(samples_csv, newline="") as file:
        for row in csv.DictReader(file):
            if row["probe"] == "1":
                continue
            region, start = row["region"], float(row["intended_s"])
            first[region] = min(first.get(region, start), start)
            last[region] = max(last.get(region, start), start + float(row["latency_ms"]) / 1000.0)
            accepted[region] = accepted.get(region, 0) + (row["outcome"] == "ok")
    return {region: (accepted[region], last[region] - first[region]) for region in accepted}


async def test_a_hot_partition_pins_the_accepted_rate_and_reports_the_throttle_reasons(tmp_path):
    out = tmp_path / "hot"
    outcome = await run_experiment(ROOT / "topologies" / "hot-partition.yaml", out_dir=out, duration_s=2.0)
    assert outcome.exit_code == 0, outcome.reason or outcome.results["checks"]
    results = outcome.results
    jsonschema.validate(results, SCHEMA)
    throttles = results["throttles"]
    assert throttles["attempts"] > 0
    assert set(throttles["by_reason"]) == {"TableWriteKeyRangeThroughputExceeded"}
    assert set(throttles["by_error"]) == {"ThrottlingException"}
    assert set(throttles["by_region"]) == set(results["regions"])
    # 8 KB puts (8 WCU) to one key: one partition accepts 125 a second, whatever more is asked, plus the second of
    # throughput its bucket may hold at the start. Bounded over the time the region had to admit them (from the
    # first attempt's start to the last answer), so a slow machine serving late cannot make the bound fail.
    for region, (accepted, span_s) in accepted_hot_puts(out / "samples.csv").items():
        assert accepted <= 125 * (span_s + 1.0) * 1.02, (region, accepted, span_s)
    for region, rate in results["throughput"].items():
        assert rate["ok_per_s"] < rate["achieved_per_s"], (region, rate)  # the cap binds: the rest is throttled
    assert sum(row["throttled"] for row in results["timeline"]) == throttles["attempts"]
    report = (out / "report.md").read_text()
    assert "## Throttling" in report and "| TableWriteKeyRangeThroughputExceeded |" in report
    assert (out / "timeline.png").exists()
    assert all(check["passed"] for check in results["checks"])  # the replicas converge, LWW holds
    # The regions' own counters (GET /control/capacity) and Contributor Insights, enabled by the run, name the key.
    hot = {"id": {"S": "k000000"}}
    assert set(results["capacity"]) == set(results["regions"])
    for region, capacity in results["capacity"].items():
        assert capacity["modelled"] and capacity["contributor_insights"], region
        table = capacity["tables"]["Hot"]
        assert table["ThrottledRequests"] > 0 and table["ThrottledRequestsByOperation"]["PutItem"] > 0, region
        assert table["WriteKeyRangeThroughputThrottleEvents"] > 0, region
        assert table["WriteThrottleEvents"] >= table["WriteKeyRangeThroughputThrottleEvents"], region
        assert table["WriteProvisionedThroughputThrottleEvents"] == 0, region  # on demand: the partition refused
        assert table["ConsumedWriteCapacityUnits"] > 0, region
        throttled = next(rows for rule, rows in table["top_keys"].items() if "-PKT-" in rule)
        accessed = next(rows for rule, rows in table["top_keys"].items() if "-PKC-" in rule)
        assert throttled[0]["rank"] == 1 and throttled[0]["key"] == hot, (region, throttled[:2])
        assert accessed[0]["key"] == hot, (region, accessed[:2])
    assert "## Hottest keys" in report
    hottest = [line for line in report.splitlines() if line.startswith("| ") and "| Hot | 1 |" in line]
    assert len(hottest) == len(results["regions"]), hottest
    assert all(line.count("id=k000000") == 2 for line in hottest), hottest
    page = (out / "report.html").read_text()  # the page draws its section from the embedded data
    assert '"hottest":[{"region":"us-east-1","table":"Hot","rank":1,"accessed":{"key":"id=k000000"' in page


async def test_an_underprovisioned_global_table_lags_then_drains_after_update_table_and_loses_nothing(tmp_path):
    schedule = tmp_path / "raise-capacity.yaml"  # chaos/raise-capacity.yaml, sooner
    schedule.write_text(
        "quiet: 1s\nsteps:\n  - {at: 4s, do: update-table, table: 'tables[0]', read_capacity: 400, "
        "write_capacity: 400}\n"
    )
    outcome = await run_experiment(
        ROOT / "topologies" / "underprovisioned-global-table.yaml",
        chaos_path=schedule,
        out_dir=tmp_path / "under",
        duration_s=7.0,
        make_plots=False,
    )
    assert outcome.exit_code == 0, outcome.reason or outcome.results["checks"]
    results = outcome.results
    jsonschema.validate(results, SCHEMA)
    assert results["throttles"]["replication_deferred"] > 0  # the receivers deferred replicated writes
    assert results["throttles"]["operations_failed"] == 0  # the regions' own clients were served
    assert any(fault["f"] == "update-table" for fault in results["faults"])
    raised = next(f["mono"] for f in results["faults"] if f["f"] == "update-table") - results["measure_from_mono"]
    before = [row["lag_ms"] for row in results["lag_timeline"] if row["t_s"] < raised]
    last = [row["lag_ms"] for row in results["lag_timeline"] if row["t_s"] > results["duration_s"] - 1.5]
    assert before and last and max(last) < max(before), (max(before), last)
    assert results["lost_writes"]["count"] == 0
    assert results["quiesced"] and all(check["passed"] for check in results["checks"])


async def test_the_load_generator_retries_throttles_as_the_sdk_mode_would(tmp_path):
    topology = tmp_path / "hot-partition-standard.yaml"  # the shipped hot partition, with botocore's standard mode
    text = (ROOT / "topologies" / "hot-partition.yaml").read_text()
    topology.write_text(text.replace("sdk_retries: none", "sdk_retries: standard"))
    outcome = await run_experiment(topology, out_dir=tmp_path / "out", duration_s=2.0, make_plots=False)
    assert outcome.exit_code == 0, outcome.reason or outcome.results["checks"]
    throttles = outcome.results["throttles"]
    assert outcome.results["workload"]["sdk_retries"] == "standard"
    assert throttles["retries"] > 0
    # Every throttled attempt is counted, and is either retried or (its 3 attempts or the retry quota spent) the
    # end of its operation: puts fail here only by throttling.
    assert throttles["attempts"] == throttles["retries"] + throttles["operations_failed"]
    # What the retries did to p99: the same seeded load without them answers every put at its first attempt.
    plain = await run_experiment(ROOT / "topologies" / "hot-partition.yaml", out_dir=tmp_path / "plain",
                                 duration_s=2.0, make_plots=False)  # fmt: skip
    assert plain.exit_code == 0, plain.reason or plain.results["checks"]
    for region, ops in outcome.results["latency_ms"].items():
        assert ops["put"]["p99"] > plain.results["latency_ms"][region]["put"]["p99"], region
    report = (tmp_path / "out" / "report.md").read_text()
    assert "the delays of `sdk_retries: standard` included" in report
