"""Which checkers judge a run (runner.run_checkers), and that the causal one does under the HLC: a normal MREC run
passes it, and a write that causally followed another yet lost (wall clocks, a region 2 s behind) fails it, in the
run's checkers and in `globaltables check --results`. The history is the one tests/chaos/test_chaos_sim.py builds
for the causal checker on its own, on the simulator (virtual time, seeded)."""

from __future__ import annotations

import json
from pathlib import Path

from globaltables.chaos.history import History
from globaltables.chaos.target import SimTarget
from globaltables.experiment.runner import check_results_dir, run_checkers, write_final_states
from globaltables.sim.cluster import SimCluster

REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-1")
TABLE = "Items"
KEY = '{"pk":{"S":"c"}}'


def item(key: str, value: str) -> dict:
    return {"pk": {"S": key}, "value": {"S": value}}


def causal_pair(conflict_clock: str) -> tuple[History, dict]:
    """eu-west-1 (clock 2 s behind) reads us-east-1's write, then overwrites it: the overwrite causally follows."""
    cluster = SimCluster(REGIONS, 2, journal=False, conflict_clock=conflict_clock)
    target = SimTarget(cluster)
    target.set_clock("eu-west-1", -2000.0, 0.0, 0.0, None)
    cluster.put("us-east-1", TABLE, item("c", "first"))
    cluster.run_for(1.0)
    assert cluster.get("eu-west-1", TABLE, {"pk": {"S": "c"}})[0] == "ok"
    cluster.put("eu-west-1", TABLE, item("c", "second"))
    target.heal_all()
    cluster.run_until_quiescent()
    return cluster.history, cluster.final_states()


def test_an_mrec_run_under_the_hlc_is_also_judged_for_causality_and_passes():
    history, final = causal_pair("hlc")
    checks = run_checkers("mrec", history, final, "hlc")
    assert [check.name for check in checks] == ["lww", "causal", "convergence"]
    assert all(check.passed for check in checks), [str(check) for check in checks]
    assert checks[1].detail == "1 causally ordered write pairs all in version order"  # found, not skipped


def test_the_runs_causal_check_fails_when_a_causally_later_write_lost():
    history, final = causal_pair("wall")  # what the HLC prevents: the later write's stamp is 2 s behind
    checks = {check.name: check for check in run_checkers("mrec", history, final, "hlc")}
    assert not checks["causal"].passed
    assert checks["causal"].offending_keys() == [(TABLE, KEY)]
    # A wall-clock run is judged by what wall clocks promise: last writer by the clocks, not causality.
    assert [check.name for check in run_checkers("mrec", history, final, "wall")] == ["lww", "convergence"]
    # MRSC runs are judged by linearizability, which implies it.
    assert "causal" not in [check.name for check in run_checkers("mrsc", history, final, "hlc")]


def test_check_results_reruns_the_causal_check_of_an_hlc_run(tmp_path: Path, capsys):
    history, final = causal_pair("wall")
    history.write_jsonl(tmp_path / "history.jsonl")
    write_final_states(tmp_path / "final_state.jsonl", final)
    (tmp_path / "results.json").write_text(json.dumps({"mode": "mrec", "conflict_clock": "hlc"}))
    assert check_results_dir(tmp_path) == 1
    assert "causal: FAIL" in capsys.readouterr().out
    # Results that do not name their clock (written before causal was a run checker) are judged as they were.
    (tmp_path / "results.json").write_text(json.dumps({"mode": "mrec"}))
    assert check_results_dir(tmp_path) == 0
    assert "causal" not in capsys.readouterr().out
