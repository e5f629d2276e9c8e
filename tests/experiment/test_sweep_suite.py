"""`globaltables sweep DIR|FILE...`: one sweep per topology in the modes each can run, summed up; modes a topology
cannot run and files without a workload are listed, not counted as runs or failures."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from globaltables.experiment.sweep import SweepError
from globaltables.experiment.sweep_suite import plan_suite, run_suite, suite_status

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = ROOT / "topologies"

pytestmark = pytest.mark.timeout(300)


def _small_copy(source: Path, into: Path, **workload) -> Path:
    document = yaml.safe_load(source.read_text())
    document["workload"].update(warmup_s=0, rate_per_region=20, keys=10, lag_probe_interval_s=0, **workload)
    path = into / source.name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_the_shipped_topologies_plan_into_the_modes_each_can_run():
    sweeps, left_out = plan_suite([TOPOLOGIES], "1-3", modes="mrec,mrsc", nemesis="random")
    planned = {sweep.topology_path.name: sweep.modes for sweep in sweeps}
    with_workload = {p.name for p in TOPOLOGIES.glob("*.yaml") if "workload" in yaml.safe_load(p.read_text())}
    assert set(planned) == with_workload
    assert planned["quickstart.yaml"] == ["mrec", "mrsc"] and planned["mrsc-witness.yaml"] == ["mrsc"]
    assert planned["world-five-regions.yaml"] == ["mrec"]
    reasons = {(Path(entry["topology"]).name, entry["mode"]): entry["reason"] for entry in left_out}
    assert "witness" in reasons[("mrsc-witness.yaml", "mrec")]
    assert "exactly three regions" in reasons[("world-five-regions.yaml", "mrsc")]
    assert "mrsc-witness.yaml" in reasons[("mrsc-witness.yaml", "mrec")]  # the file, not a scratch copy
    for name in set(p.name for p in TOPOLOGIES.glob("*.yaml")) - with_workload:
        assert reasons[(name, "")] == "no workload: section"
    assert all(sweep.seeds == [1, 2, 3] for sweep in sweeps)


def test_a_suite_runs_every_sweep_and_sums_them(tmp_path):
    into = tmp_path / "topologies"
    into.mkdir()
    _small_copy(TOPOLOGIES / "quickstart.yaml", into)
    _small_copy(TOPOLOGIES / "mrsc-witness.yaml", into)
    # five regions and a sparse GSI (items without its key attribute): the final reads key items by the table's key
    _small_copy(TOPOLOGIES / "world-five-regions.yaml", into)
    sweeps, left_out = plan_suite([into], "1-2", modes="mrec,mrsc", nemesis="random", duration_s=0.5)
    done = []
    with ThreadPoolExecutor(2) as pool:
        suite = run_suite(sweeps, left_out, tmp_path / "out", pool, seeds="1-2", on_done=done.append)
    assert len(done) == suite["totals"]["runs"] == 2 * (2 + 1 + 1)
    assert suite["totals"]["invalid"] == suite["totals"]["unknown"] == 0, suite["totals"]
    assert suite_status(suite) == 0
    saved = json.loads((tmp_path / "out" / "suite.json").read_text())
    assert saved["totals"] == suite["totals"]
    for entry in saved["sweeps"]:
        record = json.loads((tmp_path / "out" / entry["dir"] / "sweep.json").read_text())
        assert record["totals"] == entry["totals"] and record["totals"]["operations"] > 0
        assert sum(m["runs"] for m in entry["by_mode"].values()) == record["totals"]["runs"]
    assert saved["totals"]["operations"] == sum(e["totals"]["operations"] for e in saved["sweeps"])
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| world-five-regions.yaml | mrec | 2 | 0 | 0 |" in summary
    assert "mrsc-witness.yaml mrec:" in summary and "Not swept" in summary


def test_a_suite_refuses_bad_paths_and_a_directory_with_nothing_to_sweep(tmp_path):
    with pytest.raises(SweepError, match="no such topology file or directory"):
        plan_suite([tmp_path / "missing"], "1")
    with pytest.raises(SweepError, match="no \\*.yaml topology files"):
        plan_suite([tmp_path], "1")
    (tmp_path / "bare.yaml").write_text((TOPOLOGIES / "mrec-test.yaml").read_text())
    with pytest.raises(SweepError, match="bare.yaml: no workload"):
        plan_suite([tmp_path], "1")
    (tmp_path / "broken.yaml").write_text("name: x\nmode: sideways\nregions: []\n")
    with pytest.raises(SweepError, match="broken.yaml"):
        plan_suite([tmp_path], "1")


def test_the_cli_sweeps_several_files_into_one_summary(tmp_path, capsys):
    from globaltables.cli.main import main

    first = _small_copy(TOPOLOGIES / "quickstart.yaml", tmp_path)
    second = _small_copy(TOPOLOGIES / "mrsc-witness.yaml", tmp_path)
    code = main(["sweep", str(first), str(second), "--seeds", "1", "--modes", "mrec,mrsc", "--duration", "0.5",
                 "--jobs", "1", "--out", str(tmp_path / "out")])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert "# Sweep of 2 topologies" in captured.out and "runs: 3 (3 valid, 0 invalid, 0 unknown)" in captured.out
    assert "3/3" in captured.err
