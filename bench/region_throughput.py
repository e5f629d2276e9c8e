"""Throughput and latency of one region through the wire protocol, against moto_server and a trivial aiohttp server.

What it does, in one run, each server its own process on 127.0.0.1 pinned to core 0 (the load generator is pinned
to core 1, so the 2-core machine is split fairly):
 1. For every target (the trivial server, the region in memory, the region on SQLite WAL with --data-dir, and
    moto_server when installed): create a table (pk S, sk S), then three timed phases at 16 concurrent requests:
    PutItem (items of about 200 bytes, 10 per partition), GetItem (random written keys), Query (one random full
    10-item partition per request). Each phase reports ops per wall second, ops per second of server CPU
    (utime+stime of the server process from /proc, because this machine is shared and noisy), p50/p99 latency,
    and the load generator's own CPU share (to show it is not the bottleneck).
 2. The region's resident memory (VmRSS) after loading --items items (default 1,000,000; --quick 50,000, with the
    extrapolation to a million labelled as such), in memory and on SQLite, via BatchWriteItem, 25 items a call.
 3. A table with ratios (region / moto, region / trivial) and the targets, met or not.

The load generator is a raw asyncio HTTP/1.1 client (asyncio.Protocol, keep-alive, one connection per concurrent
request, request bytes pre-framed): boto3 spends about 0.5 ms of CPU per call and could not load a server.
Requests carry a well-formed SigV4 Authorization header dated when they are sent and scoped to the region they
go to (bench/_sigv4.py): the region checks the signing window and the scope; no key store, so no signature.

With --capacity-cost it only compares the region in memory with --capacity unlimited and --capacity modelled (two
processes at once, on a table provisioned at 40,000 RCU / WCU, so nothing throttles): PutItem and GetItem driven at
both in the same measured windows, their CPU per request compared window by window, the windows shared among
--cost-pairs fresh pairs of processes, and the ratio (the target: modelled costs at most 5 % of the throughput).
With --paired-rev REV, the same method compares this tree's region with a checkout of REV (both unlimited).

Usage: python bench/region_throughput.py [--quick] [--duration S] [--items N] [--targets trivial,region,...]
       python bench/region_throughput.py --memory-only [--items N] [--targets region-mem,region-disk]
       python bench/region_throughput.py --capacity-cost [--cost-rounds N] [--cost-pairs P] [--duration S]
       python bench/region_throughput.py --paired-rev REV [--paired-kind region-mem|region-disk] [--cost-rounds N]
       [--baseline-rev REV [--baseline-rounds N]]   (bench/_baseline.py: the same run against a checkout of REV)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import _baseline
import orjson
from _sigv4 import Signer

HERE = Path(__file__).resolve().parent
TABLE = "bench"
CONCURRENCY = 16
COST_CONCURRENCY = 16
PARTITION_ITEMS = 10
SERVER_CORE = 0
CLIENT_CORE = 1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
START_TIMEOUT_S = 60.0
TARGETS = {
    "put": 10_000,  # PutItem ops/s
    "get": 10_000,  # GetItem ops/s
    "query": 5_000,  # Query ops/s
    "vs_moto": 10.0,
    "vs_trivial": 0.5,
    "p99_ms": 10.0,
    "rss_bytes": {"region-mem": 1 << 30, "region-disk": 256 << 20},  # for 1,000,000 items (issue #20)
}
# The performance issue's targets ("durable writes at the HTTP ceiling"), on ops per server-CPU second: a region's
# over the trivial aiohttp server's, per operation, measured in the same run; and each region's own figure beside
# dynalite's class (Node, in memory), which holds on this machine when it is quiet (the trivial server's own
# figure, printed with it, says how quiet it was: about 14,500 puts per CPU second when nothing else runs).
CPU_RATIO_TARGETS = {
    "region-disk": {"PutItem": 1.0, "GetItem": 1.3, "Query": 1.0},
    "region-mem": {"PutItem": 1.2},
}
DYNALITE_CLASS = {"PutItem": 15_000, "GetItem": 20_000, "Query": 9_000}
REGION = "us-east-1"  # the name the region targets serve (and their clients sign for)
PAYLOAD = "x" * 150  # with the keys and a number, an item of about 200 bytes (DynamoDB's size rules)


# ------------------------------------------------------------------------------------------------- HTTP client


class HttpError(Exception):
    pass


class Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection carrying one request at a time; parses Content-Length framed answers
    (and close-delimited ones, for servers that speak HTTP/1.0)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future | None = None
        self.header_end = -1
        self.length = -1
        self.status = 0
        self.closes = False
        self.closed = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._try_complete()

    def _try_complete(self) -> None:
        buffer = self.buffer
        if self.header_end < 0:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            self.header_end = end + 4
            head = bytes(buffer[:end]).decode("latin-1").split("\r\n")
            self.status = int(head[0].split(" ", 2)[1])
            self.length = -1
            self.closes = head[0].startswith("HTTP/1.0")
            for line in head[1:]:
                name, _, value = line.partition(":")
                lower = name.strip().lower()
                if lower == "content-length":
                    self.length = int(value)
                elif lower == "connection":
                    self.closes = value.strip().lower() == "close"
        if self.length < 0:
            return  # close-delimited: completed by connection_lost
        total = self.header_end + self.length
        if len(buffer) < total:
            return
        body = bytes(buffer[self.header_end : total])
        del buffer[:total]
        self.header_end = -1
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result((self.status, body))

    def connection_lost(self, exc) -> None:
        self.closed = True
        waiter, self.waiter = self.waiter, None
        if waiter is None or waiter.done():
            return
        if self.header_end >= 0 and self.length < 0:
            waiter.set_result((self.status, bytes(self.buffer[self.header_end :])))
        else:
            waiter.set_exception(HttpError(f"connection lost: {exc}"))

    def send(self, data: bytes) -> asyncio.Future:
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return self.waiter


class Client:
    """A pool of keep-alive connections to one endpoint of `region`; `call` frames a DynamoDB JSON request, signed
    for that region at the second it is sent."""

    def __init__(self, host: str, port: int, region: str = REGION) -> None:
        self.host, self.port = host, port
        self.signer = Signer(region)
        self.prefixes: dict[str, bytes] = {}  # per operation, the request head up to Content-Length's value
        self.signed_with = b""  # the signature lines the cached heads carry

    def prefix(self, operation: str) -> bytes:
        signature = self.signer.lines()
        if signature is not self.signed_with:  # a new second: the heads are framed again, with the new date
            self.prefixes.clear()
            self.signed_with = signature
        cached = self.prefixes.get(operation)
        if cached is None:
            head = (
                f"POST / HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Content-Type: application/x-amz-json-1.0\r\n"
                f"X-Amz-Target: DynamoDB_20120810.{operation}\r\n"
            ).encode()
            cached = self.prefixes[operation] = head + signature + b"Content-Length: "
        return cached

    async def connect(self) -> Connection:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_connection(Connection, self.host, self.port)
        return protocol

    async def call(self, connection: Connection, operation: str, body: bytes) -> tuple[Connection, int, bytes]:
        """(connection to use next, status, body). Reconnects when the server closed the connection."""
        if connection.closed:
            connection = await self.connect()
        status, answer = await connection.send(
            self.prefix(operation) + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        if connection.closes:
            connection.transport.close()
            connection = await self.connect()
        return connection, status, answer


# --------------------------------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pin_to_server_core() -> None:
    os.sched_setaffinity(0, {SERVER_CORE})


@dataclass
class Server:
    name: str
    command: list[str]
    port: int
    workdir: Path
    process: subprocess.Popen | None = None
    pythonpath: str | None = None  # None: the package under test (_baseline.py); else another tree's (--paired-rev)

    def start(self) -> None:
        log = open(self.workdir / f"{self.name}.log", "wb")
        env = dict(os.environ, PYTHONPATH=self.pythonpath or _baseline.child_pythonpath())
        self.process = subprocess.Popen(
            self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=pin_to_server_core, env=env, cwd=self.workdir,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not listen within {START_TIMEOUT_S} s: {self.log_tail()}")

    def log_tail(self) -> str:
        return (self.workdir / f"{self.name}.log").read_text(errors="replace")[-2000:]

    def cpu_seconds(self) -> float:
        """CPU time of every thread of the server, from the scheduler's own nanosecond count (schedstat's first
        field): utime and stime in /proc/PID/stat are sampled at timer ticks, whole ticks charged to whoever runs
        then, so two servers taking turns on one core in bursts of a few ticks were charged in proportions off by
        several per cent. Falls back to the tick counts where the kernel has no schedstat."""
        tasks = Path(f"/proc/{self.process.pid}/task")
        if not (tasks / str(self.process.pid) / "schedstat").exists():
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15 of stat)
        total = 0
        for task in tasks.iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
                pass
        return total / 1e9

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)


def make_server(kind: str, workdir: Path, capacity: str = "unlimited") -> Server:
    port = free_port()
    python = sys.executable
    if kind == "trivial":
        command = [python, str(HERE / "trivial_server.py"), "--port", str(port)]
    elif kind == "moto":
        command = [python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    else:
        storage = ["--in-memory"] if kind == "region-mem" else ["--data-dir", str(workdir / f"{kind}-data")]
        command = [
            python, "-m", "globaltables.cli.main", "region", "--name", REGION, "--host", "127.0.0.1",
            "--port", str(port), "--log-level", "WARNING", *storage,
            # The server's own speed: closed-loop clients would exceed a new on-demand table's 4,000 WRU/s. The
            # capacity-cost comparison runs "modelled" too, on a table provisioned far above the load.
            *capacity_flag(capacity),
        ]
    return Server(kind, command, port, workdir)


def capacity_flag(capacity: str) -> list[str]:
    """`--capacity CAPACITY` when the package under test models capacity at all: a `--baseline-rev` from before
    capacity was modelled has no such flag (and never throttles anyway)."""
    cli = _baseline.source_tree() / "globaltables" / "cli" / "main.py"
    return ["--capacity", capacity] if '"--capacity"' in cli.read_text() else []


def moto_available() -> bool:
    try:
        import moto.server  # noqa: F401
    except Exception:
        return False
    return True


# ------------------------------------------------------------------------------------------------------ bodies


def item_key(i: int) -> tuple[str, str]:
    return f"p{i // PARTITION_ITEMS:09d}", f"s{i % PARTITION_ITEMS:02d}"


def item(i: int) -> dict:
    pk, sk = item_key(i)
    return {"pk": {"S": pk}, "sk": {"S": sk}, "data": {"S": PAYLOAD}, "n": {"N": str(i)}}


def put_body(i: int) -> bytes:
    return orjson.dumps({"TableName": TABLE, "Item": item(i)})


def get_body(i: int) -> bytes:
    pk, sk = item_key(i)
    return orjson.dumps({"TableName": TABLE, "Key": {"pk": {"S": pk}, "sk": {"S": sk}}})


def query_body(partition: int) -> bytes:
    return orjson.dumps(
        {
            "TableName": TABLE,
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": f"p{partition:09d}"}},
        }
    )


CREATE_TABLE = orjson.dumps(
    {
        "TableName": TABLE,
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "BillingMode": "PAY_PER_REQUEST",
    }
)


# ------------------------------------------------------------------------------------------------------ phases


@dataclass
class PhaseResult:
    operation: str
    ops: int = 0
    errors: int = 0
    first_error: str = ""
    wall_s: float = 0.0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    latencies_ns: list[int] = field(default_factory=list)

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.wall_s if self.wall_s else 0.0

    @property
    def ops_per_cpu_s(self) -> float:
        return self.ops / self.server_cpu_s if self.server_cpu_s else 0.0

    def percentile_ms(self, q: float) -> float:
        if not self.latencies_ns:
            return float("nan")
        ordered = sorted(self.latencies_ns)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6


async def run_phase(
    client: Client, connections: list[Connection], server: Server, operation: str, make_body, warmup_s: float,
    duration_s: float,
) -> PhaseResult:
    """Drive `operation` from every connection for warmup + duration; only the measured window counts."""
    result = PhaseResult(operation)
    loop = asyncio.get_running_loop()
    start = loop.time()
    measure_from = start + warmup_s
    end = measure_from + duration_s
    marks: dict[str, tuple[float, float, float]] = {}
    perf = time.perf_counter_ns

    def mark(name: str) -> None:
        marks[name] = (time.perf_counter(), server.cpu_seconds(), time.process_time())

    async def marker() -> None:
        await asyncio.sleep(max(0.0, measure_from - loop.time()))
        mark("from")
        await asyncio.sleep(max(0.0, end - loop.time()))
        mark("to")

    async def worker(slot: int) -> None:
        connection = connections[slot]
        while True:
            now = loop.time()
            if now >= end:
                break
            body = make_body()
            t0 = perf()
            connection, status, answer = await client.call(connection, operation, body)
            t1 = perf()
            if now >= measure_from and loop.time() <= end:
                if status == 200:
                    result.ops += 1
                    result.latencies_ns.append(t1 - t0)
                else:
                    result.errors += 1
                    result.first_error = result.first_error or f"{status} {answer[:200]!r}"
            elif status != 200 and not result.first_error:
                result.first_error = f"{status} {answer[:200]!r}"
        connections[slot] = connection

    await asyncio.gather(marker(), *(worker(i) for i in range(len(connections))))
    (w0, s0, c0), (w1, s1, c1) = marks["from"], marks["to"]
    result.wall_s, result.server_cpu_s, result.client_cpu_s = w1 - w0, s1 - s0, c1 - c0
    return result


async def call_ok(client: Client, connection: Connection, operation: str, request: dict) -> dict:
    _, status, answer = await client.call(connection, operation, orjson.dumps(request))
    if status != 200:
        raise RuntimeError(f"{operation} failed: {status} {answer[:300]!r}")
    return orjson.loads(answer)


# The capacity-cost comparison's table: provisioned at the per-table quota, so 54 partitions of 1,000 WCU / 3,000 RCU
# and 40,000 units a second serve the closed-loop load without a throttle, in both settings alike.
CREATE_PROVISIONED_TABLE = orjson.dumps(
    {
        **{k: v for k, v in orjson.loads(CREATE_TABLE).items() if k != "BillingMode"},
        "ProvisionedThroughput": {"ReadCapacityUnits": 40000, "WriteCapacityUnits": 40000},
    }
)


async def create_table(client: Client, body: bytes = CREATE_TABLE) -> None:
    connection = await client.connect()
    _, status, answer = await client.call(connection, "CreateTable", body)
    if status != 200:
        raise RuntimeError(f"CreateTable failed: {status} {answer[:300]!r}")
    for _ in range(600):  # bounded: a minute at most
        table = (await call_ok(client, connection, "DescribeTable", {"TableName": TABLE}))["Table"]
        if table["TableStatus"] == "ACTIVE":
            break
        await asyncio.sleep(0.1)
    connection.transport.close()


async def bench_target(server: Server, warmup_s: float, duration_s: float) -> list[PhaseResult]:
    client = Client("127.0.0.1", server.port)
    await create_table(client)
    connections = [await client.connect() for _ in range(CONCURRENCY)]
    counter = itertools.count()
    put = await run_phase(client, connections, server, "PutItem", lambda: put_body(next(counter)), warmup_s, duration_s)
    written = next(counter)  # every index below this was put (a few may have failed; they count as errors)
    partitions = max(1, written // PARTITION_ITEMS)
    randrange = random.randrange
    get = await run_phase(
        client, connections, server, "GetItem", lambda: get_body(randrange(written)), warmup_s, duration_s
    )
    query = await run_phase(
        client, connections, server, "Query", lambda: query_body(randrange(partitions)), warmup_s, duration_s
    )
    # Check the Query answers are what they claim: full 10-item partitions.
    sample = await call_ok(client, connections[0], "Query", orjson.loads(query_body(0)))
    if sample.get("Count") != PARTITION_ITEMS:
        query.first_error = query.first_error or f"a partition returned {sample.get('Count')} items, not 10"
    for connection in connections:
        if connection.transport is not None:
            connection.transport.close()
    return [put, get, query]


async def capacity_cost(args) -> int:
    """What modelled capacity costs a region's put and get throughput: two region-mem processes, --capacity
    unlimited and modelled, both pinned to the server core, each with the provisioned table; then --cost-rounds
    rounds of a PutItem phase (then of a GetItem phase) driven at both at once, 16 connections each, over the same
    measured window. Whatever else the machine runs meanwhile falls on both processes alike, so the ratio of their
    CPU per request in one round is the cost of the model, not of the moment.

    Why --cost-pairs fresh pairs of processes, the rounds shared among them: the windows of one pair agree closely
    (quartiles within half a per cent), but pairs started anew differ by a per cent or two either way, the same code
    in both, as each process's memory layout falls out differently. One pair's median is that pair's figure; the
    median over every window of every pair is the model's, and it must stay within 5 %. Per setting also:
    operations over server CPU seconds, summed over all rounds."""

    def servers(workdir: Path) -> dict[str, Server]:
        made = {capacity: make_server("region-mem", workdir, capacity) for capacity in ("unlimited", "modelled")}
        for capacity, server in made.items():
            server.name = f"region-mem-{capacity}"
        return made

    worst = await _shared_windows(args, servers, "capacity cost", ("unlimited", "modelled"), target=5.0)
    return 0 if worst is not None else 1


async def paired_trees(args) -> int:
    """This tree's region against a checkout of --paired-rev, by the method of `capacity_cost` (both processes at
    once on the server core, --capacity unlimited, PutItem then GetItem windows shared between them, over
    --cost-pairs fresh pairs): a difference of a few per cent between two commits, which sequential runs on this
    noisy machine cannot see (`--baseline-rev` measures one tree after the other). The kind of region is
    --paired-kind (region-mem or region-disk)."""
    with _baseline.checkout(args.paired_rev) as tree:
        kind = args.paired_kind

        def servers(workdir: Path) -> dict[str, Server]:
            made = {}
            for side in ("baseline", "current"):
                (workdir / side).mkdir()
                made[side] = make_server(kind, workdir / side, "unlimited")
                made[side].name = f"{kind}-{side}"
            inherited = os.environ.get("PYTHONPATH")
            made["baseline"].pythonpath = os.pathsep.join(filter(None, [str(tree / "src"), inherited]))
            return made

        print(f"paired: {kind}, current {_baseline.source_tree()} against {args.paired_rev} ({tree})", flush=True)
        await _shared_windows(args, servers, "paired", ("baseline", "current"), target=None)
    return 0


async def _shared_windows(args, servers, title: str, labels: tuple[str, str], target: float | None) -> float | None:
    """Run `servers(workdir)` ({label: Server} for the two `labels`, reference first) through --cost-rounds shared
    windows over --cost-pairs fresh pairs and print, per operation, each side's ops per CPU second and the median
    ratio second / first of CPU per request. With a `target` (per cent), whether the worst operation is within it;
    returns the worst, or None when a side answered errors."""
    reference, candidate = labels
    totals = {(label, operation): [0, 0.0] for label in labels for operation in ("PutItem", "GetItem")}
    # Per pair, per round: the ratio of the two sides' CPU per request over one shared window.
    pairs: list[dict[str, list[float]]] = []
    errors: dict[str, str] = {}
    count = max(1, args.cost_pairs)
    rounds = [args.cost_rounds // count + (n < args.cost_rounds % count) for n in range(count)]
    for pair_rounds in rounds:
        if pair_rounds:
            pairs.append(await _cost_pair(args, servers, labels, pair_rounds, totals, errors))
    worst = 0.0
    for operation in args.cost_operations:
        rates = {}
        for label in labels:
            ops, cpu = totals[(label, operation)]
            rates[label] = ops / cpu if cpu else 0.0
        ratios = sorted(ratio for pair in pairs for ratio in pair[operation])
        cost = (_median(ratios) - 1.0) * 100.0
        worst = max(worst, cost)
        each = ", ".join(f"{(_median(pair[operation]) - 1.0) * 100.0:+.1f}" for pair in pairs)
        print(
            f"{title} {operation:<7} {reference} {fmt_rate(rates[reference])} ops/cpu-s  {candidate} "
            f"{fmt_rate(rates[candidate])} ops/cpu-s  ratio {candidate}/{reference} "
            f"{rates[candidate] / rates[reference]:.3f}  (CPU per request, median of {len(ratios)} shared windows of "
            f"{len(pairs)} process pairs {cost:+.1f} %, quartiles {(ratios[len(ratios) // 4] - 1) * 100:+.1f} / "
            f"{(ratios[(3 * len(ratios)) // 4] - 1) * 100:+.1f} %; per pair {each} %"
            + (f"; target <= {target:g} %)" if target is not None else ")"),
            flush=True,
        )
    for name, error in errors.items():
        print(f"{title}: {name}: {error}", flush=True)
    if target is not None:
        print(f"{title} target (<= {target:g} %): {'met' if worst <= target and not errors else 'NOT met'}", flush=True)
    return None if errors else worst


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


async def _cost_pair(args, servers_of, labels: tuple[str, str], rounds: int, totals: dict, errors: dict):
    """One pair of fresh region processes (`servers_of(workdir)`, one per label) through `rounds` shared windows per
    operation: the ratio second / first label of CPU per request in each window; `totals` and `errors`
    accumulate."""
    workdir = Path(tempfile.mkdtemp(prefix="gt-bench-"))
    servers = servers_of(workdir)
    reference, candidate = labels
    paired: dict[str, list[float]] = {"PutItem": [], "GetItem": []}
    try:
        clients, pools, counters = {}, {}, {}
        for label, server in servers.items():
            server.start()
            clients[label] = Client("127.0.0.1", server.port)
            await create_table(clients[label], CREATE_PROVISIONED_TABLE)
            pools[label] = [await clients[label].connect() for _ in range(args.cost_concurrency)]
            counters[label] = itertools.count()
        randrange = random.randrange
        for operation in ("PutItem", "GetItem"):
            windows = rounds if operation in args.cost_operations else 1  # a GetItem needs items to read
            for _round in range(windows):
                phases = []
                for label in labels:
                    counter = counters[label]
                    if operation == "PutItem":
                        body = lambda counter=counter: put_body(next(counter))
                    else:
                        written = max(1, next(counter))
                        body = lambda written=written: get_body(randrange(written))
                    phases.append(
                        run_phase(
                            clients[label], pools[label], servers[label], operation, body, args.warmup, args.duration
                        )
                    )
                per_request: dict[str, float] = {}
                for label, r in zip(labels, await asyncio.gather(*phases), strict=True):
                    totals[(label, operation)][0] += r.ops
                    totals[(label, operation)][1] += r.server_cpu_s
                    per_request[label] = r.server_cpu_s / r.ops if r.ops else float("inf")
                    if r.errors:
                        errors[f"{label} {operation}"] = f"{r.errors} errors, first {r.first_error}"
                paired[operation].append(per_request[candidate] / per_request[reference])
        for pool in pools.values():
            for connection in pool:
                if connection.transport is not None:
                    connection.transport.close()
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return paired


# ------------------------------------------------------------------------------------------------------ memory


@dataclass
class MemoryResult:
    target: str
    items: int
    seconds: float
    rss_before: int
    rss_after: int
    disk_bytes: int
    first_error: str = ""

    @property
    def per_item(self) -> float:
        return (self.rss_after - self.rss_before) / self.items if self.items else 0.0


async def load_items(server: Server, count: int, use_batch: bool) -> MemoryResult:
    client = Client("127.0.0.1", server.port)
    connections = [await client.connect() for _ in range(CONCURRENCY)]
    rss_before = server.rss_bytes()
    next_index = itertools.count()
    errors: list[str] = []
    started = time.perf_counter()

    async def worker(slot: int) -> None:
        connection = connections[slot]
        while not errors:
            first = next(next_index) * (25 if use_batch else 1)
            if first >= count:
                break
            if use_batch:
                last = min(count, first + 25)
                request = {"RequestItems": {TABLE: [{"PutRequest": {"Item": item(i)}} for i in range(first, last)]}}
                connection, status, answer = await client.call(connection, "BatchWriteItem", orjson.dumps(request))
                if status == 200 and orjson.loads(answer).get("UnprocessedItems"):
                    errors.append("BatchWriteItem left unprocessed items")
            else:
                connection, status, answer = await client.call(connection, "PutItem", put_body(first))
            if status != 200:
                errors.append(f"{status} {answer[:300]!r}")

    await asyncio.gather(*(worker(i) for i in range(CONCURRENCY)))
    seconds = time.perf_counter() - started
    for connection in connections:
        connection.transport.close()
    await asyncio.sleep(0.5)  # let the server settle (freed request buffers) before reading its RSS
    data_dir = server.workdir / f"{server.name}-data"
    disk = sum(p.stat().st_size for p in data_dir.glob("*")) if data_dir.exists() else 0
    return MemoryResult(server.name, count, seconds, rss_before, server.rss_bytes(), disk, errors[0] if errors else "")


async def batch_supported(server: Server) -> bool:
    client = Client("127.0.0.1", server.port)
    connection = await client.connect()
    # The probe writes item 0, which the load writes again: nothing extra is left behind.
    request = {"RequestItems": {TABLE: [{"PutRequest": {"Item": item(0)}}]}}
    _, status, _ = await client.call(connection, "BatchWriteItem", orjson.dumps(request))
    connection.transport.close()
    return status == 200


# ------------------------------------------------------------------------------------------------------ report


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def print_throughput(results: dict[str, list[PhaseResult]]) -> None:
    print()
    print("Throughput at 16 concurrent requests (server on core 0, load generator on core 1)")
    header = f"{'target':<12} {'op':<8} {'ops/s':>9} {'ops/cpu-s':>10} {'p50 ms':>7} {'p99 ms':>7} {'srv cpu':>7} {'cli cpu':>7} {'errors':>6}"
    print(header)
    print("-" * len(header))
    for target, phases in results.items():
        for r in phases:
            print(
                f"{target:<12} {r.operation:<8} {fmt_rate(r.ops_per_s):>9} {fmt_rate(r.ops_per_cpu_s):>10} "
                f"{r.percentile_ms(0.5):>7.2f} {r.percentile_ms(0.99):>7.2f} "
                f"{100 * r.server_cpu_s / r.wall_s if r.wall_s else 0:>6.0f}% "
                f"{100 * r.client_cpu_s / r.wall_s if r.wall_s else 0:>6.0f}% {r.errors:>6}"
            )
            if r.first_error:
                print(f"    first error: {r.first_error}")


def print_ratios(results: dict[str, list[PhaseResult]]) -> None:
    baselines = [b for b in ("moto", "trivial") if b in results]
    regions = [t for t in ("region-mem", "region-disk") if t in results]
    if not baselines or not regions:
        return
    print()
    print("Ratios (ops per wall second; ops per server-CPU second in brackets)")
    for region in regions:
        for baseline in baselines:
            cells = []
            for r, b in zip(results[region], results[baseline]):
                wall = r.ops_per_s / b.ops_per_s if b.ops_per_s else float("inf")
                cpu = r.ops_per_cpu_s / b.ops_per_cpu_s if b.ops_per_cpu_s else float("inf")
                cells.append(f"{r.operation} {wall:.2f}x ({cpu:.2f}x)")
            print(f"  {region} / {baseline:<8} " + "   ".join(cells))


def print_memory(memory: list[MemoryResult], million: int) -> None:
    if not memory:
        return
    print()
    print("Resident memory of the region after loading items of about 200 bytes")
    for m in memory:
        line = (
            f"  {m.target:<12} {m.items:>9,} items in {m.seconds:6.1f} s ({m.items / m.seconds:,.0f} items/s): "
            f"RSS {m.rss_after / 2**20:7.1f} MiB (empty {m.rss_before / 2**20:.1f} MiB, {m.per_item:.0f} B/item)"
        )
        if m.disk_bytes:
            line += f", on disk {m.disk_bytes / 2**20:.1f} MiB"
        print(line)
        if m.items != million:
            estimate = m.rss_before + m.per_item * million
            print(f"  {'':<12} EXTRAPOLATED (not measured) to {million:,} items: about {estimate / 2**20:,.0f} MiB")
        if m.first_error:
            print(f"    load error: {m.first_error}")


def print_targets(results: dict[str, list[PhaseResult]], memory: list[MemoryResult], million: int) -> None:
    print()
    print("Targets (one region process on this machine)")
    for region in ("region-mem", "region-disk"):
        if region not in results:
            continue
        put, get, query = results[region]
        checks = [
            (f"PutItem >= {TARGETS['put']:,}/s", put.ops_per_s >= TARGETS["put"], fmt_rate(put.ops_per_s)),
            (f"GetItem >= {TARGETS['get']:,}/s", get.ops_per_s >= TARGETS["get"], fmt_rate(get.ops_per_s)),
            (f"Query >= {TARGETS['query']:,}/s", query.ops_per_s >= TARGETS["query"], fmt_rate(query.ops_per_s)),
        ]
        for r in (put, get, query):
            p99 = r.percentile_ms(0.99)
            checks.append((f"{r.operation} p99 < {TARGETS['p99_ms']:.0f} ms", p99 < TARGETS["p99_ms"], f"{p99:.2f} ms"))
        for baseline, key in (("moto", "vs_moto"), ("trivial", "vs_trivial")):
            if baseline not in results:
                continue
            for r, b in zip(results[region], results[baseline]):
                ratio = r.ops_per_s / b.ops_per_s if b.ops_per_s else float("inf")
                checks.append((f"{r.operation} >= {TARGETS[key]}x {baseline}", ratio >= TARGETS[key], f"{ratio:.2f}x"))
        print(f"  {region}")
        for label, ok, value in checks:
            print(f"    [{'met' if ok else 'NOT MET':>7}] {label:<28} {value}")
    print_cpu_targets(results)
    for m in memory:
        measured = m.items == million
        value = m.rss_after if measured else m.rss_before + m.per_item * million
        limit = TARGETS["rss_bytes"][m.target]
        ok = value < limit
        note = "measured" if measured else f"extrapolated from {m.items:,}"
        print(f"  {m.target}: [{'met' if ok else 'NOT MET':>7}] RSS < {limit / 2**20:,.0f} MiB for {million:,} items: "
              f"{value / 2**20:,.0f} MiB ({note})")


def print_cpu_targets(results: dict[str, list[PhaseResult]]) -> None:
    """The performance targets on ops per server-CPU second (CPU_RATIO_TARGETS, DYNALITE_CLASS)."""
    trivial = {r.operation: r for r in results.get("trivial", [])}
    for region in ("region-mem", "region-disk"):
        if region not in results:
            continue
        print(f"  {region}, ops per server-CPU second")
        for r in results[region]:
            target = CPU_RATIO_TARGETS[region].get(r.operation)
            b = trivial.get(r.operation)
            if target is not None and b is not None and b.ops_per_cpu_s:
                ratio = r.ops_per_cpu_s / b.ops_per_cpu_s
                label = f"{r.operation} >= {target}x trivial"
                print(f"    [{'met' if ratio >= target else 'NOT MET':>7}] {label:<28} {ratio:.2f}x")
        for r in results[region]:
            floor = DYNALITE_CLASS[r.operation]
            label = f"{r.operation} >= {floor:,} (dynalite)"
            shown = fmt_rate(r.ops_per_cpu_s)
            b = trivial.get(r.operation)
            machine = f" (trivial server: {fmt_rate(b.ops_per_cpu_s)})" if b is not None else ""
            print(f"    [{'met' if r.ops_per_cpu_s >= floor else 'NOT MET':>7}] {label:<28} {shown}{machine}")


# -------------------------------------------------------------------------------------------------------- main


async def run(args) -> int:
    os.sched_setaffinity(0, {CLIENT_CORE})
    workdir = Path(tempfile.mkdtemp(prefix="gt-bench-"))
    kinds = [k.strip() for k in args.targets.split(",") if k.strip()]
    if "moto" in kinds and not moto_available():
        print("moto is not installed: skipping moto_server", flush=True)
        kinds.remove("moto")
    results: dict[str, list[PhaseResult]] = {}
    memory: list[MemoryResult] = []
    try:
        for kind in [] if args.memory_only else kinds:
            server = make_server(kind, workdir)
            print(f"[{kind}] starting: {' '.join(server.command)}", flush=True)
            server.start()
            try:
                results[kind] = await bench_target(server, args.warmup, args.duration)
                for r in results[kind]:
                    print(f"[{kind}] {r.operation}: {fmt_rate(r.ops_per_s)} ops/s, {fmt_rate(r.ops_per_cpu_s)} "
                          f"ops/cpu-s, p99 {r.percentile_ms(0.99):.2f} ms, errors {r.errors}", flush=True)
            finally:
                server.stop()
        if args.items > 0:
            for kind in [k for k in kinds if k.startswith("region")]:
                server = make_server(kind, workdir)
                shutil.rmtree(workdir / f"{kind}-data", ignore_errors=True)
                server.name = kind
                server.start()
                try:
                    await create_table(Client("127.0.0.1", server.port))
                    use_batch = await batch_supported(server)
                    print(f"[{kind}] loading {args.items:,} items with "
                          f"{'BatchWriteItem' if use_batch else 'PutItem'}", flush=True)
                    memory.append(await load_items(server, args.items, use_batch))
                finally:
                    server.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print_throughput(results)
    print_ratios(results)
    print_memory(memory, args.million)
    print_targets(results, memory, args.million)
    _baseline.report(numbers(results, memory))
    return 0


def numbers(results: dict[str, list[PhaseResult]], memory: list[MemoryResult]) -> dict[str, float]:
    """The figures a `--baseline-rev` comparison puts side by side (bench/_baseline.py)."""
    found: dict[str, float] = {}
    for target, phases in results.items():
        for r in phases:
            found[f"{target} {r.operation} ops/s"] = r.ops_per_s
            found[f"{target} {r.operation} ops/cpu-s"] = r.ops_per_cpu_s
            found[f"{target} {r.operation} p99 ms"] = r.percentile_ms(0.99)
    for m in memory:
        found[f"{m.target} rss bytes/item"] = m.per_item
        found[f"{m.target} rss MiB at {m.items:,} items"] = m.rss_after / 2**20
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 s phases, 50,000 items for memory")
    parser.add_argument("--duration", type=float, help="measured seconds per phase (default 5; --quick 1)")
    parser.add_argument("--warmup", type=float, help="unmeasured seconds before each phase (default 1; --quick 0.3)")
    parser.add_argument("--items", type=int, help="items loaded for the memory measurement (default 1,000,000; "
                        "--quick 50,000; 0 skips it)")
    parser.add_argument("--targets", default="trivial,region-mem,region-disk,moto",
                        help="comma-separated: trivial, region-mem, region-disk, moto (default all)")
    parser.add_argument("--memory-only", action="store_true", help="only the memory measurement (no timed phases)")
    parser.add_argument("--capacity-cost", action="store_true",
                        help="only compare region-mem with --capacity modelled and unlimited (put and get)")
    parser.add_argument("--cost-rounds", type=int, default=12,
                        help="shared windows of the settings for --capacity-cost, over all pairs (default 12)")
    parser.add_argument("--cost-pairs", type=int, default=3,
                        help="fresh pairs of region processes the --capacity-cost windows are shared among (default 3)")
    parser.add_argument("--paired-rev", metavar="REV",
                        help="only compare this tree's region with REV's, in shared windows (the --capacity-cost "
                        "method; --cost-rounds, --cost-pairs, --cost-operations apply)")
    parser.add_argument("--paired-kind", choices=["region-mem", "region-disk"], default="region-mem",
                        help="the region --paired-rev compares (default region-mem)")
    parser.add_argument("--cost-operations", type=lambda text: text.split(","), default=["PutItem", "GetItem"],
                        help="operations --capacity-cost reports (default PutItem,GetItem)")
    parser.add_argument("--cost-concurrency", type=int, default=COST_CONCURRENCY,
                        help=f"concurrent requests per server for --capacity-cost (default {COST_CONCURRENCY})")
    _baseline.add_arguments(parser)
    args = parser.parse_args()
    compared = _baseline.baseline_requested(args, __file__)
    if compared is not None:
        return compared
    args.million = 1_000_000
    args.duration = args.duration if args.duration is not None else (1.0 if args.quick else 5.0)
    args.warmup = args.warmup if args.warmup is not None else (0.3 if args.quick else 1.0)
    args.items = args.items if args.items is not None else (50_000 if args.quick else 1_000_000)
    if len(os.sched_getaffinity(0)) < 2 and os.cpu_count() and os.cpu_count() < 2:
        print("warning: fewer than 2 cores; server and client share one", file=sys.stderr)
    if args.paired_rev:
        main_coroutine = paired_trees(args)
    else:
        main_coroutine = capacity_cost(args) if args.capacity_cost else run(args)
    try:
        import uvloop

        return uvloop.run(main_coroutine)
    except ImportError:
        return asyncio.run(main_coroutine)


if __name__ == "__main__":
    sys.exit(main())
