"""`globaltables run --simulated` (experiment/simulated_run.py): a whole experiment in virtual time — the process
run's workload, chaos schedule, checkers and artifacts — reproducible byte for byte from its seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from globaltables.experiment.results import SCHEMA
from globaltables.experiment.runner import RunAborted, load_experiment
from globaltables.experiment.simulated_run import PlantedBugs, SimulatedRun, run_simulated

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "topologies" / "quickstart.yaml"
PARTITION = ROOT / "chaos" / "partition-and-heal.yaml"
DETERMINISTIC_FILES = (
    "history.jsonl", "results.json", "report.md", "report.html", "samples.csv", "final_state.jsonl", "checks.json",
    "chaos.log", "lost_writes.jsonl", "apply_decisions.jsonl",
)  # fmt: skip


def run(topology: Path, chaos: Path | None, seed: int, duration_s: float, out: Path | None, **options) -> SimulatedRun:
    loaded, workload = load_experiment(topology)
    return run_simulated(loaded, workload, chaos, seed, duration_s, out, topology_path=topology, **options)


def test_sixty_virtual_seconds_of_quickstart_under_a_partition_replay_byte_for_byte_from_the_seed(tmp_path):
    first = run(QUICKSTART, PARTITION, 7, 60, tmp_path / "a", make_plots=False)
    again = run(QUICKSTART, PARTITION, 7, 60, tmp_path / "b", make_plots=False)
    other = run(QUICKSTART, PARTITION, 8, 60, tmp_path / "c", make_plots=False)
    for name in DETERMINISTIC_FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert (tmp_path / "a" / "history.jsonl").read_bytes() != (tmp_path / "c" / "history.jsonl").read_bytes()
    assert first.verdicts == {"lww": "valid", "causal": "valid", "convergence": "valid"}
    assert first.exit_code == 0 and first.first_violation is None
    assert first.results == again.results and other.results["seed"] == 8
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    jsonschema.validate(results, SCHEMA)
    assert results["simulated"] is True
    assert results["duration_s"] == 60.0
    assert results["virtual_time"]["end_s"] >= 61.0  # warm-up, 60 s of load, the quiet period
    assert results["replay"] == first.replay
    assert "--simulated --seed 7" in first.replay and str(PARTITION) in first.replay
    partitions = [f for f in results["faults"] if f["f"] == "partition"]
    assert [f["value"]["phase"] for f in partitions] == ["start", "end"]
    assert partitions[0]["mono"] == pytest.approx(1.0 + 1.05)  # 1 s into the measured period, in virtual time
    # The workload's rate, open loop: 50 operations a second in each region for 60 s.
    for region in ("us-east-1", "eu-west-1", "ap-southeast-1"):
        assert results["throughput"][region]["achieved_per_s"] == pytest.approx(50, abs=1)
    assert results["replication_lag_ms"], "the lag probe measured the links"
    history = (tmp_path / "a" / "history.jsonl").read_bytes().splitlines()
    record = json.loads(history[0])
    assert list(record) == ["index", "type", "process", "region", "f", "table", "key", "value", "version", "error",
                            "mono", "wall", "condition"]  # fmt: skip


def test_a_process_run_and_a_simulated_one_ask_the_same_operations_of_the_same_keys():
    """The seeded streams are the load generator's: region r's i-th operation and key are the same draws."""
    from globaltables.experiment.workload import KeyChooser, OperationChooser
    from globaltables.runtime.rng import Rng

    topology, workload = load_experiment(QUICKSTART)
    workload = workload.with_overrides(lag_probe_interval_s=0)
    region_rng = Rng(5).fork("workload/eu-west-1")  # as LoadGenerator.drive forks it
    keys, ops = KeyChooser(workload, region_rng.fork("keys")), OperationChooser(workload, region_rng.fork("ops"))
    expected = [(ops.next(), keys.next()) for _ in range(20)]
    names = {"conditional_update": "update"}
    assert _first_invocations(topology, workload, 5, "eu-west-1", 20) == [
        (names.get(op, op), f"k{key:06d}") for op, key in expected
    ]


def _first_invocations(topology, workload, seed: int, region: str, count: int) -> list[tuple[str, str]]:
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        run_simulated(topology, workload, None, seed, 3, Path(out), make_plots=False)
        records = [json.loads(line) for line in (Path(out) / "history.jsonl").read_bytes().splitlines()]
    invocations = [r for r in records if r["type"] == "invoke" and r["region"] == region]
    return [(r["f"], r["key"]["customerId"]["S"]) for r in invocations[:count]]


@pytest.mark.parametrize("topology", ["mrsc-three-replicas", "mrsc-witness"])
def test_strong_mode_topologies_run_and_pass_their_checkers(tmp_path, topology):
    path = ROOT / "topologies" / f"{topology}.yaml"
    result = run(path, PARTITION, 3, 10, tmp_path, make_plots=False)
    assert result.verdicts == {"linearizable": "valid", "convergence": "valid"}
    assert result.results["mode"] == "mrsc" and result.results["simulated"] is True
    outcomes = result.results["outcomes"]
    assert outcomes, "strong reads and writes were answered"
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_bytes().splitlines()]
    strong = [r for r in history if r["f"] == "strong_get" and r["type"] == "ok"]
    assert strong, "strong reads waited for the protocol and were judged"
    assert any(r["type"] == "ok" and r["f"] in ("put", "update") for r in history)


def test_crashes_and_pauses_on_the_simulator_keep_every_checker_valid(tmp_path):
    result = run(QUICKSTART, ROOT / "chaos" / "crash-restart.yaml", 4, 10, tmp_path, make_plots=False)
    assert result.exit_code == 0, result.results["checks"]
    history = [json.loads(line) for line in (tmp_path / "history.jsonl").read_bytes().splitlines()]
    # Requests to the crashed region were refused (info: the load generator cannot tell), to the paused one held.
    assert any(r["error"] == "ConnectionError" for r in history)
    verbs = {f["f"] for f in result.results["faults"]}
    assert {"crash", "pause"} <= verbs


@pytest.mark.parametrize("chaos", ["isolate-one-region", "flaky-links", "clock-skew", "random-mix"])
def test_the_shipped_schedules_run_on_the_simulator(tmp_path, chaos):
    result = run(QUICKSTART, ROOT / "chaos" / f"{chaos}.yaml", 2, 10, None)
    assert result.exit_code == 0, result.first_violation


def test_a_schedule_the_topology_cannot_take_is_refused_naming_the_step():
    topology, workload = load_experiment(ROOT / "topologies" / "mrsc-three-replicas.yaml")
    with pytest.raises(RunAborted, match="pause-replication"):
        run_simulated(topology, workload, ROOT / "chaos" / "pause-replication.yaml", 1, 5, None)


def test_a_region_ignoring_replicated_writes_is_caught_by_the_checkers():
    bug = PlantedBugs(ignore_replicated_write=("eu-west-1", 0.02))
    result = run(QUICKSTART, None, 1, 10, None, hooks=bug)
    assert result.exit_code == 1
    assert result.verdicts["convergence"] == "invalid"
    violation = result.first_violation
    assert violation is not None and violation["check"] in ("lww", "convergence") and violation["key"]
    clean = run(QUICKSTART, None, 1, 10, None)
    assert clean.exit_code == 0


def test_the_cli_runs_a_simulated_experiment_and_writes_the_report(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "globaltables.cli.main", "run", str(QUICKSTART), "--simulated",
               "--seed", "2", "--duration", "5", "--chaos", str(PARTITION), "--out", str(out)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "convergence: PASS" in done.stdout
    for name in ("results.json", "history.jsonl", "report.md", "checks.json", "final_state.jsonl"):
        assert (out / name).exists(), name
    assert list(out.glob("*.png")), "the report's plots"
    assert json.loads((out / "results.json").read_text())["simulated"] is True
    refused = subprocess.run([*command[:-2], "--out", str(tmp_path / "x"), "--attach"], capture_output=True,
                             text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert refused.returncode == 2 and "--attach" in refused.stderr


def test_a_member_answering_strong_reads_locally_is_caught_by_the_linearizability_checker():
    topology = ROOT / "topologies" / "mrsc-three-replicas.yaml"
    bug = PlantedBugs(local_strong_reads="us-east-2")  # partitioned from us-east-1 by the schedule
    result = run(topology, PARTITION, 1, 10, None, hooks=bug)
    assert result.verdicts["linearizable"] == "invalid"
    assert result.first_violation["check"] == "linearizable"
    assert "strong_get by us-east-2" in result.first_violation["detail"]
    assert run(topology, PARTITION, 1, 10, None).exit_code == 0


def test_a_planted_bug_of_the_other_mode_is_refused():
    topology, workload = load_experiment(ROOT / "topologies" / "mrsc-three-replicas.yaml")
    with pytest.raises(ValueError, match="MREC bug"):
        run_simulated(topology, workload, None, 1, 1, None, hooks=PlantedBugs(ignore_replicated_write=("us-east-1", 1)))
    topology, workload = load_experiment(QUICKSTART)
    for bug in (PlantedBugs(local_strong_reads="us-east-1"), PlantedBugs(voter_accepts_after_refusing="us-east-1")):
        with pytest.raises(ValueError, match="MRSC bug"):
            run_simulated(topology, workload, None, 1, 1, None, hooks=bug)


def test_a_voter_accepting_after_refusing_leaves_the_replicas_apart(tmp_path):
    """PlantedBugs.voter_accepts_after_refusing: two racing strong writes both commit at one version, each of
    their coordinators keeping its own image; caught where such a race is an item's last write (seed 16 here)."""
    document = yaml.safe_load(QUICKSTART.read_text())
    document["mode"] = "mrsc"
    document["workload"].update(warmup_s=0, rate_per_region=20, keys=10, lag_probe_interval_s=0)
    path = tmp_path / "quickstart-mrsc.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    bug = PlantedBugs(voter_accepts_after_refusing="eu-west-1")
    result = run_simulated(path, None, None, 16, 1.0, None, hooks=bug)
    assert result.verdicts["convergence"] == "invalid", result.verdicts
    assert result.first_violation["check"] == "convergence"
    assert "different versions" in result.first_violation["detail"]
    assert run_simulated(path, None, None, 16, 1.0, None).exit_code == 0


def test_the_entry_point_takes_and_gives_picklable_values_for_worker_processes():
    import pickle

    from globaltables.experiment.runner import load_chaos

    topology, workload = load_experiment(QUICKSTART)
    schedule = load_chaos(PARTITION, topology, 3)
    # A worker gets the topology's path (a loaded Topology holds read-only mapping proxies, which do not pickle).
    arguments = pickle.loads(pickle.dumps((QUICKSTART, workload, schedule, 3, 2.0, None)))
    bug = pickle.loads(pickle.dumps(PlantedBugs(ignore_replicated_write=("eu-west-1", 0.01))))
    result = run_simulated(*arguments, hooks=bug)
    again = pickle.loads(pickle.dumps(result))
    assert again.results == result.results and again.verdicts == result.verdicts and again.replay == result.replay
    assert result.replay.startswith(f"globaltables run {QUICKSTART} --simulated --seed 3")
    assert run_simulated(QUICKSTART, None, schedule, 3, 2.0, None).results["workload"] == result.results["workload"]


EVERY_FAULT = """\
name: every-fault
quiet: 2s
steps:
  - {at: 0s, do: partition, between: ["replica[0]", "replica[1]"], one_way: true, for: 2s}
  - {at: 0s, do: bandwidth, between: ["replica[1]", "replica[2]"], kbps: 20, for: 3s}
  - {at: 0s, do: loss, between: ["replica[0]", "replica[2]"], rate: 0.2, burst: 3, for: 2s}
  - {at: 1s, do: stall, between: ["replica[0]", "replica[2]"], for: 1s}
  - {at: 1s, do: duplicate, between: ["replica[1]", "replica[2]"], rate: 0.2, for: 2s}
  - {at: 1s, do: reorder, between: ["replica[0]", "replica[1]"], rate: 0.2, delay: 60ms, for: 2s}
  - {at: 2s, do: bridge, sides: [["region[0]"], ["region[1]"]], region: "region[2]", for: 2s}
  - {at: 2s, do: skew, region: "region[1]", offset: +300ms, for: 2s}
  - {at: 2s, do: strobe, region: "region[2]", delta: 200ms, period: 100ms, for: 2s}
  - {at: 3s, do: pause, region: "region[1]", for: 1s}
  - {at: 4s, do: drift, region: "region[0]", ppm: 20000, for: 2s}
  - {at: 5s, do: crash, region: "region[2]", for: 1s}
  - {at: 6s, do: latency, between: ["replica[0]", "replica[1]"], latency: 20ms, jitter: 30ms, distribution: normal,
     for: 1s}
"""


@pytest.mark.parametrize("topology", ["quickstart", "mrsc-three-replicas"])
def test_every_kind_of_fault_runs_on_the_simulator_and_a_paused_region_answers_late(tmp_path, topology):
    schedule = tmp_path / "every-fault.yaml"
    text = EVERY_FAULT
    if topology == "quickstart":  # MREC only: a table's replication paused (fit_tables refuses it under MRSC)
        text += '  - {at: 4s, do: pause-replication, table: "tables[0]", region: "region[0]", for: 2s}\n'
    schedule.write_text(text)
    result = run(ROOT / "topologies" / f"{topology}.yaml", schedule, 1, 8, tmp_path / "out", make_plots=False)
    assert result.exit_code == 0, result.first_violation
    started = {f["f"] for f in result.results["faults"] if (f["value"] or {}).get("phase") == "start"}
    verbs = {"partition", "bandwidth", "loss", "stall", "duplicate", "reorder", "bridge", "skew", "strobe", "pause",
             "drift", "crash", "latency"}  # fmt: skip
    assert verbs | ({"pause-replication"} if topology == "quickstart" else set()) <= started
    # region[1] was paused for 1 s: what its clients asked meanwhile was answered when it resumed.
    paused = result.results["regions"][1]
    assert max(stats["max"] for stats in result.results["latency_ms"][paused].values()) >= 500


def test_the_simulated_lag_probe_reports_the_polling_probes_lag_with_one_read_per_target(tmp_path, monkeypatch):
    """docs/results.md, "The lag probe in virtual time": a poll the target's store shows to be stale is not sent,
    and the lag figures are the ones the probe that sends every poll reports (here under a partition, so some
    watches wait seconds)."""
    from globaltables.experiment import simulated_run

    looking = run(QUICKSTART, PARTITION, 3, 8, tmp_path / "looking", make_plots=False)
    monkeypatch.setattr(simulated_run._MrecClients, "_peeker", lambda self, region, key: None)
    polling = run(QUICKSTART, PARTITION, 3, 8, tmp_path / "polling", make_plots=False)
    assert looking.results["lag_timeline"] == polling.results["lag_timeline"]
    assert looking.results["replication_lag_ms"] == polling.results["replication_lag_ms"]
    assert len(looking.results["lag_timeline"]) >= 6 * 8  # every link, about twice a second

    def probe_reads(name: str) -> int:
        rows = (line.split(",") for line in (tmp_path / name / "samples.csv").read_text().splitlines()[1:])
        return sum(1 for row in rows if row[1] == "get" and row[-1] == "1")

    looked, polled = probe_reads("looking"), probe_reads("polling")
    samples = len(looking.results["lag_timeline"])
    assert looked <= samples + 10 < polled  # about one read per sample, against one per 5 ms of lag
    for outcome in (looking, polling):
        assert outcome.verdicts == {"lww": "valid", "causal": "valid", "convergence": "valid"}
