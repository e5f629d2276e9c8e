"""`globaltables up TOPOLOGY.yaml`: start every region of a topology as its own OS process and keep them running.

Lifecycle
1. Lock the state dir (default `./.globaltables/<topology name>/`): `up.lock` holds the supervisor's PID under an
   flock, so a second `up` on the same dir is refused while the first lives (the kernel drops the lock when it dies,
   even by SIGKILL, so a crashed supervisor never blocks the next one).
2. The shared secret: the topology's `secret_file`, else `$GLOBALTABLES_SECRET` (regions inherit the environment),
   else `<dir>/secret`, generated once (secrets.token_hex, mode 0600) and reused on later runs. Regions get the
   file's path, never the secret on their command line (which `ps` shows to every user).
   `up --only A,B` starts just those regions on this host (docs/beyond-one-machine.md): the others run elsewhere,
   so every region of the topology must be placed (an `endpoint`, or a host and a fixed port) for peers to find
   each other, and the secret must be shared (a secret_file or the variable, not a generated one).
3. Start one `globaltables region --topology T --name R --port P --data-dir <dir>/<R> --ready-file ...
   --secret-file ... --peers-file <dir>/state.json` per region, each in its own session (a terminal's Ctrl-C
   reaches only the supervisor, which then stops them in order), stdout and stderr to `<dir>/logs/<R>.log` (never
   a pipe: a full pipe would block a region). P is the topology's port, or 0: the region binds a free port and
   reports it in its ready file. A region creates the declared tables as global tables before it announces itself.
4. Write `state.json` (atomically): the supervisor's PID and control URL, and per region its endpoint, port, PID,
   role, data dir and log. Regions poll this file for their peers' endpoints and connect their replication links;
   the supervisor waits (bounded) until every link is up.
5. Print one JSON line per region (`{"region", "endpoint", "role"}`), then `{"ready": true}` — the only output on
   stdout — and run until SIGINT or SIGTERM; then stop every process it started, by PID (SIGTERM, SIGKILL after a
   grace period).

The supervisor's control API (same secret, header `x-globaltables-secret`) performs process faults so that a region
comes back with its port, data dir and arguments: `POST /control/regions/<name>/<action>` with action `crash`
(SIGKILL), `stop` (SIGTERM), `restart` (start again; after a crash or stop), `pause` (SIGSTOP), `resume` (SIGCONT);
`GET /control/status`. It never restarts a region on its own: a crash stays a crash until someone asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import aiohttp
from aiohttp import web

import globaltables

from ..region.control_client import AsyncControlClient, ControlError
from ..region.http_transport import secret_offered
from ..runtime.task_owner import task_owner
from ..topology.load import TopologyError
from ..topology.model import Region, Topology, is_loopback
from ..topology.secret import SECRET_ENV, SecretError, read_secret, topology_secret
from .topology import load_topology

log = logging.getLogger("globaltables.supervisor")

LOCK_FILE = "up.lock"
STATE_FILE = "state.json"
SECRET_FILE = "secret"
START_TIMEOUT_S = 60.0
LINKS_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
REAP_INTERVAL_S = 0.2
ACTIONS = ("crash", "stop", "restart", "pause", "resume")


class SupervisorError(RuntimeError):
    """`up` cannot proceed; the message says why (printed on stderr, exit code 1)."""


def default_data_dir(topology: Topology) -> Path:
    return Path(".globaltables") / topology.name


# ---------------------------------------------------------------------------------------------- the state dir


def lock_state_dir(data_dir: Path) -> int:
    """Hold `up.lock` (with our PID in it) for the supervisor's life; refuse a dir held by a live `up`."""
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise SupervisorError(
            f"data dir {data_dir} is held by a running `globaltables up` (PID {holder}); stop it first "
            f"(`globaltables down`) or use another --data-dir"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def lock_holder(data_dir: Path) -> int | None:
    """The PID of the live `up` holding `data_dir`, or None when no supervisor holds it."""
    path = data_dir / LOCK_FILE
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 64).decode(errors="replace").strip()
            return int(text) if text.isdigit() else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def ensure_secret(topology: Topology, data_dir: Path) -> Path | None:
    """The secret file regions read: the topology's `secret_file`, or `<dir>/secret` (created once, mode 0600);
    None when the secret comes from $GLOBALTABLES_SECRET, which the regions inherit."""
    if topology.secret_file is not None:
        read_secret(topology.secret_file)  # fail now, with the file named, rather than in every region
        return topology.secret_file
    if topology_secret(topology) is not None:
        return None
    path = data_dir / SECRET_FILE
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(secrets.token_hex(32) + "\n")
    os.chmod(path, 0o600)
    read_secret(path)
    return path


def write_json_atomically(path: Path, value: Any) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
    os.replace(temporary, path)


# ------------------------------------------------------------------------------------------------ one region


@dataclass
class RegionChild:
    region: Region
    topology_path: Path
    data_dir: Path
    secret_file: Path | None
    state_file: Path
    log_path: Path
    ready_dir: Path
    port: int = 0  # the topology's port, or 0 until the first start reports the bound one
    process: subprocess.Popen | None = None
    endpoint: str | None = None
    starts: int = 0
    paused: bool = False
    exits: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.region.name

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self, ready_file: Path) -> list[str]:
        return [
            sys.executable, "-m", "globaltables.cli.main", "region",
            "--topology", str(self.topology_path), "--name", self.name,
            "--host", self.region.bind, "--port", str(self.port),
            "--data-dir", str(self.data_dir), "--ready-file", str(ready_file),
            "--peers-file", str(self.state_file),
            *(["--secret-file", str(self.secret_file)] if self.secret_file is not None else []),
            "--capacity", self.region.capacity,  # the topology's `capacity:` (docs/capacity.md)
        ]  # fmt: skip

    def start(self) -> Path:
        """Start the process (not waiting); the ready file it will write."""
        assert not self.running, f"{self.name} is already running"
        self.starts += 1
        ready_file = self.ready_dir / f"{self.name}.{self.starts}.ready.json"
        ready_file.unlink(missing_ok=True)
        env = dict(os.environ)
        source_root = str(Path(globaltables.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source_root, env.get("PYTHONPATH")]))
        with open(self.log_path, "ab") as log_file:
            log_file.write(f"--- start {self.starts} of {self.name} at {time.strftime('%Y-%m-%dT%H:%M:%S')}\n".encode())
            log_file.flush()
            self.process = subprocess.Popen(
                self.command(ready_file),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        self.paused = False
        return ready_file

    async def wait_ready(self, ready_file: Path, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while not ready_file.exists():
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise SupervisorError(f"region {self.name} exited with {code} while starting:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise SupervisorError(f"region {self.name} not ready after {timeout:.0f} s:\n{self.log_tail()}")
            await asyncio.sleep(0.02)
        announced = json.loads(ready_file.read_text())
        self.endpoint = announced["endpoint"]
        self.port = int(self.endpoint.rsplit(":", 1)[1])  # keep the port across restarts
        return self.endpoint

    def signal(self, signum: int) -> None:
        if self.running:
            assert self.process is not None
            os.kill(self.process.pid, signum)

    async def stop(self, grace: float = STOP_GRACE_S) -> None:
        """SIGTERM (after SIGCONT, in case it is paused), then SIGKILL if it has not exited after `grace`."""
        if not self.running:
            self.reap()
            return
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self.running and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if self.running:
            self.signal(signal.SIGKILL)
            while self.running:
                await asyncio.sleep(0.02)
        self.reap()

    def reap(self) -> None:
        if self.process is not None and self.process.poll() is not None and len(self.exits) < self.starts:
            self.exits.append(self.process.returncode)
            log.info("region %s (PID %d) exited with %s", self.name, self.process.pid, self.process.returncode)

    def state(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "host": self.region.host,
            "port": self.port,
            "pid": self.process.pid if self.process is not None else None,
            "running": self.running,
            "paused": self.paused,
            "role": self.region.role,
            "data_dir": str(self.data_dir),
            "log": str(self.log_path),
            "starts": self.starts,
            "exit_codes": list(self.exits),
        }

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


# ------------------------------------------------------------------------------------------------ supervisor


class Supervisor:
    def __init__(
        self, topology: Topology, topology_path: Path, data_dir: Path, out: IO[str], only: tuple[str, ...] = ()
    ) -> None:
        self.topology = topology
        self.only = only  # the regions this host starts; empty: all of them
        self.topology_path = topology_path.resolve()
        self.data_dir = data_dir.resolve()
        self.out = out
        self.state_file = self.data_dir / STATE_FILE
        self.control_url: str | None = None
        self.children: dict[str, RegionChild] = {}
        self.secret = ""
        self._stop = asyncio.Event()
        self._busy: dict[str, asyncio.Lock] = {}

    # ------------------------------------------------------------------------------------------------ run

    async def run(self) -> int:
        lock = lock_state_dir(self.data_dir)
        runner: web.AppRunner | None = None
        try:
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, self._stop.set)
            self._check_placement()
            secret_file = ensure_secret(self.topology, self.data_dir)
            self.secret = topology_secret(self.topology, secret_file)
            self._prepare_children(secret_file)
            runner = await self._serve_control()
            self.write_state()
            await self._start_all()
            await self._wait_for_links()
            for child in self.children.values():
                self.emit({"region": child.name, "endpoint": child.endpoint, "role": child.region.role})
            self.emit({"ready": True})
            async with task_owner() as tasks:  # the reaper lives until the stop
                tasks.start(self._reap_forever(), name="supervisor-reaper")
                await self._stop.wait()
            return 0
        finally:
            await self._stop_all()
            if runner is not None:
                await runner.cleanup()
            with contextlib.suppress(OSError):
                self.write_state(stopped=True)
            os.close(lock)

    def request_stop(self) -> None:
        """Stop every region and end `run()`, as SIGTERM does (for callers running the supervisor in-process)."""
        self._stop.set()

    def emit(self, line: dict[str, Any]) -> None:
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

    @property
    def local_regions(self) -> tuple[Region, ...]:
        return tuple(region for region in self.topology.regions if not self.only or region.name in self.only)

    def _check_placement(self) -> None:
        """With --only, the regions of other hosts must be reachable where the topology places them, ours at fixed
        ports (peers elsewhere cannot read our state.json), and the secret shared rather than generated here."""
        if not self.only:
            return
        unknown = [name for name in self.only if name not in self.topology.region_names]
        if unknown:
            raise SupervisorError(
                f"--only names {', '.join(unknown)}, not in topology {self.topology.name!r} "
                f"(regions: {', '.join(self.topology.region_names)})"
            )
        unplaced = [region.name for region in self.topology.regions if region.url is None]
        if unplaced:
            raise SupervisorError(
                f"with --only, every region needs a fixed port or an endpoint in the topology so that regions on "
                f"other hosts find it; not placed: {', '.join(unplaced)}"
            )
        if self.topology.secret_file is None and topology_secret(self.topology) is None:
            raise SupervisorError(
                f"with --only, the regions on each host need the same secret: set secret_file in the topology or "
                f"${SECRET_ENV}"
            )

    def _prepare_children(self, secret_file: Path | None) -> None:
        logs = self.data_dir / "logs"
        ready = self.data_dir / "run"
        logs.mkdir(exist_ok=True)
        ready.mkdir(exist_ok=True)
        for region in self.local_regions:
            self.children[region.name] = RegionChild(
                region=region,
                topology_path=self.topology_path,
                data_dir=self.data_dir / region.name,
                secret_file=secret_file.resolve() if secret_file is not None else None,
                state_file=self.state_file,
                log_path=logs / f"{region.name}.log",
                ready_dir=ready,
                port=region.port or 0,
            )
            self._busy[region.name] = asyncio.Lock()

    async def _start_all(self) -> None:
        ready_files = {name: child.start() for name, child in self.children.items()}
        for name, child in self.children.items():
            await child.wait_ready(ready_files[name], START_TIMEOUT_S)
        self.write_state()

    async def _stop_all(self) -> None:
        await asyncio.gather(*(child.stop() for child in self.children.values()), return_exceptions=True)

    async def _reap_forever(self) -> None:
        """Notice regions that died (a SIGKILL from outside, a crash) and record it in state.json."""
        while True:
            await asyncio.sleep(REAP_INTERVAL_S)
            changed = False
            for child in self.children.values():
                before = len(child.exits)
                child.reap()
                changed |= len(child.exits) != before
            if changed:
                self.write_state()

    def write_state(self, stopped: bool = False) -> None:
        write_json_atomically(
            self.state_file,
            {
                "topology": self.topology.name,
                "topology_file": str(self.topology_path),
                "supervisor": {"pid": os.getpid(), "control_url": self.control_url, "running": not stopped},
                "secret_file": next((str(c.secret_file) for c in self.children.values() if c.secret_file), None),
                "regions": {name: child.state() for name, child in self.children.items()},
                # Regions of other hosts (`up --only`): where the topology places them, for peers and callers.
                "elsewhere": {
                    region.name: {"endpoint": region.url, "role": region.role}
                    for region in self.topology.regions
                    if region.name not in self.children
                },
            },
        )

    async def _wait_for_links(self) -> None:
        """Bounded: until every region reports every replication link connected (else go on, with a warning)."""
        deadline = time.monotonic() + LINKS_TIMEOUT_S
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            control = AsyncControlClient(session, self.secret)
            for child in self.children.values():
                while True:
                    try:
                        status = await control.call(child.endpoint, "/control/status", region=child.name)
                        peers = status["transport"]["peers"].values()
                        if all(peer["connected"] for peer in peers):
                            break
                    except (ControlError, KeyError):
                        pass
                    if time.monotonic() > deadline:
                        print(f"warning: replication links of {child.name} not all up yet", file=sys.stderr)
                        return
                    await asyncio.sleep(0.05)

    # ---------------------------------------------------------------------------------------- control API

    async def _serve_control(self) -> web.AppRunner:
        app = web.Application()
        app.add_routes(
            [
                web.get("/control/status", self._guard(self._status)),
                web.post("/control/regions/{name}/{action}", self._guard(self._act)),
            ]
        )
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        # Beside its regions: loopback unless they bind beyond it (then callers on other hosts reach the control
        # API at the first such region's advertised address, through the same secret).
        exposed = next((r for r in self.local_regions if not is_loopback(r.bind)), None)
        site = web.TCPSite(runner, exposed.bind if exposed else "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        host = exposed.host if exposed else "127.0.0.1"
        self.control_url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
        return runner

    def _guard(self, handler):
        secret = self.secret.encode()

        async def check(request: web.Request) -> web.StreamResponse:
            if not secret_offered(request, secret):
                return web.json_response({"error": "the control API requires the topology's shared secret"}, status=401)
            return await handler(request)

        return check

    async def _status(self, _request: web.Request) -> web.Response:
        for child in self.children.values():
            child.reap()
        return web.json_response({"regions": {name: child.state() for name, child in self.children.items()}})

    async def _act(self, request: web.Request) -> web.Response:
        name, action = request.match_info["name"], request.match_info["action"]
        child = self.children.get(name)
        if child is None:
            return web.json_response(
                {"error": f"unknown region {name!r}; regions are {', '.join(self.children)}"}, status=404
            )
        if action not in ACTIONS:
            return web.json_response({"error": f"unknown action {action!r}; use {', '.join(ACTIONS)}"}, status=400)
        async with self._busy[name]:
            try:
                await self.act(child, action)
            except SupervisorError as error:
                return web.json_response({"error": str(error)}, status=409)
        self.write_state()
        return web.json_response({"region": name, **child.state()})

    async def act(self, child: RegionChild, action: str) -> None:
        if action == "crash":
            child.signal(signal.SIGKILL)
            while child.running:
                await asyncio.sleep(0.01)
            child.reap()
        elif action == "stop":
            await child.stop()
        elif action == "restart":
            if child.running:
                raise SupervisorError(f"region {child.name} is running; crash or stop it first")
            child.reap()
            await child.wait_ready(child.start(), START_TIMEOUT_S)
        elif action == "pause":
            child.signal(signal.SIGSTOP)
            child.paused = child.running
        elif action == "resume":
            child.signal(signal.SIGCONT)
            child.paused = False


# -------------------------------------------------------------------------------------------------- commands


def up(
    topology_path: Path, data_dir: Path | None = None, out: IO[str] | None = None, only: tuple[str, ...] = ()
) -> int:
    """Run `globaltables up`; the exit code (0 after a signal, 1 when it could not start, 2 for a bad topology)."""
    try:
        topology = load_topology(topology_path)
    except TopologyError as error:
        for line in error.errors:
            print(line, file=sys.stderr)
        return 2
    data_dir = data_dir if data_dir is not None else default_data_dir(topology)
    supervisor = Supervisor(topology, Path(topology_path), Path(data_dir), out or sys.stdout, only)
    try:
        return asyncio.run(supervisor.run())
    except (SupervisorError, SecretError, OSError) as error:
        print(f"globaltables up: {error}", file=sys.stderr, flush=True)
        return 1


def down(topology_path: Path | None, data_dir: Path | None = None, timeout: float = 60.0) -> int:
    """Stop the `up` holding the state dir (SIGTERM to its PID) and wait until it has released the dir."""
    if data_dir is None:
        if topology_path is None:
            print("globaltables down: give a topology file or --data-dir", file=sys.stderr)
            return 2
        try:
            data_dir = default_data_dir(load_topology(topology_path))
        except TopologyError as error:
            for line in error.errors:
                print(line, file=sys.stderr)
            return 2
    pid = lock_holder(Path(data_dir))
    if pid is None:
        print(f"globaltables down: no running `globaltables up` holds {data_dir}", file=sys.stderr)
        return 1
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while lock_holder(Path(data_dir)) is not None:
        if time.monotonic() > deadline:
            print(f"globaltables down: PID {pid} still running after {timeout:.0f} s", file=sys.stderr)
            return 1
        time.sleep(0.05)
    return 0
