"""Regions started by three separate `globaltables up --only R` invocations, as three hosts would: peers find each
other where the topology places them, and `chaos`, `check` and `run --attach` work against them from elsewhere
through the authenticated control API (no shared state dir)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from separate_hosts import ROOT, cli, quickstart_on_separate_hosts
from region_process import make_client

pytestmark = pytest.mark.timeout(300)
REGIONS = ["us-east-1", "eu-west-1", "ap-southeast-1"]


@pytest.fixture
def hosts(tmp_path: Path):
    with quickstart_on_separate_hosts(tmp_path, REGIONS) as placed:
        yield placed


def test_each_up_starts_only_its_region_and_names_the_others_elsewhere(hosts):
    topology, endpoints, started = hosts
    for host in started:
        state = host.state()
        assert list(state["regions"]) == [host.region]
        assert {name: entry["endpoint"] for name, entry in state["elsewhere"].items()} == {
            name: url for name, url in endpoints.items() if name != host.region
        }


def test_chaos_check_and_run_attach_work_across_separate_ups(hosts, tmp_path: Path):
    topology, endpoints, _ = hosts
    work = tmp_path / "elsewhere"
    work.mkdir()
    us = make_client(endpoints["us-east-1"], region="us-east-1")
    eu = make_client(endpoints["eu-west-1"], region="eu-west-1")

    # A partition between two hosts' regions holds writes back; heal and check converge them.
    assert cli("chaos", str(topology), "partition", "us-east-1", "eu-west-1", cwd=work).returncode == 0
    us.put_item(TableName="Orders", Item={"customerId": {"S": "c1"}, "sk": {"S": "a"}, "v": {"S": "us"}})
    eu.put_item(TableName="Orders", Item={"customerId": {"S": "c1"}, "sk": {"S": "b"}, "v": {"S": "eu"}})
    assert "Item" not in eu.get_item(TableName="Orders", Key={"customerId": {"S": "c1"}, "sk": {"S": "a"}})
    assert cli("chaos", str(topology), "heal", cwd=work).returncode == 0
    checked = cli("check", str(topology), cwd=work)
    assert checked.returncode == 0, checked.stderr + checked.stdout
    assert "convergence: PASS" in checked.stdout, checked.stdout

    # A process fault reaches the supervisor that started the region, which its status names.
    assert cli("chaos", str(topology), "crash", "eu-west-1", cwd=work).returncode == 0
    restarted = cli("chaos", str(topology), "restart", "eu-west-1", cwd=work)
    assert restarted.returncode == 0, restarted.stderr
    assert eu.get_item(TableName="Orders", Key={"customerId": {"S": "c1"}, "sk": {"S": "b"}})["Item"]["v"] == {
        "S": "eu"
    }

    out = tmp_path / "results"
    ran = cli("run", str(topology), "--attach", "--duration", "3", "--out", str(out), cwd=work)
    assert ran.returncode == 0, ran.stderr + ran.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["completed"] and all(check["passed"] for check in results["checks"])
    assert set(results["throughput"]) == set(REGIONS)
    assert all(entry["achieved_per_s"] > 0 for entry in results["throughput"].values())


def test_attaching_without_the_secret_or_a_placement_is_refused(tmp_path: Path):
    # quickstart pins no ports: attach has nowhere to look, and says which regions are not placed.
    refused = cli(
        "run",
        str(ROOT / "topologies" / "quickstart.yaml"),
        "--attach",
        "--duration",
        "1",
        "--out",
        str(tmp_path / "r"),
        cwd=tmp_path,
    )
    assert refused.returncode == 2
    assert "not placed: us-east-1, eu-west-1, ap-southeast-1" in refused.stderr


def test_up_only_refuses_an_unplaced_topology(tmp_path: Path):
    answer = cli(
        "up",
        str(ROOT / "topologies" / "quickstart.yaml"),
        "--only",
        "us-east-1",
        "--data-dir",
        str(tmp_path / "state"),
        cwd=tmp_path,
        timeout=60,
    )
    assert answer.returncode == 1
    assert "fixed port or an endpoint" in answer.stderr
