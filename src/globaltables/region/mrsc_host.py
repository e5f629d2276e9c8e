"""The asyncio host of one member of a strong-mode (MRSC) topology: an `MrscNode` driven over the `HttpTransport`,
and the request path that makes client writes wait for the commit protocol (docs/mrsc.md).

Theory of operation (cores step, hosts loop, as region/replication_host.py):
- The node is sans-I/O. Every call into it (`submit_write`, `submit_read`, `on_message`, `poll`) returns envelopes,
  which go to the transport, and may complete client operations, collected with `take_completions()` and handed to
  the futures the waiting requests await. A poller task sleeps until the node's `next_deadline()` (or a wake-up).
- The seam between the synchronous engine and the protocol is `answer` (app.py's `answer_async`): wire checks as
  `wire.answer`, then a write on a strong table is validated by the engine (engine/strong_requests.py), each item
  write submitted to the node, and the request answered only once the node reports the outcome: "ok" (committed
  by a majority), "rwce" (409 ReplicatedWriteConflictException: nothing changed), a ConditionalCheckFailed
  confirmed against the latest version, or 500 InternalServerError after the bounded wait (in doubt, or not
  started). A strongly consistent GetItem syncs first (`submit_read`), a strongly consistent Query or Scan
  range-syncs its item collection or table first (`submit_range_read`), then each reads locally. Everything else
  goes to the engine as usual (eventually consistent reads are local).
- A witness runs the same node (member only, over a store without tables) and answers client data-plane requests
  with ResourceNotFoundException: it serves no table data.
- Before serving, the topology's declared tables exist on every replica and are marked strong (engine/strong.py
  `make_strong`); the node starts by resolving what the store held pending (a restart mid-commit).
- `now` is the unskewed monotonic clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import orjson
from aiohttp import web

from ..engine import strong_requests
from ..engine.engine import Engine
from ..engine.errors import (
    DynamoError,
    InternalServerError,
    ReplicatedWriteConflictException,
    ResourceInUseException,
    ResourceNotFoundException,
    UnknownOperationException,
)
from ..engine.operations import query
from ..engine.storage.sqlite_store import SqliteStore
from ..engine.strong import StrongStore, make_strong
from ..engine.strong_membership import converting
from ..replication.mrsc.config import MrscConfig
from ..replication.mrsc.node import MrscNode
from ..replication.mrsc.witness import MrscWitness
from ..runtime.transport import Envelope
from . import wire
from .host_base import RegionHost
from .http_transport import HttpTransport, LinkDelay
from .replication_host import POLL_FAILURE_PAUSE_S, ReplicationSettings
from .skewed_clock import SkewedClock
from .strong_conversion import StrongConversion

log = logging.getLogger("globaltables.mrsc.host")

# What a witness still answers: nothing of these names a table.
WITNESS_OPERATIONS = frozenset({"ListTables", "DescribeLimits", "DescribeEndpoints"})
# The request waits a little longer than the node's own bounded wait, which always answers first; this only guards
# against a bug leaving a request hanging for ever.
GUARD_S = 1.0
IN_DOUBT = "the write's outcome is not known yet: another Region did not answer in time"
UNAVAILABLE = "this Region cannot reach a quorum of the table's Regions in time"


class MrscHost(RegionHost):
    def __init__(self, engine: Engine, store: SqliteStore, settings: ReplicationSettings, clock: SkewedClock) -> None:
        self.engine = engine
        self.settings = settings
        self.clock = clock
        self.region = engine.region
        self.witness = settings.role == "witness"
        self.baseline_offset_s = clock.offset_s
        self.transport = HttpTransport(
            self.region,
            settings.secret,
            {peer.name: LinkDelay(peer.latency_ms, peer.jitter_ms) for peer in settings.peers},
            {peer.name: peer.endpoint for peer in settings.peers},
        )
        # The other two members, nearest first: the first Sync of a strong read goes there.
        others = [peer.name for peer in sorted(settings.peers, key=lambda peer: (peer.latency_ms, peer.name))]
        self.strong = StrongStore(store, None if self.witness else engine, self.region)
        node_class = MrscWitness if self.witness else MrscNode
        self.config = settings.mrsc or MrscConfig()
        self.node = node_class(self.region, others, self.strong, self.config)
        # Tables made strong through UpdateTable (strong_conversion.py): the topology's three members only.
        engine.strong_membership.configure([self.region, *others], settings.witness)
        self.conversion = None if self.witness else StrongConversion(engine, settings.secret, self.transport.endpoint)
        self.transport.register(self.region, self._on_envelope)
        self._waiting: dict[int, asyncio.Future] = {}
        self._next_op = 0
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._peers_file_mtime: int | None = None
        self.poll_failures = 0
        self.counts = {"writes": 0, "committed": 0, "rwce": 0, "in_doubt": 0, "strong_reads": 0}

    # ------------------------------------------------------------------------------------------ start-up

    def prepare(self) -> None:
        """Before serving: the declared tables present and strong on a replica (a witness holds none)."""
        if not self.witness:
            replicas = sorted(set(self.settings.replicas) | {self.region})
            witness = self.settings.witness
            for request in self.settings.tables:
                name = request["TableName"]
                if name not in self.engine.tables:
                    with contextlib.suppress(ResourceInUseException):
                        self.engine.handle("CreateTable", dict(request))
                table = self.engine.tables[name]
                if table.strong != {"replicas": replicas, "witness": witness}:
                    make_strong(self.engine, name, replicas, witness)
        self._read_peers_file()

    async def lifecycle(self, app: web.Application) -> AsyncIterator[None]:
        """aiohttp cleanup context: the transport, the node (recovery first) and the poller live with the app."""
        await self.transport.start()
        app.on_shutdown.append(self._on_shutdown)
        self._run(self.node.start(time.monotonic()))
        self._tasks.append(asyncio.create_task(self._poller(), name="mrsc-poller"))
        if self.conversion is not None:
            self._tasks.append(asyncio.create_task(self.conversion.run(), name="mrsc-conversion"))
        if self.settings.peers_file is not None:
            self._tasks.append(asyncio.create_task(self._watch_peers_file(), name="mrsc-peers-file"))
        yield
        await self.stop_tasks()

    # ---------------------------------------------------------------------------------------------- driving

    def _run(self, envelopes: list[Envelope]) -> None:
        """Send what a call into the node returned and complete the operations it finished."""
        send = self.transport.send
        for envelope in envelopes:
            send(envelope)
        for op_id, outcome, detail in self.node.take_completions():
            future = self._waiting.pop(op_id, None)
            if future is not None and not future.done():
                future.set_result((outcome, detail))
        self._wake.set()

    def _on_envelope(self, envelope: Envelope) -> None:
        self._run(self.node.on_message(envelope, time.monotonic()))

    async def _poller(self) -> None:
        node = self.node
        wake = self._wake
        while True:
            now = time.monotonic()
            deadline = node.next_deadline()
            if deadline is not None and deadline <= now:
                try:
                    self._run(node.poll(now))
                except Exception:  # keep the region serving; retry after a pause rather than in a hot loop
                    self.poll_failures += 1
                    log.exception("mrsc poll failed")
                    await asyncio.sleep(POLL_FAILURE_PAUSE_S)
                await asyncio.sleep(0)
                continue
            wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(None if deadline is None else deadline - now):
                    await wake.wait()

    async def _await(self, submit, timeout_ms: float) -> tuple[str, Any]:
        """Submit one operation to the node (`submit(op_id, now)`) and wait for its outcome."""
        self._next_op += 1
        op_id = self._next_op
        future = asyncio.get_running_loop().create_future()
        self._waiting[op_id] = future
        self._run(submit(op_id, time.monotonic()))
        try:
            async with asyncio.timeout(timeout_ms / 1000 + GUARD_S):
                return await future
        except TimeoutError:
            self._waiting.pop(op_id, None)
            log.error("mrsc operation %s not completed by the node in time", op_id)
            return "in-doubt", None

    # --------------------------------------------------------------------------------------- the requests

    async def answer(self, headers: Mapping[str, str], query_string: str, raw: bytes) -> tuple[int, bytes]:
        """(status, body) of a DynamoDB request (app.py `answer_async`): `wire.answer`, with strong writes and reads
        waiting for the protocol. Never raises."""
        try:
            request = wire.decode_body(raw)
            service, operation = wire.split_target(headers.get("X-Amz-Target"))
            wire.check_authentication(headers, query_string)
            if self.witness:
                response = self._witness(service, operation, request)
            elif service != wire.DYNAMODB_SERVICE:
                response = self.engine.handle_streams(operation, request)
            elif operation in strong_requests.WRITE_OPERATIONS and strong_requests.touches_strong(
                self.engine, operation, request
            ):
                response = await self._write(operation, request)
            elif (
                operation == "GetItem"
                and isinstance(request, dict)
                and request.get("ConsistentRead") is True
                and strong_requests.strong_table(self.engine, request.get("TableName")) is not None
            ):
                response = await self._strong_get(request)
            elif operation == "BatchGetItem" and self._strong_keys(request):
                response = await self._strong_batch_get(request)
            elif (
                operation in ("Query", "Scan")
                and isinstance(request, dict)
                and request.get("ConsistentRead") is True
                and strong_requests.strong_table(self.engine, request.get("TableName")) is not None
            ):
                response = await self._strong_range(operation, request)
            else:
                response = self.engine.handle(operation, request)
            return 200, orjson.dumps(response)
        except DynamoError as error:
            return wire.error_answer(error)
        except Exception:
            log.exception("internal error answering %s", headers.get("X-Amz-Target"))
            return 500, wire.INTERNAL_ERROR_BODY

    def _witness(self, service: str, operation: str, request: Any) -> dict:
        if service == wire.DYNAMODB_SERVICE and operation in WITNESS_OPERATIONS:
            return self.engine.handle(operation, request)
        if service != wire.DYNAMODB_SERVICE:
            raise UnknownOperationException(f"{operation} is not served by a witness Region")
        raise ResourceNotFoundException("Requested resource not found")

    async def _write(self, operation: str, request: dict) -> dict:
        engine = self.engine
        plan = strong_requests.prepare(engine, operation, request)
        rest = engine.handle("BatchWriteItem", plan.rest) if plan.rest is not None else None
        self.counts["writes"] += 1
        outcomes = await asyncio.gather(
            *(
                self._await(
                    lambda op_id, now, w=write: self.node.submit_write(op_id, w.table, w.key, w.evaluate, now),
                    self.config.write_timeout_ms,
                )
                for write in plan.writes
            )
        )
        images = []
        failure: DynamoError | None = None
        for outcome, detail in outcomes:
            if outcome == "ok":
                images.append(detail)
                continue
            if outcome == "rwce":
                self.counts["rwce"] += 1
                error: DynamoError = ReplicatedWriteConflictException()
            elif outcome == "error" and isinstance(detail, DynamoError):
                error = detail
            elif outcome == "in-doubt":
                self.counts["in_doubt"] += 1
                error = InternalServerError(IN_DOUBT)
            else:  # "timeout" (never proposed: not applied) or retries exhausted
                error = InternalServerError(UNAVAILABLE)
            # The most telling failure wins: a condition or a conflict is definite, a 500 says less.
            if failure is None or (failure.status == 500 and error.status != 500):
                failure = error
        if failure is not None:
            raise failure
        self.counts["committed"] += 1
        return strong_requests.respond(engine, plan, images, rest)

    async def _strong_get(self, request: dict) -> dict:
        engine = self.engine
        engine.handle("GetItem", request)  # every check of the request, before the round trip
        table = engine.tables[request["TableName"]]
        if converting(table):  # empty, and nothing is written anywhere until the conversion is done
            return engine.handle("GetItem", request)
        _pk, _sk, key = table.key.key_from_request(request["Key"])
        self.counts["strong_reads"] += 1
        outcome, _detail = await self._await(
            lambda op_id, now: self.node.submit_read(op_id, table.name, key, now), self.config.read_timeout_ms
        )
        if outcome != "ok":
            raise InternalServerError(UNAVAILABLE)
        return engine.handle("GetItem", request)

    async def _strong_range(self, operation: str, request: dict) -> dict:
        """A strongly consistent Query or Scan: the item collection (Query) or the whole table (Scan, every
        segment) is range-synced with another member first (replication/mrsc/range_read.py), then read locally:
        linearizable per item, not a snapshot across items."""
        engine = self.engine
        engine.handle(operation, request)  # every check of the request, before the round trips
        table = engine.tables[request["TableName"]]
        if converting(table):  # empty, and nothing is written anywhere until the conversion is done
            return engine.handle(operation, request)
        partition = query.partition_of(engine, request) if operation == "Query" else None
        self.counts["strong_reads"] += 1
        outcome, _detail = await self._await(
            lambda op_id, now: self.node.submit_range_read(op_id, table.name, partition, now),
            self.config.read_timeout_ms,
        )
        if outcome != "ok":
            raise InternalServerError(UNAVAILABLE)
        return engine.handle(operation, request)

    def _strong_keys(self, request: Any) -> list[tuple[str, dict]]:
        """(table, key) of every strongly consistent read of a BatchGetItem on a strong table (unvalidated: a
        malformed request yields what it can, and the engine's checks refuse it)."""
        items = request.get("RequestItems") if isinstance(request, dict) else None
        if not isinstance(items, dict):
            return []
        out = []
        for name, spec in items.items():
            table = strong_requests.strong_table(self.engine, name)
            if table is None or converting(table) or not isinstance(spec, dict) or spec.get("ConsistentRead") is not True:
                continue
            for key in spec.get("Keys") or ():
                if isinstance(key, dict):
                    out.append((name, key))
        return out

    async def _strong_batch_get(self, request: dict) -> dict:
        """BatchGetItem with ConsistentRead: every key of a strong table synced (in parallel, one Sync each) before
        the whole batch reads locally; linearizable per item, like GetItem (not a snapshot across items)."""
        engine = self.engine
        engine.handle("BatchGetItem", request)  # every check of the request, before the round trips
        reads = []
        for name, raw_key in self._strong_keys(request):
            _pk, _sk, key = engine.tables[name].key.key_from_request(raw_key)
            reads.append((name, key))
        self.counts["strong_reads"] += 1
        outcomes = await asyncio.gather(
            *(
                self._await(
                    lambda op_id, now, t=name, k=key: self.node.submit_read(op_id, t, k, now),
                    self.config.read_timeout_ms,
                )
                for name, key in reads
            )
        )
        if any(outcome != "ok" for outcome, _detail in outcomes):
            raise InternalServerError(UNAVAILABLE)
        return engine.handle("BatchGetItem", request)

    # ------------------------------------------------------------------------------------------------ wakeups

    def wake(self) -> None:
        self._wake.set()

    # ----------------------------------------------------------------------------------------------- status

    def status(self) -> dict[str, Any]:
        return {
            "region": self.region,
            "mode": "mrsc",
            "role": self.settings.role,
            "clock_offset_ms": round(self.clock.offset_s * 1000.0, 3),
            "clock": self.clock.status(),
            "poll_failures": self.poll_failures,
            "requests": dict(self.counts),
            "waiting": len(self._waiting),
            "mrsc": {key: value for key, value in self.node.status().items() if key != "region"},
            "pending": len(self.strong.all_pending()),
            "conversions": None if self.conversion is None else self.conversion.status(),
            "links": [],
            "transport": self.transport.status(),
        }

    def prometheus(self) -> str:
        lines = ["# TYPE globaltables_mrsc_requests_total counter"]
        for name, value in self.counts.items():
            lines.append(f'globaltables_mrsc_requests_total{{region="{self.region}",kind="{name}"}} {value}')
        return "\n".join(lines) + "\n"


def strong_region(config: Any, store: SqliteStore) -> tuple[Engine, web.Application]:
    """The engine and app of a strong-mode topology's region (region/main.py `replicated_region`)."""
    from . import control
    from .app import make_app

    settings = config.replication
    clock = SkewedClock(offset_s=settings.clock_offset_ms / 1000.0)
    engine = Engine(store, clock, region=config.name, stream_retention_s=config.stream_retention_s)
    host = MrscHost(engine, store, settings, clock)
    host.prepare()
    app = make_app(
        engine,
        ttl_sweep_interval_s=config.ttl_sweep_interval_s,
        routes=[host.transport.route(), *control.routes(host)],  # type: ignore[arg-type]
        answer_async=host.answer,
    )
    app.cleanup_ctx.append(host.lifecycle)
    return engine, app
