"""The `workload:` section: bad files refused with the file, the field and what is allowed; the seeded generators
draw what the distribution says; every shipped topology and chaos schedule passes `globaltables validate`."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest

from globaltables.cli.main import main as cli_main
from globaltables.experiment.topology import parse_topology
from globaltables.experiment.workload import KeyChooser, OperationChooser, parse_workload
from globaltables.runtime.rng import Rng
from globaltables.topology.load import TopologyError

ROOT = Path(__file__).resolve().parents[2]
FILE = "topologies/w.yaml"

BASE = """
name: w
regions:
  - name: us-east-1
  - name: eu-west-1
  - name: ap-southeast-1
tables:
  - TableName: Orders
    AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
    KeySchema: [{AttributeName: id, KeyType: HASH}]
"""


def topology(workload: str, base: str = BASE):
    return parse_topology(base + textwrap.dedent(workload), FILE)


def refused(workload: str, base: str = BASE) -> str:
    with pytest.raises(TopologyError) as caught:
        topology(workload, base)
    return "\n".join(caught.value.errors)


def test_the_issue_example_is_valid_and_parsed_with_defaults():
    loaded = topology("""
        workload:
          table: Orders
          duration_s: 20
          rate_per_region: 200
          keys: 1000
          distribution: uniform
          item_bytes: 200
          mix: {put: 0.4, update: 0.1, get: 0.4, strong_get: 0.1}
        """)
    workload = parse_workload(loaded.workload, [r.name for r in loaded.replicas])
    assert workload.table == "Orders" and workload.rate_per_region == 200 and workload.keys == 1000
    assert workload.operations == ("put", "update", "get", "strong_get")
    assert workload.regions == ("us-east-1", "eu-west-1", "ap-southeast-1")
    assert abs(sum(workload.mix.values()) - 1) < 1e-9


def test_unknown_keys_are_refused_with_the_allowed_ones():
    message = refused("workload: {table: Orders, rate: 10}\n")
    assert f"{FILE}: workload.rate: unknown key; allowed keys are table, duration_s" in message
    message = refused("workload: {table: Orders, mix: {put: 1, scan: 1}}\n")
    assert f"{FILE}: workload.mix.scan: unknown operation; allowed: put, update, conditional_update, get" in message


def test_wrong_types_are_refused_naming_the_field():
    message = refused("workload: {table: Orders, duration_s: ten, keys: 1.5, mix: {put: yes}}\n")
    assert f"{FILE}: workload.duration_s: expected a number, got a string" in message
    assert f"{FILE}: workload.keys: expected an integer, got 1.5" in message
    assert f"{FILE}: workload.mix.put: expected a weight (a number), got a boolean" in message
    message = refused("workload: {table: Orders, distribution: pareto}\n")
    assert f"{FILE}: workload.distribution: 'pareto' is not allowed; use one of uniform, zipf, hotkey" in message
    message = refused("workload: {table: Orders, rate_per_region: 0}\n")
    assert f"{FILE}: workload.rate_per_region: must be greater than 0, got 0" in message
    message = refused("workload: {table: Orders, distribution: uniform, zipf_s: 1.2}\n")
    assert f"{FILE}: workload.zipf_s: only applies to distribution: zipf" in message
    assert "expected a mapping, got a list" in refused("workload: [1, 2]\n")


def test_a_workload_naming_a_missing_table_is_refused_with_the_declared_ones():
    message = refused("workload: {table: Customers}\n")
    assert f"{FILE}: workload.table: no table 'Customers' in tables; declared tables: Orders" in message
    assert f"{FILE}: workload.table: is required" in refused("workload: {keys: 10}\n")


def test_load_regions_must_be_replicas():
    message = refused("workload: {table: Orders, regions: [us-east-1, eu-west-9]}\n")
    assert f"{FILE}: workload.regions[1]: 'eu-west-9' is not a replica of this topology" in message


def test_an_mrsc_topology_with_four_regions_is_refused():
    base = BASE.replace("name: w\n", "name: w\nmode: mrsc\n").replace(
        "  - name: ap-southeast-1\n", "  - name: ap-southeast-1\n  - name: us-west-2\n"
    )
    message = refused("workload: {table: Orders}\n", base)
    assert f"{FILE}: regions: mode mrsc needs exactly three regions" in message


def test_generators_follow_their_distribution_and_replay_from_the_seed():
    loaded = topology("workload: {table: Orders, keys: 100, distribution: hotkey, hot_fraction: 0.5}\n")
    workload = parse_workload(loaded.workload, ["us-east-1"])
    replay = KeyChooser(workload, Rng(7).fork("k"))
    chooser = KeyChooser(workload, Rng(7).fork("k"))
    drawn = [chooser.next() for _ in range(4000)]
    assert drawn[:50] == [replay.next() for _ in range(50)]  # same seed, same stream
    assert 0.45 < drawn.count(0) / len(drawn) < 0.56
    zipf = parse_workload(
        topology("workload: {table: Orders, keys: 100, distribution: zipf, zipf_s: 1.2}\n").workload, ["a"]
    )
    zipf_keys = KeyChooser(zipf, Rng(1))
    counts = Counter(zipf_keys.next() for _ in range(5000))
    assert counts[0] > counts[1] > counts[10] and max(counts) < 100
    ops = OperationChooser(parse_workload({"table": "Orders", "mix": {"put": 3, "get": 1}}, ["a"]), Rng(3))
    share = Counter(ops.next() for _ in range(4000))["put"] / 4000
    assert 0.70 < share < 0.80


def test_every_shipped_topology_and_chaos_schedule_passes_validate(capsys):
    files = sorted(str(p) for p in (ROOT / "topologies").glob("*.yaml")) + sorted(
        str(p) for p in (ROOT / "chaos").glob("*.yaml")
    )
    assert cli_main(["validate", *files]) == 0, capsys.readouterr().err
    assert "valid" in capsys.readouterr().out


def test_validate_names_the_file_and_field_of_a_bad_workload(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE + "workload: {table: Orders, mix: {put: -1}}\n")
    assert cli_main(["validate", str(bad)]) == 1
    assert f"{bad}: workload.mix.put: must be at least 0, got -1" in capsys.readouterr().err


def test_write_modes_are_validated_and_route_each_write():
    message = refused("workload: {table: Orders, write_mode: nearest}\n")
    assert f"{FILE}: workload.write_mode: 'nearest' is not allowed; use one of any, single, home" in message
    message = refused("workload: {table: Orders, write_region: us-east-1}\n")
    assert f"{FILE}: workload.write_region: only applies to write_mode: single" in message
    message = refused("workload: {table: Orders, write_mode: single, write_region: eu-west-9}\n")
    assert f"{FILE}: workload.write_region: 'eu-west-9' is not a replica of this topology" in message
    replicas = ["us-east-1", "eu-west-1", "ap-southeast-1"]
    single = parse_workload({"table": "Orders", "write_mode": "single", "write_region": "eu-west-1"}, replicas)
    assert {single.write_target(region, key) for region in replicas for key in range(9)} == {"eu-west-1"}
    home = parse_workload({"table": "Orders", "write_mode": "home"}, replicas)
    assert [home.write_target("us-east-1", key) for key in range(4)] == [*replicas, "us-east-1"]
    assert parse_workload({"table": "Orders"}, replicas).write_target("ap-southeast-1", 3) == "ap-southeast-1"


def test_a_list_append_mix_takes_only_appends_and_reads():
    message = refused("workload: {table: Orders, mix: {append: 0.5, put: 0.2, get: 0.3}}\n")
    assert f"{FILE}: workload.mix.append: a list-append workload takes only append, get, strong_get; remove put" in message
    loaded = topology("workload: {table: Orders, mix: {append: 0.6, get: 0.3, strong_get: 0.1}}\n")
    assert parse_workload(loaded.workload, ["us-east-1"]).operations == ("get", "strong_get", "append")


def test_contributor_insights_is_on_unless_the_workload_turns_it_off():
    assert parse_workload({"table": "Orders"}, ["a"]).contributor_insights is True
    off = topology("workload: {table: Orders, contributor_insights: false}\n")
    assert parse_workload(off.workload, ["us-east-1"]).contributor_insights is False
    message = refused("workload: {table: Orders, contributor_insights: maybe}\n")
    assert f"{FILE}: workload.contributor_insights: expected true or false, got a string" in message
