"""Run a topology with `globaltables up` for tests: start it, wait for ready, talk to its regions, stop it.

Rules (as tests/region_process.py): the supervisor's stdout goes to a file, never a pipe, and is polled for its JSON
lines until `{"ready": true}` within a bounded wait; it is stopped by its PID (SIGTERM, then SIGKILL if it hangs),
and it stops every region it started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from globaltables.region.control_client import ControlClient, ControlError
from region_process import SRC, make_client

ROOT = SRC.parent
TOPOLOGY = ROOT / "topologies" / "mrec-test.yaml"
READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0


class Cluster:
    """The running topology: endpoints, boto3 clients per region, the secret and control calls."""

    def __init__(self, process: subprocess.Popen, data_dir: Path, lines: list[dict]) -> None:
        self.process = process
        self.data_dir = data_dir
        self.endpoints = {line["region"]: line["endpoint"] for line in lines if "region" in line}
        self.roles = {line["region"]: line["role"] for line in lines if "region" in line}
        # Each client signs for its own region: a region refuses a request scoped to another (signing.py).
        self.clients = {name: make_client(endpoint, region=name) for name, endpoint in self.endpoints.items()}
        self.secret = (data_dir / "secret").read_text().strip()

    @property
    def regions(self) -> list[str]:
        return list(self.endpoints)

    def state(self) -> dict:
        return json.loads((self.data_dir / "state.json").read_text())

    def control(self, url: str, body: dict | None = None, secret: str | None = "") -> tuple[int, dict]:
        """GET (body None) or POST JSON to a control URL; (status, JSON answer). `secret=None` sends none, "" the
        topology's. A call nothing answers raises ControlError."""
        parts = urlsplit(url)
        client = ControlClient(self.secret if secret == "" else secret, timeout_s=30)
        try:
            return 200, client.call(f"{parts.scheme}://{parts.netloc}", parts.path, body)
        except ControlError as error:
            if error.status is None:
                raise
            return error.status, error.answer

    def status(self, region: str) -> dict:
        code, answer = self.control(f"{self.endpoints[region]}/control/status")
        assert code == 200, answer
        return answer

    def faults(self, region: str, body: dict) -> dict:
        code, answer = self.control(f"{self.endpoints[region]}/control/faults", body)
        assert code == 200, answer
        return answer

    def supervise(self, region: str, action: str) -> dict:
        url = self.state()["supervisor"]["control_url"]
        code, answer = self.control(f"{url}/control/regions/{region}/{action}", {})
        assert code == 200, answer
        return answer

    def quiesced(self) -> bool:
        """Every link's acknowledged position equals its log end, in every region."""
        for region in self.regions:
            for link in self.status(region)["links"]:
                if link["acked"] != link["log_end"]:
                    return False
        return True


def wait_until(condition, timeout: float, what: str, interval: float = 0.01):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def start_up(topology: Path, workdir: Path) -> Cluster:
    """Start `globaltables up` on `topology` with its state dir in `workdir`; the cluster once it printed ready."""
    data_dir = workdir / "state"
    stdout_path, stderr_path = workdir / "up.stdout", workdir / "up.stderr"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "globaltables.cli.main", "up", str(topology), "--data-dir", str(data_dir)]
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=workdir, env=env
        )

    def ready() -> list[dict] | None:
        if process.poll() is not None:
            raise RuntimeError(f"`globaltables up` exited with {process.returncode}:\n{stderr_path.read_text()}")
        lines = [json.loads(line) for line in stdout_path.read_text().splitlines() if line.endswith("}")]
        return lines if lines and lines[-1] == {"ready": True} else None

    try:
        lines = wait_until(ready, READY_TIMEOUT_S, "`globaltables up` to print ready", interval=0.05)
    except BaseException:
        stop_up(process)
        raise
    return Cluster(process, data_dir, lines)


def stop_up(process: subprocess.Popen) -> int:
    """SIGTERM the supervisor by its PID (it stops its regions), SIGKILL if it hangs; its exit code."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(STOP_TIMEOUT_S)
    return process.returncode
