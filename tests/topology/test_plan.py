"""One region's plan (`topology.plan.region_plan`): the peers and links a region process and a simulated region run
with, and where the shared secret comes from; and the loader's checks, which higher layers hand in.

The hosts (region/ and sim/) see a topology only through this plan, so what it says is what both of them run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from globaltables.experiment.topology import load_topology, parse_topology
from globaltables.region.plan_settings import replication_settings
from globaltables.sim.cluster import SimCluster
from globaltables.sim.mrsc_cluster import MrscCluster
from globaltables.topology.load import Checks, TopologyError
from globaltables.topology.load import parse_topology as parse_shape_only
from globaltables.topology.model import Link
from globaltables.topology.plan import region_plan, region_plans
from globaltables.topology.secret import SECRET_ENV, SecretError

ROOT = Path(__file__).resolve().parents[2]

PINNED = """
name: pinned
regions:
  - {name: us-east-1, port: 8001, clock_offset_ms: 25}
  - {name: eu-west-1, advertise: 10.0.0.2, bind: 0.0.0.0, port: 8002}
  - {name: ap-southeast-1}
links:
  default: {latency_ms: 40, jitter_ms: 2}
  overrides: [{from: us-east-1, to: ap-southeast-1, latency_ms: 110, jitter_ms: 5}]
tables:
  - TableName: Orders
    AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
    KeySchema: [{AttributeName: pk, KeyType: HASH}]
"""


def test_an_mrec_plan_lists_the_other_replicas_with_the_directed_link_towards_each():
    plan = region_plan(parse_topology(PINNED, "<pinned>"), "us-east-1")
    assert plan.name == "us-east-1" and plan.topology == "pinned" and plan.role == "replica"
    assert plan.clock_offset_ms == 25 and plan.region.port == 8001
    assert [(peer.name, peer.url, peer.link) for peer in plan.peers] == [
        ("eu-west-1", "http://10.0.0.2:8002", Link(40, 2)),
        ("ap-southeast-1", None, Link(110, 5)),  # no pinned port: learned from the peers file or control API
    ]
    assert plan.replicas == ("us-east-1", "eu-west-1", "ap-southeast-1") and plan.witness is None
    assert [table.name for table in plan.tables] == ["Orders"]
    # The override runs one way only: the way back is the default.
    back = region_plan(parse_topology(PINNED, "<pinned>"), "ap-southeast-1")
    assert {peer.name: peer.link for peer in back.peers}["us-east-1"] == Link(40, 2)


def test_a_strong_mode_plan_counts_the_witness_as_a_peer():
    topology = load_topology(ROOT / "topologies" / "mrsc-witness.yaml")
    witness = next(region.name for region in topology.regions if region.role == "witness")
    plans = region_plans(topology)
    assert list(plans) == list(topology.region_names)
    for name, plan in plans.items():
        assert plan.witness == witness and plan.mode == "mrsc"
        assert set(plan.peer_names) == set(topology.region_names) - {name}
    assert plans[witness].role == "witness" and witness not in plans[witness].replicas


def test_an_unknown_region_is_a_key_error_naming_the_regions():
    with pytest.raises(KeyError, match="no region 'us-west-2' in topology 'pinned'; regions: us-east-1, eu-west-1"):
        region_plan(parse_topology(PINNED, "<pinned>"), "us-west-2")


def test_the_region_host_settings_are_the_plan_with_command_line_endpoints_first():
    plan = region_plan(parse_topology(PINNED, "<pinned>"), "us-east-1")
    settings = replication_settings(plan, "s3cret", endpoints={"ap-southeast-1": "http://127.0.0.1:9003"})
    assert [(p.name, p.endpoint, p.latency_ms, p.jitter_ms) for p in settings.peers] == [
        ("eu-west-1", "http://10.0.0.2:8002", 40.0, 2.0),
        ("ap-southeast-1", "http://127.0.0.1:9003", 110.0, 5.0),
    ]
    assert settings.clock_offset_ms == 25 and settings.replicas == plan.replicas and settings.secret == "s3cret"
    assert [table["TableName"] for table in settings.tables] == ["Orders"]


def test_the_simulator_runs_the_same_links_and_offsets_as_the_plans():
    topology = parse_topology(PINNED, "<pinned>")
    cluster = SimCluster(topology, 0, journal=False)
    for plan in region_plans(topology).values():
        for peer in plan.peers:
            baseline = cluster.network.link_settings(plan.name, peer.name)
            assert (baseline.latency_ms, baseline.jitter_ms) == (peer.link.latency_ms, peer.link.jitter_ms)
    assert cluster.regions["us-east-1"].clock.offset_s == pytest.approx(0.025)
    strong = load_topology(ROOT / "topologies" / "mrsc-witness.yaml")
    mrsc = MrscCluster.from_topology(strong, 0, journal=False)
    assert mrsc.witness == region_plan(strong, strong.region_names[0]).witness


def test_the_secret_comes_from_the_given_file_then_the_topology_then_the_environment(tmp_path, monkeypatch):
    (tmp_path / "topology.secret").write_text("from-topology\n")
    (tmp_path / "given.secret").write_text("given\n")
    text = PINNED + "secret_file: topology.secret\n"
    plan = region_plan(parse_topology(text, tmp_path / "t.yaml"), "us-east-1")
    monkeypatch.setenv(SECRET_ENV, "from-env")
    assert plan.secret() == "from-topology"
    assert plan.secret(tmp_path / "given.secret") == "given"
    unfiled = region_plan(parse_topology(PINNED, tmp_path / "t.yaml"), "us-east-1")
    assert unfiled.secret() == "from-env"
    monkeypatch.delenv(SECRET_ENV)
    assert unfiled.secret() is None
    (tmp_path / "empty.secret").write_text("  \n")
    with pytest.raises(SecretError, match="is empty"):
        unfiled.secret(tmp_path / "empty.secret")


def test_checks_of_higher_layers_are_handed_in_and_their_messages_name_the_field():
    text = PINNED.replace(
        "KeySchema: [{AttributeName: pk, KeyType: HASH}]",
        "KeySchema: [{AttributeName: pk, KeyType: HASH}]\n    Typo: 1",
    )
    # Without the CreateTable check only the table's shape is read: an unknown key is kept, not refused.
    assert parse_shape_only(text, "t.yaml").tables[0].definition["Typo"] == 1
    with pytest.raises(TopologyError) as refused:
        parse_topology(text, "t.yaml")
    assert "t.yaml: tables[0].Typo: unknown key; allowed keys are " in str(refused.value)
    checks = Checks(table=lambda request: "ValidationException: planted", workload=lambda *_: [("workload.x", "bad")])
    with pytest.raises(TopologyError) as planted:
        parse_shape_only(PINNED + "workload: {x: 1}\n", "t.yaml", checks)
    assert planted.value.errors == (
        "t.yaml: tables[0]: CreateTable would refuse this table: ValidationException: planted",
        "t.yaml: workload.x: bad",
    )
