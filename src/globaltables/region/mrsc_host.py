"""The asyncio host of one member of a strong-mode (MRSC) topology: an `MrscNode` driven over the `HttpTransport`,
and the request path that makes client writes wait for the commit protocol (docs/mrsc.md).

Theory of operation (cores step, hosts loop, as region/replication_host.py):
- The node is sans-I/O. Every call into it (`submit_write`, `submit_read`, `on_message`, `poll`) returns envelopes,
  which go to the transport, and may complete client operations, collected with `take_completions()` and handed to
  the futures the waiting requests await. A poller task sleeps until the node's `next_deadline()` (or a wake-up).
- The seam between the synchronous engine and the protocol is `answer_soon` (app.py's `answer_soon`, which the
  HTTP front calls; `answer` awaits it for aiohttp's handler, app.py's `answer_async`), which drives
  the sans-I/O request path of mrsc_requests.py (shared with the pytest kit's simulated harness): wire checks as
  `wire.answer`, then a write on a strong table is validated by the engine (engine/strong_requests.py), each item
  write submitted to the node, and the request answered only once the node reports the outcome: "ok" (committed
  by a majority), "rwce" (409 ReplicatedWriteConflictException: nothing changed), a ConditionalCheckFailed
  confirmed against the latest version, or 500 InternalServerError after the bounded wait (in doubt, or not
  started). A strongly consistent GetItem syncs first (`submit_read`), a strongly consistent Query or Scan
  range-syncs its item collection or table first (`submit_range_read`), then each reads locally. Everything else
  goes to the engine as usual (eventually consistent reads are local). Here each node operation is a future,
  answered "in-doubt" if the node has not completed it a guard's time after its own bound; the request resumes
  from the futures' callbacks, so no task is started per request or operation.
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
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from ..engine.engine import Engine
from ..engine.errors import ResourceInUseException
from ..engine.storage.memory_store import MemoryStore
from ..engine.storage.sqlite_store import SqliteStore
from ..engine.strong import make_strong
from ..replication.hosted import MrscRegion
from ..replication.mrsc.config import MrscConfig
from ..replication.mrsc.node import MrscNode
from ..replication.mrsc.store import StrongStore
from ..replication.mrsc.witness import MrscWitness
from ..runtime.transport import Envelope
from .host_base import RegionHost, peer_transport
from .mrsc_requests import GUARD_S, MrscRequests
from .replication_host import POLL_FAILURE_PAUSE_S, ReplicationSettings
from .signing import RequestSigning
from .skewed_clock import SkewedClock
from .strong_conversion import StrongConversion

log = logging.getLogger("globaltables.mrsc.host")



class MrscHost(RegionHost):
    def __init__(
        self, engine: Engine, store: SqliteStore | MemoryStore, settings: ReplicationSettings, clock: SkewedClock, signing: Any = None
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.clock = clock
        self.region = engine.region
        self.witness = settings.role == "witness"
        self.baseline_offset_s = clock.offset_s
        self.transport = peer_transport(self.region, settings)
        # The other two members, nearest first: the first Sync of a strong read goes there.
        others = [peer.name for peer in sorted(settings.peers, key=lambda peer: (peer.latency_ms, peer.name))]
        self.strong = StrongStore(store, None if self.witness else engine, self.region)
        node_class = MrscWitness if self.witness else MrscNode
        self.config = settings.mrsc or MrscConfig()
        self.node = node_class(self.region, others, self.strong, self.config)
        self.hosted = MrscRegion(self.node, engine)  # what the poller and the transport drive (replication/hosted.py)
        # Tables made strong through UpdateTable (strong_conversion.py): the topology's three members only.
        engine.strong_membership.configure([self.region, *others], settings.witness)
        self.conversion = None if self.witness else StrongConversion(engine, settings.secret, self.transport.endpoint)
        self.transport.register(self.region, self._on_envelope)
        self._waiting: dict[int, asyncio.Future] = {}
        self._next_op = 0
        self._wake = asyncio.Event()
        self._peers_file_mtime: int | None = None
        self.poll_failures = 0
        self.requests = MrscRequests(engine, self.node, self.config, witness=self.witness, signing=signing)
        self.counts = self.requests.counts

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

    async def run(self) -> None:
        """For the region's serving life, until cancelled: the node (recovery first), then the transport's links,
        the poller, the strong conversions and the peers-file watcher, children of one TaskGroup."""
        self._run(self.node.start(time.monotonic()))
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self.transport.run(), name="mrsc-links")
            tasks.create_task(self._poller(), name="mrsc-poller")
            if self.conversion is not None:
                tasks.create_task(self.conversion.run(), name="mrsc-conversion")
            if self.settings.peers_file is not None:
                tasks.create_task(self._watch_peers_file(), name="mrsc-peers-file")

    # ---------------------------------------------------------------------------------------------- driving

    def _run(self, envelopes: list[Envelope]) -> None:
        """Send what a call into the node returned and complete the operations it finished."""
        send = self.transport.send
        for envelope in envelopes:
            send(envelope)
        for op_id, outcome, detail in self.hosted.take_completions():
            future = self._waiting.pop(op_id, None)
            if future is not None and not future.done():
                future.set_result((outcome, detail))
        self._wake.set()

    def _on_envelope(self, envelope: Envelope) -> None:
        self._run(self.hosted.on_message(envelope, time.monotonic()))

    async def _poller(self) -> None:
        node = self.hosted
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

    def _submit(self, submit, timeout_ms: float) -> asyncio.Future:
        """Submit one operation to the node (`submit(op_id, now)`): the future of its outcome, answered "in-doubt"
        by a guard timer if the node has not completed it a guard's time after its own bound. The Propose or Sync
        leaves now, in the request's own step (no task is started per operation: each would cost the request a
        turn of the loop before its first message, and another before its answer)."""
        self._next_op += 1
        op_id = self._next_op
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._waiting[op_id] = future
        guard = loop.call_later(timeout_ms / 1000 + GUARD_S, self._give_up, op_id)
        future.add_done_callback(lambda _done: guard.cancel())
        self._run(submit(op_id, time.monotonic()))
        return future

    def _give_up(self, op_id: int) -> None:
        future = self._waiting.pop(op_id, None)
        if future is not None and not future.done():
            log.error("mrsc operation %s not completed by the node in time", op_id)
            future.set_result(("in-doubt", None))

    # --------------------------------------------------------------------------------------- the requests

    def answer_soon(
        self,
        headers: Mapping[str, str],
        query_string: str,
        raw: bytes,
        path: str = "/",
        signed: bytes | None = None,
        done: Callable[[int, bytes], None] = lambda status, body: None,
    ) -> None:
        """Answer a DynamoDB request (app.py `answer_soon`): the request path of mrsc_requests.py, whose node
        operations are submitted together; `done(status, body)` once it is answered, from a callback of the loop
        (or at once, for a request answered locally). No task per request: the HTTP front (http_front.py) writes
        the answer from `done`. Never raises."""
        self._drive(self.requests.answer(headers, query_string, raw, path, signed), None, done)

    async def answer(
        self, headers: Mapping[str, str], query_string: str, raw: bytes, path: str = "/", signed: bytes | None = None
    ) -> tuple[int, bytes]:
        """(status, body) of a DynamoDB request, for the aiohttp handler (app.py `answer_async`). Never raises."""
        answered = asyncio.get_running_loop().create_future()
        self.answer_soon(headers, query_string, raw, path, signed, lambda *answer: answered.set_result(answer))
        return await answered

    def _drive(self, steps: Any, outcomes: list | None, done: Callable[[int, bytes], None]) -> None:
        """Run the request path to its next wait (submitting its operations: the Propose or Sync leaves now) or
        to its answer; resumed when the last outcome of a wait is in."""
        try:
            waits = next(steps) if outcomes is None else steps.send(outcomes)
            while True:
                try:
                    futures = [self._submit(wait.submit, wait.timeout_ms) for wait in waits]
                except Exception as error:  # noqa: BLE001 - a bug under the node: answered 500 (and logged) there
                    waits = steps.throw(error)
                    continue
                missing = [future for future in futures if not future.done()]
                if not missing:  # all completed at once (a refused write)
                    waits = steps.send([future.result() for future in futures])
                    continue
                left = [len(missing)]

                def arrived(_future: asyncio.Future, futures=futures, left=left) -> None:
                    left[0] -= 1
                    if not left[0]:
                        self._drive(steps, [future.result() for future in futures], done)

                for future in missing:  # each has its own guard (`_submit`): none waits for ever
                    future.add_done_callback(arrived)
                return
        except StopIteration as finished:
            done(*finished.value)

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


def strong_region(config: Any, store: SqliteStore | MemoryStore) -> tuple[Engine, web.Application, MrscHost]:
    """The engine, app and host of a strong-mode topology's region (region/main.py `replicated_region`); the
    caller runs `host.run()` for as long as it serves."""
    from . import control
    from .app import make_app

    settings = config.replication
    clock = SkewedClock(offset_s=settings.clock_offset_ms / 1000.0)
    # Capacity as the region's `--capacity` says (docs/capacity.md, decision 21): a strong write is admitted against
    # this region's buckets before it is proposed, and a member charges the commits it applies.
    engine = Engine(
        store, clock, region=config.name, stream_retention_s=config.stream_retention_s, capacity=config.capacity
    )
    host = MrscHost(engine, store, settings, clock, signing=RequestSigning(config.name, clock, config.credentials))
    host.prepare()
    app = make_app(
        engine,
        ttl_sweep_interval_s=config.ttl_sweep_interval_s,
        routes=[host.transport.route(), *control.routes(host)],  # type: ignore[arg-type]
        answer_async=host.answer,
        answer_soon=host.answer_soon,
    )
    return engine, app, host
