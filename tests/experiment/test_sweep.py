"""Seed sweeps, swarm schedules and shrinking, on the simulator, against a planted bug (simulated_run.PlantedBugs):
a region that silently ignores a replicated write with a small seeded probability."""

from __future__ import annotations

import json
import shlex
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from globaltables.chaos.schedule import load_schedule
from globaltables.chaos.swarm import draw_schedule, schedule_of
from globaltables.experiment.executors import ExecutorError, open_executor, parse_executor
from globaltables.experiment.runner import load_experiment
from globaltables.experiment.shrink import shrink
from globaltables.experiment.simulated_run import PlantedBugs, run_simulated
from globaltables.experiment.sweep import SweepError, parse_seeds, plan_sweep, run_sweep

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "topologies" / "quickstart.yaml"
REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-1"]
BUG = PlantedBugs(ignore_replicated_write=("eu-west-1", 0.01))
DURATION = 1.0


@pytest.fixture
def small(tmp_path) -> Path:
    """quickstart with a small, quick workload: no warm-up, no lag probes, 20 keys at 20 operations a second."""
    document = yaml.safe_load(QUICKSTART.read_text())
    document["workload"].update(warmup_s=0, rate_per_region=20, keys=20, lag_probe_interval_s=0)
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_seed_ranges_and_their_errors():
    assert parse_seeds("1-3,7,2-4") == [1, 2, 3, 7, 4]
    assert parse_seeds("5") == [5]
    for bad, words in [("3-1", "low to high"), ("a-b", "not a seed"), ("1,,2", "empty item"), ("-5", "not a seed")]:
        with pytest.raises(SweepError, match=words):
            parse_seeds(bad)


def test_chaos_and_nemesis_exclude_each_other():
    with pytest.raises(SweepError, match="give one"):
        plan_sweep(QUICKSTART, "1-2", chaos_path=ROOT / "chaos" / "flaky-links.yaml", nemesis="random")


def test_swarm_schedules_are_valid_files_that_differ_by_seed(tmp_path):
    kinds = set()
    for seed in range(1, 60):
        document, mix = draw_schedule(seed, REGIONS, duration_s=2.0, tables=["Orders"])
        schedule = schedule_of(document, REGIONS)
        assert schedule.faults and schedule.end_s <= 2.0
        assert {fault.verb for fault in schedule.faults} <= set(mix.kinds)
        kinds.add(mix.kinds)
        assert draw_schedule(seed, REGIONS, duration_s=2.0, tables=["Orders"]) == (document, mix)
    assert len(kinds) > 30  # each seed draws its own mix


def _sweep(tmp_path, topology, executor, seeds="1-200"):
    sweep = plan_sweep(topology, seeds, nemesis="random", duration_s=DURATION, hooks=BUG)
    return run_sweep(sweep, tmp_path / "sweep", executor, keep_failures=1)


def test_a_planted_bug_is_found_replayed_and_shrunk(tmp_path, small):
    with open_executor("local", jobs=2) as pool:
        record = _sweep(tmp_path, small, pool)
    totals = record["totals"]
    assert totals["runs"] == 200 and totals["operations"] > 0 and totals["faults"] > 0
    assert 0 < totals["invalid"] < 200, totals  # the bug is rare enough that some seeds miss it
    assert "lww" in totals["failures_by_checker"]
    saved = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert len(saved["runs"]) == 200 and all(run["verdict"] in ("valid", "invalid") for run in saved["runs"])
    failing = next(run for run in saved["runs"] if run["verdict"] == "invalid")
    assert failing["reproduced"] is True
    assert failing["nemesis"]["kinds"]

    # The replay command, run as written (with the same planted bug): the same verdict and first violation.
    words = shlex.split(failing["replay"])
    assert words[:2] == ["globaltables", "run"] and "--simulated" in words
    topology_path, seed = Path(words[2]), int(words[words.index("--seed") + 1])
    chaos = Path(words[words.index("--chaos") + 1])
    duration = float(words[words.index("--duration") + 1])
    assert seed == failing["seed"] and chaos.exists()
    load_schedule(chaos, REGIONS)  # a real schedule file
    topology, workload = load_experiment(topology_path)
    replay = run_simulated(topology, workload, chaos, seed, duration, None, hooks=BUG)
    assert replay.verdicts["lww"] == "invalid"
    assert replay.first_violation == failing["first_violation"]

    # Shrink: smaller, and still failing when replayed.
    case_dir = tmp_path / "sweep" / "failures" / f"mrec-seed-{seed}"
    result = shrink(case_dir, hooks=BUG, max_runs=60)
    before, after = result["before"], result["after"]
    assert after["operations"] < before["operations"] or after["faults"] < before["faults"]
    assert result["still_fails"]
    shrunk = case_dir / "shrunk"
    assert (shrunk / "story.md").read_text().count("- t=") >= 1
    words = shlex.split(result["replay"])
    topology, workload = load_experiment(Path(words[2]))
    chaos = Path(words[words.index("--chaos") + 1]) if "--chaos" in words else None
    again = run_simulated(topology, workload, chaos, seed, float(words[words.index("--duration") + 1]), None, hooks=BUG)
    assert again.verdicts[result["checker"]] == "invalid"


def test_the_executor_seam_takes_any_concurrent_futures_executor(tmp_path, small):
    with ThreadPoolExecutor(2) as pool:
        record = _sweep(tmp_path, small, pool, seeds="1-4")
    assert record["totals"]["runs"] == 4


def test_executor_addresses():
    assert parse_executor(None) is None and parse_executor("local") is None
    assert parse_executor("dask://127.0.0.1:8786") == "tcp://127.0.0.1:8786"
    for bad in ("dask://nohost", "spark://x:1", "dask://h:port"):
        with pytest.raises(ExecutorError):
            parse_executor(bad)


def test_a_sweep_on_a_dask_cluster(tmp_path, small):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, processes=False, host="127.0.0.1", protocol="tcp", dashboard_address=None
    ) as cluster:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        with open_executor(address) as pool:
            record = _sweep(tmp_path, small, pool, seeds="1-3")
    assert record["totals"]["runs"] == 3
    assert [run["seed"] for run in record["runs"]] == [1, 2, 3]


def test_a_replay_names_the_files_of_its_mode_and_nemesis(tmp_path, small):
    sweep = plan_sweep(small, "3", modes="mrec,mrsc", nemesis="random", duration_s=DURATION)
    with ThreadPoolExecutor(1) as pool:
        record = run_sweep(sweep, tmp_path / "sweep", pool)
    assert [(run["mode"], run["seed"]) for run in record["runs"]] == [("mrec", 3), ("mrsc", 3)]
    from globaltables.experiment.sweep import SeedTask, _write_case_files, replay_command

    mrsc = next(task for task in sweep.tasks() if task.mode == "mrsc")
    verdict = {**record["runs"][1], "verdict": "invalid"}
    _write_case_files(tmp_path / "sweep", mrsc, verdict)
    words = shlex.split(replay_command(sweep, tmp_path / "sweep", verdict))
    topology, _ = load_experiment(Path(words[2]))
    assert topology.mode == "mrsc" and isinstance(mrsc, SeedTask)
    schedule = load_schedule(Path(words[words.index("--chaos") + 1]), REGIONS)
    assert schedule.faults == schedule_of(verdict["schedule"], REGIONS).faults


def test_the_cli_refuses_bad_seeds_before_running_anything(small, capsys):
    from globaltables.cli.main import main

    assert main(["sweep", str(small), "--seeds", "9-1"]) == 2
    assert "runs from low to high" in capsys.readouterr().err


def test_shrink_starts_from_a_run_simulated_results_dir(tmp_path, small):
    topology, workload = load_experiment(small)
    seed = next(
        seed
        for seed in range(1, 50)
        if run_simulated(topology, workload, None, seed, DURATION, None, hooks=BUG).first_violation
    )
    out = tmp_path / "run"
    failed = run_simulated(
        topology, workload, None, seed, DURATION, out, hooks=BUG, topology_path=small, make_plots=False
    )
    result = shrink(out, hooks=BUG, max_runs=20)
    assert result["checker"] == failed.first_violation["check"] and result["still_fails"]
    assert result["after"]["operations"] < result["before"]["operations"]
    assert not (out / "shrunk" / "chaos.yaml").exists()  # there were no faults to keep


def test_the_cli_sweeps_with_a_progress_bar_and_prints_the_summary(tmp_path, small, capsys):
    from globaltables.cli.main import main

    code = main(["sweep", str(small), "--seeds", "1-3", "--nemesis", "random", "--duration", "0.5", "--jobs", "1",
                 "--out", str(tmp_path / "sweep")])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert "runs: 3 (3 valid, 0 invalid, 0 unknown)" in captured.out and "faults injected:" in captured.out
    assert "3/3" in captured.err  # the progress bar's last state
    assert json.loads((tmp_path / "sweep" / "sweep.json").read_text())["seeds"] == "1-3"


def test_the_swarm_finds_a_planted_strong_mode_bug(tmp_path):
    """An MRSC member answering strong reads from its own copy is only caught when a fault cuts it off: the seeds
    whose swarm draws such a fault find it, and the shrunk case still does."""
    document = yaml.safe_load((ROOT / "topologies" / "mrsc-three-replicas.yaml").read_text())
    document["workload"].update(warmup_s=0, rate_per_region=20, keys=20, lag_probe_interval_s=0)
    topology = tmp_path / "mrsc.yaml"
    topology.write_text(yaml.safe_dump(document, sort_keys=False))
    bug = PlantedBugs(local_strong_reads="us-east-2")
    sweep = plan_sweep(topology, "1-30", nemesis="random", duration_s=DURATION, hooks=bug)
    with ThreadPoolExecutor(2) as pool:
        record = run_sweep(sweep, tmp_path / "sweep", pool, keep_failures=1)
    assert record["totals"]["failures_by_checker"].get("linearizable", 0) > 0
    assert record["totals"]["valid"] > 0  # seeds whose faults never cut that member off see nothing wrong
    failing = next(run for run in record["runs"] if run["verdict"] == "invalid")
    assert failing["reproduced"] is True and failing["mode"] == "mrsc"
    result = shrink(tmp_path / "sweep" / "failures" / f"mrsc-seed-{failing['seed']}", hooks=bug, max_runs=40)
    assert result["still_fails"] and result["checker"] == "linearizable"
    assert result["after"]["operations"] < result["before"]["operations"] or (
        result["after"]["faults"] < result["before"]["faults"]
    )


def test_a_voter_accepting_after_refusing_is_found_replayed_and_shrunk(tmp_path):
    """An MRSC voter that refuses a racing proposal as `conflict` and then accepts it all the same lets two strong
    writes commit at one version: the replicas keep different images of the item, which the checkers find in the
    seeds where such a race was an item's last write. No fault is needed: the race is the workload's own."""
    document = yaml.safe_load(QUICKSTART.read_text())
    document["mode"] = "mrsc"
    document["workload"].update(warmup_s=0, rate_per_region=20, keys=10, lag_probe_interval_s=0)
    topology_path = tmp_path / "mrsc.yaml"
    topology_path.write_text(yaml.safe_dump(document, sort_keys=False))
    bug = PlantedBugs(voter_accepts_after_refusing="eu-west-1")
    sweep = plan_sweep(topology_path, "1-200", duration_s=DURATION, hooks=bug)
    with open_executor("local", jobs=2) as pool:
        record = run_sweep(sweep, tmp_path / "sweep", pool, keep_failures=1)
    totals = record["totals"]
    assert totals["runs"] == 200 and 0 < totals["invalid"] < 200, totals
    assert set(totals["failures_by_checker"]) <= {"convergence", "linearizable"}, totals
    failing = next(run for run in record["runs"] if run["verdict"] == "invalid")
    assert failing["reproduced"] is True and failing["mode"] == "mrsc"

    # The replay command, with the same planted bug: the same first violation; without it, the seed is valid.
    words = shlex.split(failing["replay"])
    seed, duration = int(words[words.index("--seed") + 1]), float(words[words.index("--duration") + 1])
    topology, workload = load_experiment(Path(words[2]))
    replay = run_simulated(topology, workload, None, seed, duration, None, hooks=bug)
    assert replay.first_violation == failing["first_violation"]
    assert run_simulated(topology, workload, None, seed, duration, None).exit_code == 0

    result = shrink(tmp_path / "sweep" / "failures" / f"mrsc-seed-{seed}", hooks=bug, max_runs=40)
    assert result["still_fails"], result
    before, after = result["before"], result["after"]
    assert after["operations"] < before["operations"], (before, after)
    words = shlex.split(result["replay"])
    shrunk, shrunk_workload = load_experiment(Path(words[2]))
    again = run_simulated(shrunk, shrunk_workload, None, seed, float(words[words.index("--duration") + 1]), None,
                          hooks=bug)  # fmt: skip
    assert again.verdicts[result["checker"]] == "invalid"


def test_a_sweeps_log_records_go_to_its_runs_not_through_the_progress_bar(tmp_path, small, capfd):
    """Under a clock-skew schedule the regions log that remote HLC stamps are ahead of their clocks. In a sweep
    (worker processes, sharing the terminal with the progress bar) those records are kept with each run's verdict,
    counted in the totals, and written to run.log beside a kept failure's results, never printed."""
    from globaltables.cli.main import main

    schedule = ROOT / "chaos" / "clock-skew.yaml"
    code = main(["sweep", str(small), "--seeds", "1-2", "--chaos", str(schedule), "--duration", "8", "--jobs", "2",
                 "--out", str(tmp_path / "sweep")])  # fmt: skip
    captured = capfd.readouterr()
    assert code == 0, captured.out + captured.err
    assert "remote HLC stamp" not in captured.err + captured.out
    assert "2/2" in captured.err  # the progress bar
    record = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    logs = [run["log"] for run in record["runs"]]
    assert all(log["records"] > 0 and log["levels"].get("WARNING") for log in logs), logs
    assert all("remote HLC stamp" in log["first"][0] and len(log["first"]) <= log["records"] for log in logs), logs
    assert record["totals"]["log_records"] == sum(log["records"] for log in logs)
    assert f"log records: {record['totals']['log_records']} from 2 runs" in captured.out

    # A run kept on disk (as a failing seed replayed here is) writes every record beside its results.
    from globaltables.experiment.sweep import run_seed

    task = plan_sweep(small, "1", chaos_path=schedule, duration_s=8).tasks()[0]
    kept = run_seed(task, out_dir=tmp_path / "kept")
    lines = (tmp_path / "kept" / "run" / "run.log").read_text().splitlines()
    assert len(lines) == kept["log"]["records"] and lines[: len(kept["log"]["first"])] == kept["log"]["first"]
    assert kept["log"] == logs[0]  # the same seed logs the same records, here as in a worker
