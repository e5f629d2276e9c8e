"""Three-valued verdicts end to end: `globaltables check --results DIR` exits 0 valid, 1 invalid, 2 unknown, and
the report says which, naming the keys it could not decide."""

from __future__ import annotations

import json

from globaltables.chaos.checkers.result import CheckResult, exit_status
from globaltables.chaos.history import History
from globaltables.cli.main import main
from globaltables.experiment.report import render_markdown
from globaltables.experiment.runner import check_summary


def racing_in_doubt_writes(values: int) -> History:
    """Two in-doubt writers per value, then reads of every value in turn and v0, v1, v0 again: the last read
    needs a third write of v0, which no order has. Few values: the search proves it; many: its budget runs out
    first (every subset of the in-doubt writes is a different state of the search)."""
    history = History()
    writes = [
        history.invoke(f"w{i}.{j}", "us-east-1", "put", "Orders", "k", f"v{i}") for i in range(values) for j in range(2)
    ]
    for i in [*range(values), 0, 1, 0]:
        read = history.invoke("reader", "us-east-2", "strong_get", "Orders", "k")
        history.ok(read, value=f"v{i}")
    for write in writes:
        history.info(write)
    return history


def results_dir(tmp_path, history: History):
    (tmp_path / "results.json").write_text(json.dumps({"mode": "mrsc"}))
    history.write_jsonl(tmp_path / "history.jsonl")
    lines = [{"region": r, "table": "Orders", "key": None, "item": None} for r in ("us-east-1", "us-east-2")]
    (tmp_path / "final_state.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return tmp_path


def test_an_undecidable_key_exits_2_never_1(tmp_path, capsys):
    directory = results_dir(tmp_path, racing_in_doubt_writes(10))
    assert main(["check", "--results", str(directory)]) == 2
    out = capsys.readouterr().out
    assert "linearizable: UNKNOWN" in out and "undecided: Orders[k]" in out, out


def test_a_provably_invalid_key_exits_1_and_explains_itself(tmp_path, capsys):
    directory = results_dir(tmp_path, racing_in_doubt_writes(3))
    assert main(["check", "--results", str(directory)]) == 1
    out = capsys.readouterr().out
    assert "linearizable: FAIL" in out and "no order of these" in out, out


def test_the_report_shows_each_verdict_and_the_undecided_keys():
    checks = [
        CheckResult("linearizable", False, "unknown: ...", verdict="unknown", undecided=["Orders[k]"]),
        CheckResult("convergence", True, "identical"),
    ]
    assert exit_status(checks) == 2
    assert exit_status([*checks, CheckResult("lww", False, "lost write")]) == 1
    assert exit_status(checks[1:]) == 0
    results = {
        "topology": "t", "mode": "mrsc", "seed": 1, "started_at": "now", "duration_s": 1.0, "chaos": None,
        "workload": {"warmup_s": 0, "rate_per_region": 1, "table": "Orders", "keys": 1, "distribution": "uniform",
                     "mix": {"put": 1.0}},
        "checks": [check_summary(check) for check in checks], "convergence_ms": [], "latency_ms": {},
        "throughput": {}, "outcomes": {}, "errors": {}, "replication_lag_ms": {}, "conflicts": {
            "replicated_write_conflicts": 0, "lww_overwrites": 0, "replicated_records": 0},
        "staleness": {}, "regions": [],
    }  # fmt: skip
    text = render_markdown(results, {})
    assert "CHECKS UNDECIDED" in text and "**unknown** (undecided: Orders[k])" in text, text[:600]
