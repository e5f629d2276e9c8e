"""Regions placed as separate hosts would run them: one `globaltables up --only R` per region (each its own state
dir, optionally inside a network namespace), and the CLI run from elsewhere against them.

Rules as tests/mrec_cluster.py: stdout to a file (never a pipe), polled for `{"ready": true}` within a bounded wait;
every process stopped by its PID (SIGTERM, then SIGKILL), which stops the regions it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from region_process import SRC

ROOT = SRC.parent
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
SECRET = "multi-host-test-secret-0123456789abcdef"


def env() -> dict[str, str]:
    found = dict(os.environ)
    found["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), found.get("PYTHONPATH")]))
    found.pop("GLOBALTABLES_SECRET", None)
    return found


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now (a topology that pins ports needs them before the regions start)."""
    sockets, ports = [], []
    for _ in range(count):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        sockets.append(probe)
        ports.append(probe.getsockname()[1])
    for probe in sockets:
        probe.close()
    return ports


def placed_topology(base: Path, directory: Path, placement: dict[str, dict], **changes) -> Path:
    """`base` with each region's placement fields set (and the secret in a file beside it)."""
    document = yaml.safe_load(base.read_text())
    for region in document["regions"]:
        region.update(placement[region["name"]])
    secret_file = directory / "secret"
    secret_file.write_text(SECRET + "\n")
    secret_file.chmod(0o600)
    document["secret_file"] = str(secret_file)
    document.update(changes)
    path = directory / f"{document['name']}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


class Host:
    """One `globaltables up --only REGION` (in network namespace `netns`, if given)."""

    def __init__(self, topology: Path, region: str, directory: Path, netns: str | None = None) -> None:
        self.region = region
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.stdout_path = directory / "up.stdout"
        self.stderr_path = directory / "up.stderr"
        command = [
            sys.executable,
            "-m",
            "globaltables.cli.main",
            "up",
            str(topology),
            "--only",
            region,
            "--data-dir",
            str(directory / "state"),
        ]
        if netns is not None:
            command = ["ip", "netns", "exec", netns, *command]
        with open(self.stdout_path, "wb") as stdout, open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=directory, env=env()
            )

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(
                f"`up --only {self.region}` exited with {self.process.returncode}:\n{self.stderr_path.read_text()}"
            )
        lines = [json.loads(line) for line in self.stdout_path.read_text().splitlines() if line.endswith("}")]
        return bool(lines) and lines[-1] == {"ready": True}

    def state(self) -> dict:
        return json.loads((self.directory / "state" / "state.json").read_text())

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(STOP_TIMEOUT_S)


def start_hosts(topology: Path, regions: list[str], directory: Path, netns: dict[str, str] | None = None) -> list[Host]:
    hosts = [Host(topology, region, directory / region, (netns or {}).get(region)) for region in regions]
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not all(host.ready() for host in hosts):
            if time.monotonic() > deadline:
                raise TimeoutError("the regions did not all print ready")
            time.sleep(0.1)
    except BaseException:
        stop_hosts(hosts)
        raise
    return hosts


def stop_hosts(hosts: list[Host]) -> None:
    for host in hosts:
        host.stop()


@contextlib.contextmanager
def quickstart_on_separate_hosts(
    directory: Path, regions: list[str]
) -> Iterator[tuple[Path, dict[str, str], list[Host]]]:
    """topologies/quickstart.yaml with each of `regions` pinned to a free port on 127.0.0.1 (links of 5 ms, 1 ms
    jitter), each started by its own `up --only`: the placed topology's path, each region's endpoint and the hosts,
    all stopped on leaving."""
    ports = free_ports(len(regions))
    placement = {name: {"host": "127.0.0.1", "port": port} for name, port in zip(regions, ports)}
    topology = placed_topology(
        ROOT / "topologies" / "quickstart.yaml",
        directory,
        placement,
        links={"default": {"latency_ms": 5, "jitter_ms": 1}},
    )
    started = start_hosts(topology, regions, directory / "hosts")
    try:
        yield topology, {name: f"http://127.0.0.1:{port}" for name, port in zip(regions, ports)}, started
    finally:
        stop_hosts(started)


def cli(*arguments: str, cwd: Path, timeout: float = 300.0) -> subprocess.CompletedProcess:
    """The `globaltables` command, run from `cwd` (where no `up` holds a state dir: it attaches)."""
    return subprocess.run(
        [sys.executable, "-m", "globaltables.cli.main", *arguments],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
