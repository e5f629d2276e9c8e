"""Start and stop real `globaltables region` processes for tests.

Rules
1. The region binds port 0 and reports the port it got through `--ready-file`: no free-port race, and the file
   appears only once the socket listens, so "ready" means the port answers. The helper then also connects once.
2. Every wait is bounded and polls; nothing sleeps a fixed time tuned to a fast machine.
3. Output goes to a log file, never a pipe (a full pipe would block the server); failures quote the log's tail.
4. A process is stopped by its own PID: SIGTERM, then SIGKILL if it does not exit in time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import boto3
from botocore.config import Config

REGION_NAME = "us-east-1"
SRC = Path(__file__).resolve().parent.parent / "src"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


class RegionProcess:
    """One `globaltables region` subprocess. `data_dir=None` runs it in memory."""

    def __init__(
        self,
        name: str,
        workdir: Path,
        data_dir: Path | None = None,
        port: int = 0,
        extra_args: tuple[str, ...] = (),
        program: tuple[str, ...] = ("-m", "globaltables.cli.main"),
        capacity: str = "unlimited",
    ):
        self.name = name
        self.port = port  # 0: any free port (the region reports the one it got)
        self.workdir = Path(workdir)
        self.data_dir = data_dir
        self.extra_args = extra_args
        self.program = program  # what python runs: the CLI, or a script that runs it (tests/fuzz/planted_region.py)
        # Tests' regions never throttle unless a test asks for modelled capacity: loopback clients send requests
        # far faster than a client of DynamoDB's (sequential 30 KB puts to one key would throttle), and a test that
        # is not about capacity should not depend on the machine's speed (docs/capacity.md, decision 12).
        self.capacity = capacity
        self.process: subprocess.Popen | None = None
        self.endpoint: str | None = None
        self.starts = 0

    # -------------------------------------------------------------------------------------------------- lifecycle

    def start(self, timeout: float = START_TIMEOUT_S) -> str:
        """Start the region and wait until it answers; its endpoint URL."""
        assert self.process is None or self.process.poll() is not None, "already running"
        self.starts += 1
        self.workdir.mkdir(parents=True, exist_ok=True)
        ready_file = self.workdir / f"{self.name}.ready.{self.starts}.json"
        ready_file.unlink(missing_ok=True)
        self.log_path = self.workdir / f"{self.name}.{self.starts}.log"
        storage = ["--in-memory"] if self.data_dir is None else ["--data-dir", str(self.data_dir)]
        command = [
            sys.executable, *self.program, "region", "--name", self.name,
            "--host", "127.0.0.1", "--port", str(self.port), *storage, "--ready-file", str(ready_file), "--capacity", self.capacity, *self.extra_args,
        ]  # fmt: skip
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir, env=env
            )
        deadline = time.monotonic() + timeout
        while not ready_file.exists():
            if self.process.poll() is not None:
                raise RuntimeError(f"region {self.name} exited with {self.process.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(f"region {self.name} not ready after {timeout} s:\n{self.log_tail()}")
            time.sleep(0.02)
        self.endpoint = json.loads(ready_file.read_text())["endpoint"]
        wait_until(lambda: port_open(*self.address), deadline - time.monotonic(), f"{self.endpoint} to answer")
        return self.endpoint

    def restart(self, timeout: float = START_TIMEOUT_S) -> str:
        """Start again on the same port (peers and clients keep their endpoint), after a stop or a kill."""
        assert self.process is not None and self.process.poll() is not None, "stop or kill it first"
        self.port = self.address[1]
        return self.start(timeout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT_S) -> int:
        """Signal the process and wait for it to exit (SIGKILL after `timeout`); its exit code."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            os.kill(self.process.pid, sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout)
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to flush or close anything."""
        self.stop(signal.SIGKILL)

    # ------------------------------------------------------------------------------------------------------ facts

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def address(self) -> tuple[str, int]:
        assert self.endpoint is not None
        parts = urlsplit(self.endpoint)
        return parts.hostname, parts.port

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


# Dummy credentials: the region accepts any SigV4 signature. Retries are off so a test sees the first answer
# (a retry would hide a wrong status or a checksum error).
CLIENT_CONFIG = Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=60)


def make_client(endpoint: str, service: str = "dynamodb", region: str = REGION_NAME, config: Config = CLIENT_CONFIG):
    """A boto3 client on a region endpoint."""
    return boto3.client(
        service,
        region_name=region,
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=config,
    )


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def wait_until(condition, timeout: float, what: str, interval: float = 0.02) -> None:
    deadline = time.monotonic() + max(timeout, 0.0)
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval)
