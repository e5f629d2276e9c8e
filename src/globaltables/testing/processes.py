"""The process harness: a topology as real region processes started by `globaltables up`, reached through boto3
over the wire protocol.

Theory of operation: `globaltables up` runs in a temporary state dir (the topology written there as YAML), its
stdout going to a file that is polled (bounded) for `{"ready": true}`; it is stopped by its PID (SIGTERM, then
SIGKILL), and it stops every region it started. Faults go through the regions' control API (`/control/faults`:
grudges, latency overrides, clock offset, heal) and the supervisor's (`/control/regions/<name>/crash|restart`),
with the topology's shared secret. Time is real: `advance` sleeps, waits poll every 10 ms.

Starting processes costs seconds, so the pytest plugin shares one harness per module and topology; `reset()` gives
each test a fresh history and heals whatever faults the previous test left. Tests sharing a harness keep apart
through unique keys.

With `attach` (the plugin's `--globaltables-attach`), nothing is started or stopped: the harness talks to regions
already running where the topology places them (other hosts, `up --only`, Kubernetes; experiment/deployment.py),
with the secret from the topology's secret_file or $GLOBALTABLES_SECRET, and sends process faults to the
supervisor each region names.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import globaltables

from ..chaos.history import History
from ..region.control_client import ControlClient
from ..topology.model import Topology
from .harness import Harness, ReadsThroughClients, check_impairments
from .simulated import boto3_session
from .spec import topology_yaml

READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
CONTROL_TIMEOUT_S = 60.0
POLL_S = 0.01
SRC = Path(globaltables.__file__).resolve().parent.parent


class _TestClock:
    """Real time, with `monotonic()` counted from the start of the current test (readable reports)."""

    def __init__(self) -> None:
        self.origin = time.monotonic()

    def monotonic(self) -> float:
        return time.monotonic() - self.origin

    def wall_time(self) -> float:
        return time.time()


class ProcessHarness(ReadsThroughClients, Harness):
    mode = "process"
    time_label = "elapsed"

    def __init__(self, topology: Topology, workdir: str | Path | None = None, *, attach: bool = False) -> None:
        self._clock = _TestClock()
        self._tempdir = tempfile.TemporaryDirectory(prefix="globaltables-kit-") if workdir is None else None
        self.workdir = Path(workdir if workdir is not None else self._tempdir.name)  # type: ignore[union-attr]
        self.process: subprocess.Popen | None = None
        self._target = None  # attached: the control target that finds each region's supervisor
        if attach:
            self._attach(topology)
        else:
            self._start(topology)
        super().__init__(topology, None)
        # A strong-mode witness serves no table data: reads, scans and convergence look at the replicas only.
        self.witnesses = frozenset(r.name for r in topology.regions if r.role == "witness")
        self._grudges: dict[str, set[str]] = {name: set() for name in topology.region_names}
        self._impairments: dict[tuple[str, str], dict[str, Any]] = {}  # (source, dest) -> link faults in force
        self._lock = threading.Lock()

    def _new_history(self) -> History:
        return History(self._clock)

    # ----------------------------------------------------------------------------------------------- lifecycle

    def _start(self, topology: Topology) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        path = self.workdir / "topology.yaml"
        path.write_text(topology_yaml(topology))
        data_dir = self.workdir / "state"
        stdout_path, stderr_path = self.workdir / "up.stdout", self.workdir / "up.stderr"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "globaltables.cli.main", "up", str(path), "--data-dir", str(data_dir)]
        with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=self.workdir, env=env
            )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"`globaltables up` exited with {self.process.returncode}:\n{stderr_path.read_text()}")
            lines = [json.loads(line) for line in stdout_path.read_text().splitlines() if line.endswith("}")]
            if lines and lines[-1] == {"ready": True}:
                break
            if time.monotonic() > deadline:
                self.close()
                raise TimeoutError(f"`globaltables up` not ready after {READY_TIMEOUT_S} s:\n{stderr_path.read_text()}")
            time.sleep(0.05)
        self.endpoints = {line["region"]: line["endpoint"] for line in lines if "region" in line}
        self.data_dir = data_dir
        self.secret = (data_dir / "secret").read_text().strip()

    def _attach(self, topology: Topology) -> None:
        from ..experiment.deployment import attached

        deployment = attached(topology, self.workdir / "supervisors.json")
        self.endpoints = dict(deployment.endpoints)
        self.secret = deployment.secret
        self._target = deployment.control_target(topology)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        self._close_readers()
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(STOP_TIMEOUT_S)
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def reset(self) -> None:
        """A fresh history and clock for the next test; every fault healed, every region running."""
        for name in self.regions:
            if not self._supervisor_state(name):
                self.restart(name)
        self.heal()
        self._clock.origin = time.monotonic()
        self.history = self._new_history()
        self.recorder.history = self.history

    # ----------------------------------------------------------------------------------------------- clients

    def _boto_client(self, region: str, max_attempts: int) -> Any:
        from botocore.config import Config

        from ..region.signing import key_for

        key = key_for(self.topology.credentials, region)  # regions that verify signatures get a real key
        keys = {} if key is None else {"aws_access_key_id": key[0], "aws_secret_access_key": key[1]}
        return boto3_session().client(
            "dynamodb",
            region_name=region,
            endpoint_url=self.endpoints[region],
            **keys,
            config=Config(
                retries={"total_max_attempts": max_attempts, "mode": "standard"}, connect_timeout=5, read_timeout=30
            ),
        )

    def _make_client(self, region: str, max_attempts: int) -> Any:
        return self._boto_client(region, max_attempts)

    def _unrecorded_client(self, region: str, max_attempts: int) -> Any:
        return self._boto_client(region, max_attempts)

    def _up_regions(self) -> list[str]:
        return [name for name in self.regions if name not in self.witnesses]

    # ----------------------------------------------------------------------------------------------- time

    def now(self) -> float:
        return self._clock.monotonic()

    def advance(self, seconds: float) -> None:
        """Real time passes (process mode has no virtual time)."""
        time.sleep(seconds)

    def wait_for(self, condition: Callable[[], Any], timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL_S)

    def _quiescent(self) -> bool:
        for region in self.regions:
            status = self._control(self.endpoints[region], "/control/status", region=region)
            if status.get("mode") == "mrsc":
                # Strong mode has no replication log: idle is no client request waiting, no proposal undecided
                # or queued, no pending (accepted, unresolved) proposal held and no strong read syncing.
                mrsc = status["mrsc"]
                if status["waiting"] or status["pending"] or mrsc["proposals"] or mrsc["queued"] or mrsc["reads"]:
                    return False
                continue
            for link in status["links"]:
                if link["acked"] != link["log_end"]:
                    return False
        return True

    def _run_concurrently(self, calls: Sequence[Callable[[], Any]]) -> list[Any]:
        """Each call on its own thread, released together by a barrier."""
        barrier = threading.Barrier(len(calls))
        results: list[Any] = [None] * len(calls)

        def run(index: int) -> None:
            barrier.wait()
            try:
                results[index] = calls[index]()
            except Exception as error:  # noqa: BLE001 - handed back to the test
                results[index] = error

        threads = [threading.Thread(target=run, args=(index,)) for index in range(len(calls))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        return results

    # ----------------------------------------------------------------------------------------------- control

    def _control(self, base: str, path: str, body: dict | None = None, *, region: str | None = None) -> dict:
        """One control call (region/control_client.py: ControlError names route, region and status)."""
        return ControlClient(self.secret, CONTROL_TIMEOUT_S).call(base, path, body, region=region)

    def _faults(self, region: str, body: dict) -> None:
        self._control(self.endpoints[region], "/control/faults", body, region=region)

    def _supervisor_url(self, region: str) -> str:
        if self._target is not None:
            return self._target.supervisor_of(region)
        return json.loads((self.data_dir / "state.json").read_text())["supervisor"]["control_url"]

    def _supervisor(self, region: str, action: str) -> dict:
        return self._control(self._supervisor_url(region), f"/control/regions/{region}/{action}", {}, region=region)

    def _supervisor_state(self, region: str) -> bool:
        """Whether the region's process is running."""
        from ..chaos.target import TargetError

        try:
            url = self._supervisor_url(region)
        except TargetError:  # an attached region nobody supervises (a pod): nothing here restarts it
            return True
        return bool(self._control(url, "/control/status", region=region)["regions"][region]["running"])

    def _fault(self, f: str, value: Any = None, region: str | None = None) -> None:
        with self.recorder._lock:
            self.history.fault(f, value, region)

    def partition(self, a: str, b: str | None = None, *, one_way: bool = False) -> None:
        for other in [b] if b is not None else [r for r in self.regions if r != a]:
            self._grudges[other].add(a)
            if not one_way:
                self._grudges[a].add(other)
            self._fault("partition", [a, other, "one-way" if one_way else "both"])
        for region in self.regions:
            self._faults(region, {"grudges": sorted(self._grudges[region])})

    def heal(self) -> None:
        for region in self.regions:
            self._faults(region, {"heal": True})
            self._grudges[region] = set()
        self._impairments.clear()
        self._fault("heal")

    def delay(self, source: str, dest: str, latency_ms: float, jitter_ms: float = 0.0, *, bidirectional: bool = True) -> None:
        setting = {"latency_ms": latency_ms, "jitter_ms": jitter_ms}
        self._faults(source, {"latency": {dest: setting}})
        if bidirectional:
            self._faults(dest, {"latency": {source: setting}})
        self._fault("delay", [source, dest, latency_ms, jitter_ms, "both" if bidirectional else "one-way"])

    def impair(self, source: str, dest: str, *, bidirectional: bool = True, **faults: Any) -> None:
        faults = check_impairments(faults)
        for a, b in ((source, dest), (dest, source)) if bidirectional else ((source, dest),):
            # A region replaces a peer's link faults as a whole: send the link's accumulated ones, as the
            # simulated network adds a fault to the link's current settings.
            merged = self._impairments.setdefault((a, b), {})
            merged.update(faults)
            self._faults(a, {"links": {b: dict(merged)}})
        self._fault("impair", [source, dest, faults, "both" if bidirectional else "one-way"])

    def skew(self, region: str, seconds: float) -> None:
        self._faults(region, {"clock_offset_ms": seconds * 1000})
        self._fault("skew", seconds, region)

    def crash(self, region: str) -> None:
        self._supervisor(region, "crash")
        self._fault("crash", None, region)

    def restart(self, region: str) -> None:
        self._supervisor(region, "restart")
        if self._grudges[region]:
            self._faults(region, {"grudges": sorted(self._grudges[region])})
        self._fault("restart", None, region)
