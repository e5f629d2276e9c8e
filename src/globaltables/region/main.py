"""One region as an OS process: store + clock + engine behind the aiohttp server, until SIGTERM or SIGINT.

Lifecycle
1. Lock the data dir (one region process per store), open the store (`<data-dir>/region.db`, SQLite in WAL mode;
   without a data dir, the in-memory store, `open_store`), load the tables, build the engine.
2. Listen. Only once the socket is bound does the process announce itself: one JSON line on stdout
   (`{"region": ..., "endpoint": ...}`, with the port actually bound, so `--port 0` works) and, if asked, the same
   JSON in a ready file, written atomically so a poller never reads half of it.
3. SIGTERM or SIGINT: stop accepting, stop the background work (one task owner for the server's lifetime: the
   replication host, the front's idle sweep), let in-flight requests finish (bounded), close the store, exit 0.
   A write acknowledged before that is already durable: every commit is, so `kill -9` loses nothing acknowledged.
   Writes are committed in groups (group_commit.py): a write is acknowledged only once its group committed.
"""

from __future__ import annotations

import asyncio
import fcntl
import gc
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from ..engine.engine import Engine
from ..engine.storage.memory_store import MemoryStore
from ..engine.storage.sqlite_store import SqliteStore
from ..runtime.clock import SystemClock
from ..runtime.task_owner import task_owner
from . import capacity_metrics
from .app import (
    DYNAMODB_ANSWER,
    DYNAMODB_ANSWER_MANY,
    DYNAMODB_ANSWER_SOON,
    FAILED_ANSWER,
    make_app,
    make_runner,
    metrics_route,
)
from .group_commit import GroupCommit
from .host_base import RegionHost
from .http_front import HttpFront
from .replication_host import ReplicationSettings
from .signing import AccessKey, RequestSigning

log = logging.getLogger("globaltables.region")

DATABASE_FILE = "region.db"
LOCK_FILE = "LOCK"
# In-flight requests get this long to finish after SIGTERM; idle keep-alive connections are closed at once.
SHUTDOWN_GRACE_S = 5.0
# The cyclic garbage collector's youngest-generation threshold (CPython's default: 700 allocations). A request or
# a replicated batch allocates thousands of short-lived dicts and lists, few of them in cycles; at the default, a
# backlog's apply spent some 15-25 % of its CPU in collections (measured in-process on 40,000 records: 1.16-1.54 s
# against 1.02-1.05 s with the collector off). Reference counting frees nearly everything anyway.
GC_YOUNG_THRESHOLD = 50_000


@dataclass(frozen=True)
class RegionConfig:
    name: str
    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path | None = None  # None keeps everything in memory
    ready_file: Path | None = None
    ttl_sweep_interval_s: float = 30.0  # TTL sweep and stream retention trim (app.py `expiry_work`)
    stream_retention_s: float = 24 * 3600.0
    # A region of a topology (globaltables region --topology): replication links, HLC, declared global tables,
    # control API. None: a standalone region whose writes carry no versions.
    replication: ReplicationSettings | None = None
    # Access key id -> AccessKey (region/signing.py): every request's signature is verified. None: any well-formed
    # signature of this region and the current time is accepted.
    credentials: Mapping[str, AccessKey] | None = field(default=None, repr=False)
    # "modelled": tables throttle as DynamoDB's do; "unlimited": never (engine/throughput.py, docs/capacity.md; an
    # MRSC topology's regions as decision 21 says).
    capacity: str = "modelled"


class DataDirInUse(OSError):
    pass


def lock_data_dir(data_dir: Path) -> int:
    """Hold an exclusive lock on the data dir for the life of the process; its file descriptor.

    Two regions on one store would each trust their own cached table definitions and interleave writes that
    replication will number per region. The kernel drops the lock when the process dies, even by SIGKILL, so a
    crashed region never blocks its restart.
    """
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DataDirInUse(f"data dir {data_dir} is in use by another region process") from None
    return fd


def open_store(config: RegionConfig) -> SqliteStore | MemoryStore:
    """The region's store: SQLite in WAL mode in the data dir; without one, nothing survives the process anyway,
    so the store the simulator runs on (plain Python structures, held to the same contract by
    tests/engine/test_store_contract.py), which serves a request in well under SQLite's cost (a PutItem in about
    60 % of the CPU, SQLite's statements being a third of the request) at about 0.6 KiB of memory per item of 200
    bytes, where SQLite in memory took 0.4 KiB."""
    if config.data_dir is None:
        return MemoryStore()
    return SqliteStore(config.data_dir / DATABASE_FILE, exclusive=True)  # the data dir is locked to this process


def endpoint_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def announce(config: RegionConfig, endpoint: str) -> None:
    line = json.dumps({"region": config.name, "endpoint": endpoint})
    if config.ready_file is not None:
        temporary = config.ready_file.with_name(config.ready_file.name + ".tmp")
        temporary.write_text(line + "\n")
        os.replace(temporary, config.ready_file)
    print(line, flush=True)


async def serve(config: RegionConfig) -> None:
    lock = None
    if config.data_dir is not None:
        config.data_dir.mkdir(parents=True, exist_ok=True)
        lock = lock_data_dir(config.data_dir)
    try:
        await serve_store(config)
    finally:
        if lock is not None:
            os.close(lock)


async def serve_store(config: RegionConfig) -> None:
    store = open_store(config)
    try:
        host = None
        committer = None
        if config.replication is None:
            engine = Engine(
                store,
                SystemClock(),
                region=config.name,
                stream_retention_s=config.stream_retention_s,
                capacity=config.capacity,
            )
            committer = GroupCommit(engine)
            app = make_app(
                engine,
                ttl_sweep_interval_s=config.ttl_sweep_interval_s,
                # as a topology's regions, and the group commits
                routes=[metrics_route(lambda: capacity_metrics.prometheus_text(engine) + committer.prometheus())],
                signing=signing_of(config, engine),
            )
        else:
            engine, app, host = replicated_region(config, store)
            committer = getattr(host, "committer", None)
        runner = make_runner(app, access_log=None, shutdown_timeout=SHUTDOWN_GRACE_S)
        await runner.setup()
        # The HTTP front answers plain DynamoDB requests itself and hands every other connection to the runner's
        # aiohttp server (http_front.py).
        assert runner.server is not None
        front = HttpFront(runner.server, app.get(DYNAMODB_ANSWER), app.get(DYNAMODB_ANSWER_SOON),
                          committer=committer, failed_answer=app.get(FAILED_ANSWER),
                          answer_many=app.get(DYNAMODB_ANSWER_MANY))  # fmt: skip
        # What start-up built (modules, tables, the app) lives as long as the process: out of the collector's sight.
        gc.collect()
        gc.freeze()
        loop = asyncio.get_running_loop()
        server = None
        try:
            # The server's lifetime owns its background work: the front's idle sweep and the replication host
            # (links, poller, membership, peers-file watcher). Leaving the block cancels and awaits them all, so
            # the replication sockets, inbound ones included, are closed before aiohttp waits for in-flight
            # handlers: otherwise every SIGTERM would wait out the whole shutdown grace period.
            async with task_owner() as lifetime:
                lifetime.start(front.sweep_idle(), name="http-front-sweep")
                if host is not None:
                    lifetime.start(host.run(), name="replication-host")
                server = await loop.create_server(front, config.host, config.port, backlog=1024, reuse_address=True)
                host_name, port = bound_address(server)
                endpoint = endpoint_url(host_name, port)
                # DescribeEndpoints names this address, so SDKs with endpoint discovery stay on the testbed.
                engine.endpoint_address = endpoint.split("://", 1)[1]
                stop = asyncio.Event()
                for signum in (signal.SIGTERM, signal.SIGINT):
                    loop.add_signal_handler(signum, stop.set)
                announce(config, endpoint)
                log.info("region %s listening on %s:%d", config.name, host_name, port)
                await stop.wait()
                log.info("region %s stopping", config.name)
                server.close()  # stop accepting
        finally:
            if server is not None:
                server.close()
            front.close()
            await runner.cleanup()
    finally:
        store.close()


def replicated_region(config: RegionConfig, store: SqliteStore | MemoryStore) -> tuple[Engine, web.Application, RegionHost]:
    """The engine of a topology's region (versions from its HLC), its app with the replication and control routes,
    and the replication host (declared tables made global before serving), whose `run()` is the links and poller
    for as long as the region serves."""
    from . import control
    from .replication_host import ReplicationHost, make_clocks, versions_for

    settings = config.replication
    assert settings is not None
    if settings.mode == "mrsc":
        from .mrsc_host import strong_region

        return strong_region(config, store)
    clock, hlc = make_clocks(settings)
    engine = Engine(
        store,
        clock,
        region=config.name,
        stream_retention_s=config.stream_retention_s,
        versions=versions_for(hlc, config.name),
        capacity=config.capacity,
    )
    host = ReplicationHost(engine, settings, clock, hlc)
    host.prepare()
    app = make_app(
        engine,
        ttl_sweep_interval_s=config.ttl_sweep_interval_s,
        routes=[host.transport.route(), *control.routes(host)],
        signing=signing_of(config, engine),
    )
    return engine, app, host


def signing_of(config: RegionConfig, engine: Engine) -> RequestSigning:
    """The region's signature checks, by the engine's clock (the region's own, skewed when chaos says so)."""
    return RequestSigning(config.name, engine.clock, config.credentials)


def bound_address(server: asyncio.AbstractServer) -> tuple[str, int]:
    assert server.sockets
    for sock in server.sockets:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            host, port = sock.getsockname()[:2]
            return host, port
    raise RuntimeError("the region is not listening on an IP socket")


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # uvloop is a speed-up, not a requirement (it does not exist on every platform)
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(config: RegionConfig) -> int:
    """Run the region until SIGTERM/SIGINT; the process exit code."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)
    try:
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            runner.run(serve(config))
    except OSError as error:  # cannot listen (port taken, address not local) or cannot open the data dir
        print(f"globaltables region {config.name}: {error}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:  # Ctrl-C before the signal handlers were installed
        return 130
    return 0
