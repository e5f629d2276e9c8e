"""`globaltables run` and `compare` end to end with real region processes, kept short (a couple of seconds of load
each): results.json against its schema and the checker verdicts, the offline `check --results`, chaos faults in the
history, and every shipped experiment running as it is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import orjson
import pytest

from globaltables.chaos.history import History
from globaltables.experiment.compare import compare
from globaltables.experiment.results import SCHEMA
from globaltables.experiment.runner import run_experiment
from globaltables.experiment.workload import OPERATIONS

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
pytestmark = pytest.mark.timeout(240)
SHORT_S = 2.0


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "globaltables.cli.main", *args],
        check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=200,
    )  # fmt: skip


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("run") / "quickstart"
    done = cli("run", str(ROOT / "topologies" / "quickstart.yaml"), "--out", str(out), "--duration", str(SHORT_S),
               "--seed", "7", cwd=out.parent)  # fmt: skip
    return done, out


def test_a_short_run_writes_results_that_match_the_schema_and_pass_the_checkers(quickstart_run):
    done, out = quickstart_run
    assert done.returncode == 0, done.stderr + done.stdout
    assert f"report: {out / 'report.md'}" in done.stdout
    results = json.loads((out / "results.json").read_text())
    jsonschema.validate(results, SCHEMA)
    assert results["mode"] == "mrec" and results["seed"] == 7 and results["topology"] == "quickstart"
    assert results["conflict_clock"] == "hlc"
    assert {check["name"]: check["passed"] for check in results["checks"]} == {
        "lww": True, "causal": True, "convergence": True
    }
    mix = set(results["workload"]["mix"])
    assert mix <= set(OPERATIONS)
    for region in ("us-east-1", "eu-west-1", "ap-southeast-1"):
        assert set(results["latency_ms"][region]) == mix  # keyed by exactly the mix names
        assert results["throughput"][region]["achieved_per_s"] > 0
    assert set(results["replication_lag_ms"]) == {
        f"{a}->{b}" for a in results["regions"] for b in results["regions"] if a != b
    }
    # A floor, never a ceiling: a write cannot reach eu-west-1 faster than the 40 ms one-way link.
    assert results["replication_lag_ms"]["us-east-1->eu-west-1"]["p50"] >= 40 * 0.95
    assert results["quiesced"] and results["convergence_ms"][0]["ms"] is not None
    for name in ("history.jsonl", "final_state.jsonl", "report.md", "samples.csv", "latency_cdf.png",
                 "timeline.png", "replication_lag.png", "topology.png"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    assert "all checks passed" in (out / "report.md").read_text()
    assert {check["verdict"] for check in results["checks"]} == {"valid"}
    # The load generator's history reads back record for record.
    written = (out / "history.jsonl").read_bytes()
    history = History.loads(written)
    assert history.dumps() == written and history.pairs()


def test_check_results_reruns_the_checkers_offline_and_can_fail(quickstart_run, tmp_path):
    _, out = quickstart_run
    assert cli("check", "--results", str(out), cwd=tmp_path).returncode == 0
    # Drop one item from one replica: the offline rerun must now fail and name the key.
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("results.json", "history.jsonl"):
        (broken / name).write_bytes((out / name).read_bytes())
    lines = (out / "final_state.jsonl").read_bytes().splitlines()
    victim = next(i for i, line in enumerate(lines) if orjson.loads(line)["region"] == "eu-west-1"
                  and orjson.loads(line)["key"] is not None)  # fmt: skip
    dropped = orjson.loads(lines[victim])["key"]
    (broken / "final_state.jsonl").write_bytes(b"\n".join(lines[:victim] + lines[victim + 1 :]) + b"\n")
    done = cli("check", "--results", str(broken), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "convergence: FAIL" in done.stdout and dropped in done.stdout


async def test_a_run_with_a_chaos_schedule_records_the_faults_and_converges(tmp_path):
    schedule = tmp_path / "short-partition.yaml"  # chaos/partition-and-heal.yaml, shortened
    schedule.write_text(
        "quiet: 0.5s\nsteps:\n  - {at: 0.5s, do: partition, between: [us-east-1, eu-west-1], for: 2s}\n"
    )
    outcome = await run_experiment(
        ROOT / "topologies" / "quickstart.yaml",
        chaos_path=schedule,
        out_dir=tmp_path / "chaos",
        duration_s=1.0,  # the load lasts until the schedule's final heal (2.5 s)
        make_plots=False,
    )
    assert outcome.exit_code == 0, outcome.reason or outcome.results["checks"]
    results = outcome.results
    jsonschema.validate(results, SCHEMA)
    assert results["workload"]["duration_s"] >= 2.5
    phases = [(fault["f"], (fault["value"] or {}).get("phase")) for fault in results["faults"]]
    assert ("partition", "start") in phases and ("partition", "end") in phases and ("heal", "final") in phases
    assert [entry["after"] for entry in results["convergence_ms"]] == ["end of load", "final heal"]


async def test_a_bad_chaos_schedule_is_refused_before_anything_starts(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps:\n  - {at: 1s, do: partition, between: [us-east-1, eu-west-9], for: 2s}\n")
    outcome = await run_experiment(ROOT / "topologies" / "quickstart.yaml", chaos_path=bad, out_dir=tmp_path / "o")
    assert outcome.exit_code == 2 and outcome.results is None
    assert str(bad) in outcome.reason and "eu-west-9" in outcome.reason
    assert not (tmp_path / "o").exists()


SHIPPED = sorted(
    path
    for path in (ROOT / "topologies").glob("*.yaml")
    if "workload:" in path.read_text() and path.stem != "quickstart"
)


@pytest.mark.parametrize("topology", SHIPPED, ids=[path.stem for path in SHIPPED])
async def test_every_shipped_experiment_runs(topology, tmp_path):
    outcome = await run_experiment(topology, out_dir=tmp_path / topology.stem, duration_s=SHORT_S, make_plots=False)
    assert outcome.exit_code == 0, outcome.reason or outcome.results["checks"]
    jsonschema.validate(outcome.results, SCHEMA)


COMPARE_TOPOLOGY = """
name: compare-25ms
mode: mrec
regions: [{name: us-east-1}, {name: us-east-2}, {name: us-west-2}]
links: {default: {latency_ms: 25, jitter_ms: 0}}
tables:
  - TableName: Orders
    AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
    KeySchema: [{AttributeName: pk, KeyType: HASH}]
workload: {table: Orders, duration_s: 2, rate_per_region: 30, keys: 200, item_bytes: 100,
           mix: {put: 0.6, get: 0.2, strong_get: 0.2}}
"""


async def test_compare_puts_mrsc_writes_a_round_trip_above_mrec(tmp_path):
    # On 25 ms links the nearest member is a 50 ms round trip away: every MRSC write pays it, MREC writes are local.
    # Floors only (this machine is noisy): MRSC p50 >= 0.95 x 50 ms, MREC p50 under half of it.
    topology = tmp_path / "compare-25ms.yaml"
    topology.write_text(COMPARE_TOPOLOGY)
    code, document = await compare(topology, ["mrec", "mrsc"], chaos_path=None, seed=3, out_dir=tmp_path / "out",
                                   duration_s=2.0)  # fmt: skip
    modes = document["modes"]
    assert code == 0 and modes["mrec"]["ran"] and modes["mrsc"]["ran"], document
    assert modes["mrec"]["passed"] and modes["mrsc"]["passed"], document
    for region in ("us-east-1", "us-east-2", "us-west-2"):
        assert modes["mrsc"]["writes_ms"][region]["put"]["p50"] >= 0.95 * 50
        assert modes["mrec"]["writes_ms"][region]["put"]["p50"] < 25
        assert modes["mrsc"]["write_floor_ms"][region] == 50
    assert "MRSC floor" in (tmp_path / "out" / "compare.md").read_text()
    # report.html: the modes side by side, each MRSC write beside its floor, in a real browser, offline.
    from browser import chromium, console_errors, full_page_screenshot, requested_urls
    from selenium.webdriver.support.ui import WebDriverWait

    with chromium() as driver:
        driver.get((tmp_path / "out" / "report.html").as_uri())
        WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
        assert console_errors(driver) == []
        assert all(url.startswith("file://") for url in requested_urls(driver))
        names = driver.execute_script("return document.getElementById('chart-compare-writes').data.map(t => t.name)")
        assert {"mrec write p50", "mrsc write p50", "MRSC floor"} <= set(names)
        floor = driver.execute_script(
            "return document.getElementById('chart-compare-writes').data.find(t => t.name === 'MRSC floor').y")
        assert floor == [50, 50, 50]
        full_page_screenshot(driver, "compare-html.png")
    for mode in ("mrec", "mrsc"):
        assert (tmp_path / "out" / mode / "report.html").stat().st_size > 0


SIGNED_TOPOLOGY = """
name: signed-run
mode: mrec
regions: [{name: us-east-1}, {name: eu-west-1}]
links: {default: {latency_ms: 10, jitter_ms: 1}}
credentials:
  AKIDRUNNER: runner-secret
tables:
  - TableName: Orders
    AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
    KeySchema: [{AttributeName: pk, KeyType: HASH}]
workload:
  table: Orders
  duration_s: 2
  warmup_s: 0
  rate_per_region: 40
  keys: 50
  mix: {put: 0.5, get: 0.3, delete: 0.2}
"""


def test_a_run_on_regions_that_verify_signatures_signs_with_the_topologys_key(tmp_path):
    # Why: with credentials: in a topology every region refuses unsigned requests, so the load generator, the final
    # scans and the checkers must sign with one of its keys, or every operation would fail.
    topology = tmp_path / "signed.yaml"
    topology.write_text(SIGNED_TOPOLOGY)
    out = tmp_path / "out"
    done = cli("run", str(topology), "--out", str(out), "--duration", str(SHORT_S), "--seed", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    results = json.loads((out / "results.json").read_text())
    assert {check["name"]: check["passed"] for check in results["checks"]} == {
        "lww": True, "causal": True, "convergence": True
    }
    for region in ("us-east-1", "eu-west-1"):
        assert results["throughput"][region]["achieved_per_s"] > 0
        assert not set(results["errors"].get(region, {})) & {"UnrecognizedClientException", "InvalidSignatureException"}
    assert "runner-secret" not in (out / "report.md").read_text() + (out / "results.json").read_text()
