"""Three regions on three network stacks (one Linux network namespace each, as three hosts), each started by its
own `globaltables up --only R` inside its namespace, and the experiment run from the root namespace with
`run --attach` / `compare --attach`. Link faults stay the regions' own (no `tc` needed). Skips only where the kernel
refuses namespaces (the reason is printed)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

import network_namespaces
from globaltables.region.control_client import ControlClient, ControlError
from separate_hosts import ROOT, SECRET, cli, placed_topology, start_hosts, stop_hosts

pytestmark = pytest.mark.timeout(600)
REASON = network_namespaces.available()
if REASON is not None:
    pytest.skip(f"needs Linux network namespaces: {REASON}", allow_module_level=True)

MREC = ["us-east-1", "eu-west-1", "ap-southeast-1"]
MRSC = ["us-east-1", "us-east-2", "us-west-2"]


@pytest.fixture(scope="module")
def hosts():
    namespaces = network_namespaces.Namespaces(3).create()
    try:
        yield namespaces
    finally:
        namespaces.remove()


def placement(namespaces, regions: list[str], port: int) -> dict[str, dict]:
    address = {name: namespaces.address(index) for index, name in enumerate(regions)}
    return {name: {"host": address[name], "bind": address[name], "port": port} for name in regions}


def schedule(directory: Path) -> Path:
    path = directory / "partition-and-heal.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "netns-partition",
                "quiet": "1s",
                "steps": [{"at": "1s", "do": "partition", "between": ["us-east-1", "eu-west-1"], "for": "2s"}],
            }
        )
    )
    return path


def control(url: str, body: dict | None, secret: str | None) -> tuple[int, dict]:
    """(status, JSON answer) of a control call; `secret=None` sends none."""
    parts, client = urlsplit(url), ControlClient(secret or None, timeout_s=10)
    try:
        return 200, client.call(f"{parts.scheme}://{parts.netloc}", parts.path, body)
    except ControlError as error:
        if error.status is None:
            raise
        return error.status, error.answer


def test_mrec_experiment_with_a_partition_across_three_network_stacks(hosts, tmp_path: Path):
    topology = placed_topology(
        ROOT / "topologies" / "quickstart.yaml",
        tmp_path,
        placement(hosts, MREC, 8000),
        links={"default": {"latency_ms": 10, "jitter_ms": 1}},
    )
    started = start_hosts(topology, MREC, tmp_path / "hosts", netns=dict(zip(MREC, hosts.names)))
    try:
        # Each region listens on its own stack's address only, and refuses the control API without the secret
        # there: a fault sent without it changes nothing.
        endpoint = f"http://{hosts.address(1)}:8000"
        assert control(f"{endpoint}/control/faults", {"grudges": ["us-east-1"]}, None)[0] == 401
        assert control(f"{endpoint}/control/status", None, SECRET)[1]["transport"]["grudges"] == []
        supervisor = started[1].state()["supervisor"]["control_url"]
        assert supervisor.startswith(f"http://{hosts.address(1)}:")
        assert control(f"{supervisor}/control/regions/eu-west-1/crash", {}, None)[0] == 401
        assert control(f"{endpoint}/control/status", None, SECRET)[0] == 200  # still up
        assert control(f"{endpoint}/replication", None, None)[0] == 401
        assert control(f"{endpoint}/replication", None, "not-the-secret")[0] == 401

        out = tmp_path / "results"
        ran = cli(
            "run",
            str(topology),
            "--attach",
            "--chaos",
            str(schedule(tmp_path)),
            "--duration",
            "4",
            "--out",
            str(out),
            cwd=tmp_path,
        )
        assert ran.returncode == 0, ran.stderr + ran.stdout
        results = json.loads((out / "results.json").read_text())
        assert any(fault["f"] == "partition" for fault in results["faults"]), results["faults"]
        assert all(check["passed"] for check in results["checks"]), results["checks"]
        assert set(results["throughput"]) == set(MREC)
        assert all(entry["achieved_per_s"] > 0 for entry in results["throughput"].values())
    finally:
        stop_hosts(started)


def test_mrsc_compare_across_three_network_stacks_measures_writes_above_the_round_trip(hosts, tmp_path: Path):
    topology = placed_topology(ROOT / "topologies" / "mrsc-three-replicas.yaml", tmp_path, placement(hosts, MRSC, 8100))
    started = start_hosts(topology, MRSC, tmp_path / "hosts", netns=dict(zip(MRSC, hosts.names)))
    try:
        out = tmp_path / "compare"
        compared = cli(
            "compare", str(topology), "--attach", "--modes", "mrsc", "--duration", "4", "--out", str(out), cwd=tmp_path
        )
        assert compared.returncode == 0, compared.stderr + compared.stdout
        document = json.loads((out / "compare.json").read_text())
        mrsc = document["modes"]["mrsc"]
        assert mrsc["ran"] and mrsc["passed"], mrsc
        # A floor, never a ceiling: a strong write waits for the nearest member's round trip over the namespaces.
        assert set(mrsc["write_floor_ms"]) == set(MRSC), mrsc
        for region, floor in mrsc["write_floor_ms"].items():
            assert floor > 0
            assert mrsc["writes_ms"][region]["put"]["p50"] >= 0.95 * floor, (region, mrsc["writes_ms"][region], floor)
    finally:
        stop_hosts(started)
