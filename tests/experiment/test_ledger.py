"""The lost-write ledger: built from the regions' apply decisions and the history, it agrees with the receivers' own
counters on the hot-key experiment, is empty when one region takes every write, and blames a skewed clock under
`conflict_clock: wall`. Unit tests pin its causes on hand-made histories."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import orjson
import pytest

from globaltables.chaos.history import History, key_id
from globaltables.experiment.ledger import Ledger, read_decisions
from globaltables.experiment.results import SCHEMA
from globaltables.experiment.runner import read_final_states, run_experiment
from globaltables.replication.hlc import Version
from globaltables.runtime.clock import ManualClock

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(240)
KEY = {"id": {"S": "k1"}}

# ------------------------------------------------------------------------------------------- hand-made runs


def _write(history: History, clock: ManualClock, process: str, region: str, value: str, version: str,
           took: float = 0.001) -> None:  # fmt: skip
    invocation = history.invoke(process, region, "put", "T", KEY, value)
    clock.advance(took)
    history.ok(invocation, version=version)


def _decision(at: float, origin: str, version: str, lost_to: str | None) -> dict:
    return {"at_mono": at, "origin": origin, "table": "T", "key": KEY, "version": version, "lost_to": lost_to}


def test_a_concurrent_loss_names_the_winner_and_when_each_region_learnt_of_both():
    clock = ManualClock(monotonic=10.0)
    history = History(clock)
    _write(history, clock, "a/1", "a", "a:1", "M100.A0/a")  # answered at 10.001
    _write(history, clock, "b/1", "b", "b:1", "M101.A0/b")  # sent at 10.001, before b heard of a:1
    decisions = {
        "a": [_decision(10.05, "b", "M101.A0/b", None)],
        "b": [_decision(10.04, "a", "M100.A0/a", "M101.A0/b")],
    }
    ledger = Ledger(history, decisions, origin_mono=10.0)
    (entry,) = ledger.entries
    assert entry["region"] == "b" and entry["origin"] == "a" and entry["value"] == "a:1"
    assert entry["winner"] == {"version": "M101.A0/b", "origin": "b", "value": "b:1", "invoked_s": 0.001,
                               "acknowledged_s": 0.002}  # fmt: skip
    assert entry["cause"] == "concurrent" and entry["first_read_s"] is None  # nobody ever read a:1
    assert entry["learnt"] == {"a": {"write_s": 0.001, "winner_s": 0.05}, "b": {"write_s": 0.04, "winner_s": 0.002}}
    summary = ledger.summary()
    assert summary["count"] == summary["replicated"] == summary["never_read"] == 1 and summary["by_pair"] == {"a->b": 1}
    assert summary["by_cause"] == {"skew": 0, "concurrent": 1, "superseded": 0}


def test_a_winner_answered_before_the_loser_was_sent_is_a_loss_to_skew():
    clock = ManualClock(monotonic=10.0)
    history = History(clock)
    _write(history, clock, "b/1", "b", "b:1", "M900.A0/b")  # b's clock is far ahead
    clock.advance(0.01)
    _write(history, clock, "a/1", "a", "a:1", "M200.A0/a")  # sent after b:1 was answered, yet older by the clock
    decisions = {"b": [_decision(10.05, "a", "M200.A0/a", "M900.A0/b")]}
    (entry,) = Ledger(history, decisions, origin_mono=10.0).entries
    assert entry["cause"] == "skew"


def test_a_winner_written_after_its_region_held_the_loser_superseded_it():
    clock = ManualClock(monotonic=10.0)
    history = History(clock)
    invocation = history.invoke("a/1", "a", "put", "T", KEY, "a:1")
    clock.advance(0.001)
    history.ok(invocation, version="M100.A0/a")
    winner = history.invoke("b/1", "b", "put", "T", KEY, "b:1")  # sent at 10.001 ...
    clock.advance(0.1)
    history.ok(winner, version="M101.A0/b")
    decisions = {
        "b": [_decision(10.0005, "a", "M100.A0/a", None)],  # ... after b had applied a:1
        "c": [_decision(10.2, "b", "M101.A0/b", None), _decision(10.3, "a", "M100.A0/a", "M101.A0/b")],
    }
    read = history.invoke("c/1", "c", "get", "T", KEY)
    clock.advance(0.001)
    history.ok(read, value="a:1")
    (entry,) = Ledger(history, decisions, origin_mono=10.0).entries
    assert entry["region"] == "c" and entry["cause"] == "superseded"
    assert entry["first_read_s"] == 0.102  # a client had read it in c before c discarded it


def test_unanswered_writes_are_counted_apart_and_applied_records_make_no_entry():
    clock = ManualClock(monotonic=10.0)
    history = History(clock)
    invocation = history.invoke("a/1", "a", "put", "T", KEY, "a:1")
    history.info(invocation, "Timeout")
    _write(history, clock, "b/1", "b", "b:1", "M101.A0/b")
    decisions = {"b": [_decision(10.1, "a", "M100.A0/a", "M101.A0/b")], "a": [_decision(10.1, "b", "M101.A0/b", None)]}
    ledger = Ledger(history, decisions)
    assert ledger.entries == [] and ledger.unacknowledged == 1


# ---------------------------------------------------------------------------------------------- real runs


def _entries(out: Path) -> list[dict]:
    return [orjson.loads(line) for line in (out / "lost_writes.jsonl").read_bytes().splitlines() if line.strip()]


async def test_on_the_hot_key_experiment_the_ledger_matches_the_lww_overwrite_count(tmp_path):
    out = tmp_path / "hot"
    outcome = await run_experiment(ROOT / "topologies" / "hot-key.yaml", out_dir=out, duration_s=3.0, seed=5,
                                   make_plots=False)  # fmt: skip
    assert outcome.exit_code == 0, outcome.reason or outcome.results["checks"]
    results = outcome.results
    jsonschema.validate(results, SCHEMA)
    lost, conflicts = results["lost_writes"], results["conflicts"]
    assert lost["count"] > 0
    # The receivers' own count of replicated records that lost LWW is the ledger's count (HLC: none at origin).
    assert lost["at_origin"] == 0
    assert lost["count"] + lost["unacknowledged"] == conflicts["lww_overwrites"]
    entries = _entries(out)
    assert len(entries) == lost["count"] and sum(lost["by_pair"].values()) == lost["count"]
    states = read_final_states(out / "final_state.jsonl")
    for entry in entries:
        assert entry["winner"]["version"] > entry["version"] and entry["region"] != entry["origin"]
        assert set(entry["learnt"]) == set(results["regions"])
        for region, tables in states.items():  # the discarded value is held nowhere at the end
            item = tables[entry["table"]].get(entry["key"])
            assert item is None or item["value"]["S"] != entry["value"], (region, entry)
    # The decisions file rebuilds the same ledger offline.
    rebuilt = Ledger(History.read_jsonl(out / "history.jsonl"), read_decisions(out / "apply_decisions.jsonl"),
                     origin_mono=results["measure_from_mono"])  # fmt: skip
    assert rebuilt.summary() == lost


SINGLE_WRITER = (ROOT / "topologies" / "hot-key.yaml").read_text().replace(
    "  item_bytes: 100\n", "  item_bytes: 100\n  write_mode: single\n  write_region: eu-west-1\n"
)


async def test_a_single_writer_run_loses_nothing(tmp_path):
    topology = tmp_path / "hot-key-single.yaml"
    topology.write_text(SINGLE_WRITER)
    outcome = await run_experiment(topology, out_dir=tmp_path / "single", duration_s=2.5, seed=5, make_plots=False)
    assert outcome.exit_code == 0, outcome.reason or outcome.results["checks"]
    results = outcome.results
    assert results["workload"]["write_mode"] == "single"
    history = History.read_jsonl(tmp_path / "single" / "history.jsonl")
    writes = [op for op in history if op.is_write and op.type == "ok" and not key_id(op.key).startswith('{"id":{"S":"__lag')]
    assert writes and {op.region for op in writes} == {"eu-west-1"}  # every write went to the one write region
    assert results["lost_writes"]["count"] == 0 and _entries(tmp_path / "single") == []
    assert results["conflicts"]["lww_overwrites"] == 0


SKEWED_WALL = """
name: hot-key-skewed-wall
mode: mrec
conflict_clock: wall
regions:
  - {name: us-east-1, clock_offset_ms: 400}
  - {name: eu-west-1}
  - {name: ap-southeast-1}
links: {default: {latency_ms: 30, jitter_ms: 1}}
tables:
  - TableName: Counters
    AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
    KeySchema: [{AttributeName: id, KeyType: HASH}]
workload: {table: Counters, duration_s: 3, rate_per_region: 50, keys: 20, distribution: hotkey, hot_fraction: 0.6,
           item_bytes: 50, mix: {put: 0.6, get: 0.4}}
"""


async def test_under_the_wall_clock_a_region_ahead_wins_and_the_ledger_blames_the_skew(tmp_path):
    topology = tmp_path / "skewed.yaml"
    topology.write_text(SKEWED_WALL)
    outcome = await run_experiment(topology, out_dir=tmp_path / "skew", duration_s=3.0, seed=2, make_plots=False)
    assert outcome.results is not None, outcome.reason
    lost = outcome.results["lost_writes"]
    entries = _entries(tmp_path / "skew")
    skewed = [entry for entry in entries if entry["cause"] == "skew"]
    assert lost["by_cause"]["skew"] == len(skewed) > 0
    # Only the clock 400 ms ahead can beat a write sent after its own was answered (or, between unskewed clocks, a
    # tie inside one millisecond of the versions' physical part, broken by region name).
    assert any(entry["winner"]["origin"] == "us-east-1" for entry in skewed)
    for entry in skewed:
        if entry["winner"]["origin"] != "us-east-1":
            physical = {Version.parse(v).stamp.physical_ms for v in (entry["version"], entry["winner"]["version"])}
            assert len(physical) == 1, entry
    # Discarded on arrival: the winner was answered before the loser was sent (at its origin: stamped behind it).
    assert all(e["winner"]["acknowledged_s"] < e["invoked_s"] for e in skewed if e["region"] != e["origin"])
    # Writes stamped behind the skewed region's version are lost where they were made.
    assert lost["at_origin"] > 0 and all(e["cause"] == "skew" for e in entries if e["region"] == e["origin"])


async def test_compare_by_write_mode_shows_what_each_costs_on_one_topology(tmp_path):
    from globaltables.experiment.compare import compare

    code, document = await compare(ROOT / "topologies" / "hot-key.yaml", ["mrec"], chaos_path=None, seed=5,
                                   out_dir=tmp_path / "wm", duration_s=2.0, write_modes=["any", "single", "home"])  # fmt: skip
    modes = document["modes"]
    assert code == 0 and set(modes) == {"mrec-any", "mrec-single", "mrec-home"}, document
    assert {name: summary["write_mode"] for name, summary in modes.items()} == {
        "mrec-any": "any", "mrec-single": "single", "mrec-home": "home"}  # fmt: skip
    assert modes["mrec-any"]["lost_writes"]["count"] > 0
    for name in ("mrec-single", "mrec-home"):  # one writer region per item: nothing for LWW to throw away
        assert modes[name]["lost_writes"]["count"] == 0 and modes[name]["conflicts"]["lww_overwrites"] == 0
    assert "lost writes" in (tmp_path / "wm" / "compare.md").read_text()
    assert "chart-compare-costs" in (tmp_path / "wm" / "report.html").read_text()
