"""Topology files: the shipped ones load; bad ones are refused with the file, the field and what is allowed; the
region graph answers latency, reachability and partition questions.

A topology is the first thing a user writes, so every refusal must say exactly where the mistake is.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from globaltables.cli.main import main as cli_main
from globaltables.experiment.topology import load_topology, parse_topology
from globaltables.topology.load import TopologyError

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = sorted((ROOT / "topologies").glob("*.yaml"))
FILE = "topologies/x.yaml"

MINIMAL = """
name: t
regions:
  - name: us-east-1
  - name: eu-west-1
  - name: ap-southeast-1
"""

ORDERS = """
tables:
  - TableName: Orders
    AttributeDefinitions: [{AttributeName: customerId, AttributeType: S}, {AttributeName: sk, AttributeType: S}]
    KeySchema: [{AttributeName: customerId, KeyType: HASH}, {AttributeName: sk, KeyType: RANGE}]
"""


def refused(text: str) -> list[str]:
    with pytest.raises(TopologyError) as caught:
        parse_topology(textwrap.dedent(text), FILE)
    assert all(line.startswith(f"{FILE}: ") for line in caught.value.errors), caught.value.errors
    return list(caught.value.errors)


# --------------------------------------------------------------------------------------------- shipped files


def test_the_shipped_topologies_exist():
    names = {path.name for path in TOPOLOGIES}
    assert {"quickstart.yaml", "mrsc-three-replicas.yaml", "mrsc-witness.yaml", "world-five-regions.yaml"} <= names


@pytest.mark.parametrize("path", TOPOLOGIES, ids=lambda path: path.name)
def test_each_shipped_topology_loads_without_warnings(path):
    topology = load_topology(path)
    assert topology.name and topology.regions and topology.tables
    assert topology.warnings == ()
    graph = topology.graph()
    assert graph.number_of_edges() == len(topology.regions) * (len(topology.regions) - 1)


def test_quickstart_is_the_issue_example():
    topology = load_topology(ROOT / "topologies" / "quickstart.yaml")
    assert topology.mode == "mrec" and topology.conflict_clock == "hlc"
    assert topology.region_names == ("us-east-1", "eu-west-1", "ap-southeast-1")
    assert [region.role for region in topology.regions] == ["replica"] * 3
    matrix = topology.latency_matrix()
    assert matrix["us-east-1"]["eu-west-1"] == 40
    assert matrix["us-east-1"]["ap-southeast-1"] == matrix["ap-southeast-1"]["us-east-1"] == 110
    assert topology.link("ap-southeast-1", "us-east-1").jitter_ms == 5
    (orders,) = topology.tables
    request = orders.request()
    assert request["TableName"] == "Orders" and request["BillingMode"] == "PAY_PER_REQUEST"
    request["TableName"] = "changed"  # a copy: the topology stays as loaded
    assert orders.request()["TableName"] == "Orders"


def test_the_witness_topology_has_two_replicas_and_a_witness():
    topology = load_topology(ROOT / "topologies" / "mrsc-witness.yaml")
    assert topology.mode == "mrsc"
    assert [region.role for region in topology.regions].count("witness") == 1
    assert len(topology.replicas) == 2


def test_defaults_and_optional_fields():
    topology = parse_topology(
        MINIMAL
        + """
conflict_clock: wall
max_clock_offset_ms: 250
ttl_sweep_interval_s: 0.5
secret_file: secrets/shared
"""
        + ORDERS
        + "workload: {table: Orders, keys: 10}\n",
        FILE,
    )
    assert topology.conflict_clock == "wall" and topology.max_clock_offset_ms == 250
    assert topology.ttl_sweep_interval_s == 0.5
    assert topology.secret_file == Path("topologies/secrets/shared")  # relative to the topology file
    assert topology.workload == {"table": "Orders", "keys": 10}  # its schema: experiment/workload.py
    assert topology.latency_matrix()["us-east-1"]["eu-west-1"] == 0  # no links section: no delay
    region = topology.region("eu-west-1")
    assert (region.host, region.port, region.role, region.clock_offset_ms) == ("127.0.0.1", None, "replica", 0)


# ----------------------------------------------------------------------------------------------- refusals


def test_unknown_keys_are_refused_with_the_allowed_ones():
    errors = refused(MINIMAL + "regoins: []\nlinks: {default: {latency_ms: 1, jiter_ms: 2}}\n")
    assert errors[0].startswith(f"{FILE}: regoins: unknown key; allowed keys are name, mode, regions, links")
    assert errors[1].startswith(f"{FILE}: links.default.jiter_ms: unknown key; allowed keys are latency_ms, jitter_ms")
    errors = refused("name: t\nregions: [{name: us-east-1, zone: a}]\n")
    assert errors == [
        f"{FILE}: regions[0].zone: unknown key; allowed keys are name, host, advertise, bind, port, endpoint, role, "
        "clock_offset_ms, capacity"
    ]


def test_unknown_table_keys_are_refused_so_a_typo_cannot_drop_an_index():
    errors = refused(MINIMAL + ORDERS + "    GlobalSecondaryIndex: []\n")
    assert len(errors) == 1
    assert errors[0].startswith(f"{FILE}: tables[0].GlobalSecondaryIndex: unknown key; allowed keys are ")
    assert "GlobalSecondaryIndexes" in errors[0]


def test_wrong_types_name_the_field_and_the_expected_type():
    errors = refused(
        """
        name: [t]
        mode: eventual
        regions:
          - {name: us-east-1, port: "80", clock_offset_ms: fast}
          - {name: eu-west-1, port: 70000}
        links: {default: {latency_ms: true}}
        conflict_clock: lamport
        max_clock_offset_ms: "500"
        """
    )
    assert errors == [
        f"{FILE}: name: expected a non-empty string, got a list",
        f"{FILE}: mode: 'eventual' is not allowed; use one of mrec, mrsc",
        f"{FILE}: regions[0].port: expected a port number 0..65535 (0 picks a free port), got '80'",
        f"{FILE}: regions[0].clock_offset_ms: expected a number, got a string",
        f"{FILE}: regions[1].port: expected a port number 0..65535 (0 picks a free port), got 70000",
        f"{FILE}: links.default.latency_ms: expected a number, got a boolean",
        f"{FILE}: conflict_clock: 'lamport' is not allowed; use one of hlc, wall",
        f"{FILE}: max_clock_offset_ms: expected a number, got a string",
    ]


def test_missing_required_fields_and_a_non_mapping_document():
    assert refused("mode: mrec\n") == [f"{FILE}: name: is required", f"{FILE}: regions: is required"]
    assert refused("- just a list\n") == [f"{FILE}: expected a mapping, got a list"]
    assert refused("name: t\nregions: []\n") == [f"{FILE}: regions: must list at least one entry"]


def test_witness_is_refused_under_mrec():
    errors = refused(MINIMAL.replace("- name: ap-southeast-1", "- {name: ap-southeast-1, role: witness}"))
    assert errors == [f"{FILE}: regions[2].role: 'witness' is only allowed when mode is mrsc"]


def test_mrsc_needs_exactly_three_regions_and_at_most_one_witness():
    four = """
        name: t
        mode: mrsc
        regions: [{name: us-east-1}, {name: us-east-2}, {name: us-west-2}, {name: us-west-1}]
        """
    (error,) = refused(four)
    assert error.startswith(f"{FILE}: regions: mode mrsc needs exactly three regions")
    assert error.endswith("got 4")
    two_witnesses = """
        name: t
        mode: mrsc
        regions: [{name: us-east-1}, {name: us-east-2, role: witness}, {name: us-west-2, role: witness}]
        """
    (error,) = refused(two_witnesses)
    assert "at most one witness" in error and "us-east-2, us-west-2" in error


def test_mrsc_across_region_sets_loads_with_a_warning():
    topology = parse_topology(
        "name: t\nmode: mrsc\nregions: [{name: us-east-1}, {name: us-east-2}, {name: eu-west-1, role: witness}]\n",
        FILE,
    )
    (warning,) = topology.warnings
    assert warning.startswith(f"{FILE}: regions: an MRSC table cannot span DynamoDB region sets")
    assert "US: us-east-1, us-east-2; EU: eu-west-1" in warning


def test_duplicate_and_malformed_region_names_are_refused():
    errors = refused("name: t\nregions: [{name: us-east-1}, {name: us-east-1}, {name: ''}, {name: Virginia}]\n")
    assert errors == [
        f"{FILE}: regions[1].name: duplicate region 'us-east-1' (already regions[0])",
        f"{FILE}: regions[2].name: expected a non-empty string, got an empty string",
        f"{FILE}: regions[3].name: 'Virginia' does not look like an AWS region name such as us-east-1",
    ]


def test_overrides_naming_unknown_regions_or_negative_latency_are_refused():
    errors = refused(
        MINIMAL
        + """
links:
  default: {latency_ms: -1}
  overrides:
    - {from: us-east-1, to: us-west-2, latency_ms: 10}
    - {from: eu-west-1, to: us-east-1, latency_ms: 10, jitter_ms: -2}
    - {from: eu-west-1, to: eu-west-1, latency_ms: 10}
"""
    )
    assert errors == [
        f"{FILE}: links.default.latency_ms: must be at least 0, got -1",
        f"{FILE}: links.overrides[0].to: unknown region 'us-west-2'; regions are ap-southeast-1, eu-west-1, us-east-1",
        f"{FILE}: links.overrides[1].jitter_ms: must be at least 0, got -2",
        f"{FILE}: links.overrides[2]: 'from' and 'to' are both 'eu-west-1'; a link joins two different regions",
    ]


def test_two_overrides_of_one_direction_are_refused():
    errors = refused(
        MINIMAL
        + """
links:
  overrides:
    - {from: us-east-1, to: eu-west-1, latency_ms: 10, bidirectional: true}
    - {from: eu-west-1, to: us-east-1, latency_ms: 20}
"""
    )
    assert errors == [
        f"{FILE}: links.overrides[1]: the link eu-west-1 -> us-east-1 is already set by links.overrides[0]"
    ]


def test_tables_are_checked_with_create_tables_own_rules():
    missing = refused(MINIMAL + "tables: [{TableName: Orders}]\n")
    assert missing == [
        f"{FILE}: tables[0].KeySchema: is required",
        f"{FILE}: tables[0].AttributeDefinitions: is required",
    ]
    wrong_type = refused(MINIMAL + ORDERS.replace("KeySchema: [", "KeySchema: {x: [").replace("RANGE}]", "RANGE}]}"))
    assert wrong_type == [f"{FILE}: tables[0].KeySchema: expected a list, got a mapping"]
    undefined = refused(MINIMAL + ORDERS.replace(", {AttributeName: sk, AttributeType: S}]", "]"))
    reason = "ValidationException: Invalid KeySchema: Some index key attribute have no definition"
    assert undefined == [f"{FILE}: tables[0]: CreateTable would refuse this table: {reason}"]
    duplicate = refused(MINIMAL + ORDERS + ORDERS.replace("tables:\n", ""))
    assert duplicate == [f"{FILE}: tables[1].TableName: duplicate table 'Orders' (already tables[0])"]


def test_yaml_errors_and_duplicate_keys_name_the_line():
    (error,) = refused("name: t\nname: u\nregions: [{name: us-east-1}]\n")
    assert error.startswith(f"{FILE}: invalid YAML: line 2, column 1: found duplicate key 'name'")
    (error,) = refused("name: [unclosed\n")
    assert error.startswith(f"{FILE}: invalid YAML: line ")


def test_an_unreadable_file_is_named(tmp_path):
    missing = tmp_path / "missing.yaml"
    with pytest.raises(TopologyError, match=f"{missing}: cannot read the file"):
        load_topology(missing)


# ---------------------------------------------------------------------------------------------------- graph


@pytest.fixture(scope="module")
def world():
    return load_topology(ROOT / "topologies" / "world-five-regions.yaml")


def test_no_grudges_is_one_component(world):
    assert world.partition_components({}) == [frozenset(world.region_names)]
    assert world.reachable("eu-west-1", "ap-southeast-2")


def test_a_clean_partition_separates_two_groups(world):
    americas = {"us-east-1", "us-west-2"}
    rest = set(world.region_names) - americas
    grudges = {receiver: americas for receiver in rest} | {receiver: rest for receiver in americas}
    assert world.partition_components(grudges) == [frozenset(rest), frozenset(americas)]
    assert not world.reachable("us-east-1", "eu-west-1", grudges)
    assert world.reachable("us-east-1", "us-west-2", grudges)
    assert not world.link_up("us-east-1", "eu-west-1", grudges)


def test_an_isolated_region_is_its_own_component(world):
    others = set(world.region_names) - {"ap-northeast-1"}
    grudges = {"ap-northeast-1": others} | {receiver: {"ap-northeast-1"} for receiver in others}
    assert world.partition_components(grudges) == [frozenset({"ap-northeast-1"}), frozenset(others)]


def test_a_one_way_cut_leaves_an_indirect_path_but_no_direct_link(world):
    grudges = {"eu-west-1": {"us-east-1"}}  # eu-west-1 refuses what us-east-1 sends
    assert not world.link_up("us-east-1", "eu-west-1", grudges)
    assert world.link_up("eu-west-1", "us-east-1", grudges)
    assert world.reachable("us-east-1", "eu-west-1", grudges)  # through another region
    assert world.partition_components(grudges) == [frozenset(world.region_names)]


def test_a_region_that_hears_nobody_splits_off_even_if_it_can_send(world):
    grudges = {"eu-west-1": set(world.region_names) - {"eu-west-1"}}
    assert world.reachable("eu-west-1", "us-east-1", grudges)
    assert not world.reachable("us-east-1", "eu-west-1", grudges)
    assert frozenset({"eu-west-1"}) in world.partition_components(grudges)


def test_graph_edges_carry_latency_and_jitter(world):
    edge = world.graph().edges["eu-west-1", "ap-southeast-2"]
    assert edge == {"latency_ms": 128, "jitter_ms": 6}
    assert world.graph().edges["ap-southeast-2", "eu-west-1"]["latency_ms"] == 128  # bidirectional override


def test_unknown_region_in_grudges_is_an_error(world):
    with pytest.raises(KeyError, match="no region 'mars-north-1'"):
        world.partition_components({"mars-north-1": {"us-east-1"}})


# ------------------------------------------------------------------------------------------------------ cli


def test_validate_command_accepts_the_shipped_files(capsys):
    assert cli_main(["validate", *map(str, TOPOLOGIES)]) == 0
    assert "topology files valid" in capsys.readouterr().out


def test_validate_command_reports_every_error_and_fails(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: t\nmode: mrec\nregions: [{name: us-east-1, role: witness}, {name: us-east-1}]\n")
    assert cli_main(["validate", str(ROOT / "topologies" / "quickstart.yaml"), str(bad)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{bad}: regions[0].role: 'witness' is only allowed when mode is mrsc",
        f"{bad}: regions[1].name: duplicate region 'us-east-1' (already regions[0])",
    ]


def test_validate_is_a_console_command(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: t\nregions: [{name: us-east-1}]\nlinks: {default: {latency_ms: -5}}\n")
    result = subprocess.run(
        [sys.executable, "-m", "globaltables.cli.main", "validate", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == f"{bad}: links.default.latency_ms: must be at least 0, got -5"


def test_credentials_are_keys_to_secrets_and_errors_name_the_key_not_the_secret():
    keys = "credentials:\n  AKID1: s3cr3t\n  AKID2: {secret: other, regions: [eu-west-1]}\n"
    topology = parse_topology(textwrap.dedent(MINIMAL + keys), FILE)
    assert set(topology.credentials) == {"AKID1", "AKID2"}
    assert topology.credentials["AKID2"].regions == frozenset({"eu-west-1"})
    assert "s3cr3t" not in repr(topology) and "other" not in repr(topology)
    assert parse_topology(textwrap.dedent(MINIMAL), FILE).credentials is None
    errors = refused(MINIMAL + "credentials:\n  AKID1: {secret: hidden-value, regoins: [x]}\n")
    assert errors == [f"{FILE}: credentials.AKID1: unknown field 'regoins' (allowed: secret, regions)"]
    assert refused(MINIMAL + "credentials: [a]\n") == [
        f"{FILE}: credentials must be a non-empty mapping of access key id to secret"
    ]
