"""Nothing listens beyond 127.0.0.1 unless the topology says so: every socket the supervisor and its regions listen
on, read from the kernel (`ss`), is a loopback address; and a topology that advertises a region beyond loopback
without saying where it binds is refused, naming the field."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from mrec_cluster import start_up, stop_up
from separate_hosts import ROOT, cli

pytestmark = pytest.mark.timeout(180)


def listening(pids: set[int]) -> list[str]:
    """Local addresses of the TCP sockets in LISTEN state owned by `pids`."""
    table = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in table.splitlines():
        owners = {int(pid) for pid in re.findall(r"pid=(\d+)", line)}
        if owners & pids:
            found.append(line.split()[3])
    return found


def test_a_default_topology_listens_on_loopback_only(tmp_path: Path):
    cluster = start_up(ROOT / "topologies" / "mrec-test.yaml", tmp_path)
    try:
        state = cluster.state()
        pids = {cluster.process.pid} | {entry["pid"] for entry in state["regions"].values()}
        addresses = listening(pids)
        assert len(addresses) >= 4, addresses  # three regions and the supervisor's control API
        assert all(address.startswith("127.0.0.1:") for address in addresses), addresses
    finally:
        stop_up(cluster.process)


def test_a_region_advertised_beyond_loopback_must_say_where_it_binds(tmp_path: Path):
    path = tmp_path / "t.yaml"
    path.write_text(
        "name: t\nregions:\n  - {name: us-east-1, host: 10.0.0.2, port: 8000}\n"
        "  - {name: eu-west-1, advertise: 10.0.0.3, bind: 0.0.0.0, port: 8000}\n"
    )
    answer = cli("validate", str(path), cwd=tmp_path)
    assert answer.returncode == 1
    assert f"{path}: regions[0].bind: the region is advertised at '10.0.0.2', which is not a loopback address" in (
        answer.stderr
    )
    assert "regions[1]" not in answer.stderr
