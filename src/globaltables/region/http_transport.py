"""Replication links between region processes: a `Transport` over authenticated aiohttp WebSockets.

Theory of operation
-------------------
Every region holds one outbound WebSocket to every peer (`GET /replication` on the peer's own port) and sends all
its envelopes for that peer over it, in order; it reads nothing back from it. Answers (acks) travel the other way
over the peer's own outbound socket. So a (source, destination) pair is exactly one ordered byte stream, and a
region's inbound sockets only ever receive.

Latency is a pipeline delay applied by the sender before writing (docs/replication.md, "Transport and latency"):
an envelope sent at `t` on lane `l` of the link to `d` is written at

    due = max(t + latency_ms + U(0, jitter_ms), last due on (d, l))

so many envelopes are in flight at once, nothing arrives before the latency floor, and jitter never reorders a
lane (different lanes may overtake each other). Pending envelopes wait in one heap per destination, ordered by
(due, send order). Timers use the unskewed monotonic clock; skewing a region's wall clock never moves them.

Rules
1. `send` never blocks and never raises for network trouble (runtime.transport): while the peer is unreachable,
   envelopes wait (at most `max_queue` per peer; beyond that they are dropped and counted) and the link reconnects
   with exponential backoff. A dropped envelope is a lost message; the protocol above retransmits.
2. Authentication: the connecting side sends the topology's shared secret (header `x-globaltables-secret`) and its
   region name (`x-globaltables-region`). A request without the right secret is refused with 401 before the
   WebSocket upgrade, one from a region not in the topology with 403; neither reaches the replication core. An
   inbound envelope whose `src` is not the authenticated region is dropped (and counted).
3. Faults act here. Partitions are grudges held by the receiver (Jepsen): envelopes from a refused sender are
   dropped on arrival, so messages already in flight when the partition starts are cut too. Latency overrides
   replace the topology's delay of an outbound link until `heal`. Link faults (runtime.link, region.link_faults:
   delay distribution, loss, bursts, duplication, reordering, bandwidth, stall) act in `send` on every envelope, acks
   included, so a fault on the link d -> s also delays or loses s's acknowledgements.

Wire format of one envelope (one binary WebSocket message): a kind byte, the 4-byte big-endian length of the JSON
header `[src, dest, kind, msg_id, in_reply_to, lane]`, the header, then the body: raw bytes (`B`), JSON (`J`) or
nothing (`N`).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import hmac
import itertools
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from ..runtime.link import LinkSettings
from ..runtime.transport import REGION_HEADER, SECRET_HEADER, Envelope, ReceiveHandler
from .link_faults import NO_FAULT, LinkFaultState

log = logging.getLogger("globaltables.replication.transport")

REPLICATION_PATH = "/replication"



def secret_offered(request: web.Request, secret: bytes) -> bool:
    """Whether `request` carries the shared secret. aiohttp keeps header bytes that are not UTF-8 as surrogate
    escapes; they are compared as the bytes the client sent, so a header that is not UTF-8 is a wrong secret
    (401), never an encoding error. Every endpoint that requires the secret checks it here."""
    offered = request.headers.get(SECRET_HEADER, "").encode("utf-8", "surrogateescape")
    return hmac.compare_digest(offered, secret)


DEFAULT_MAX_QUEUE = 200_000  # envelopes waiting per destination; beyond this a disconnected link drops
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # a Ship batch is ~1 MB; leave room
BACKOFF_FIRST_S = 0.05
BACKOFF_MAX_S = 1.0
CONNECT_TIMEOUT_S = 5.0
CLOSE_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class LinkDelay:
    """One-way delay of an outbound link: `latency_ms` plus a uniform extra of up to `jitter_ms`."""

    latency_ms: float = 0.0
    jitter_ms: float = 0.0


# ------------------------------------------------------------------------------------------------ the codec

_BYTES, _JSON, _NONE = b"B", b"J", b"N"


def encode_envelope(envelope: Envelope) -> bytes:
    head = orjson.dumps(
        [envelope.src, envelope.dest, envelope.kind, envelope.msg_id, envelope.in_reply_to, envelope.lane]
    )
    body = envelope.body
    if body is None:
        kind, payload = _NONE, b""
    elif isinstance(body, (bytes, bytearray, memoryview)):
        kind, payload = _BYTES, bytes(body)
    else:
        kind, payload = _JSON, orjson.dumps(body)
    return b"".join((kind, len(head).to_bytes(4, "big"), head, payload))


def decode_envelope(data: bytes) -> Envelope:
    """The envelope in one WebSocket message; ValueError when it is not one."""
    if len(data) < 5:
        raise ValueError("truncated envelope")
    kind, size = data[:1], int.from_bytes(data[1:5], "big")
    head = orjson.loads(data[5 : 5 + size])
    if not isinstance(head, list) or len(head) != 6:
        raise ValueError("malformed envelope header")
    src, dest, message_kind, msg_id, in_reply_to, lane = head
    payload = data[5 + size :]
    if kind == _BYTES:
        body: Any = payload
    elif kind == _JSON:
        body = orjson.loads(payload)
    elif kind == _NONE:
        body = None
    else:
        raise ValueError(f"unknown envelope body kind {kind!r}")
    return Envelope(src, dest, message_kind, msg_id, in_reply_to, body, lane)


async def _close_quickly(ws: aiohttp.ClientWebSocketResponse | web.WebSocketResponse) -> None:
    with contextlib.suppress(Exception):
        async with asyncio.timeout(CLOSE_TIMEOUT_S):
            await ws.close(code=aiohttp.WSCloseCode.GOING_AWAY)


# ------------------------------------------------------------------------------------------ outbound links


class _Outbound:
    """The link to one peer: its endpoint, delay, pending heap, socket and counters."""

    __slots__ = (
        "baseline",
        "connected_since",
        "connects",
        "delay",
        "dest",
        "dropped",
        "endpoint",
        "faults",
        "heap",
        "lane_due",
        "last_error",
        "sent",
        "wake",
        "ws",
    )

    def __init__(self, dest: str, delay: LinkDelay, endpoint: str | None, rng: random.Random) -> None:
        self.dest = dest
        self.faults = LinkFaultState(rng)
        self.baseline = delay  # the topology's delay; `delay` may be overridden by a fault until heal
        self.delay = delay
        self.endpoint = endpoint
        self.heap: list[tuple[float, int, Envelope]] = []
        self.lane_due: dict[int, float] = {}
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.wake = asyncio.Event()
        self.sent = 0
        self.dropped = 0
        self.connects = 0
        self.connected_since: float | None = None
        self.last_error: str | None = None

    def status(self, now: float) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "connected": self.ws is not None and not self.ws.closed,
            "connects": self.connects,
            "queued": len(self.heap),
            "sent": self.sent,
            "dropped": self.dropped,
            "oldest_due_in_ms": round((self.heap[0][0] - now) * 1000, 3) if self.heap else None,
            "latency_ms": self.delay.latency_ms,
            "jitter_ms": self.delay.jitter_ms,
            "latency_overridden": self.delay != self.baseline,
            "fault": None if self.faults.fault == NO_FAULT else self.faults.fault.fault_fields(),
            "lost_by_fault": self.faults.lost,
            "duplicated_by_fault": self.faults.duplicated,
            "reordered_by_fault": self.faults.reordered,
            "last_error": self.last_error,
        }


class HttpTransport:
    """The `Transport` of one region process (see the module docstring). Create it, `register` the local
    handler, add `route()` to the aiohttp app, then run `run()` as a task for the transport's life: cancelling it
    stops every link and closes every socket."""

    def __init__(
        self,
        region: str,
        secret: str,
        delays: Mapping[str, LinkDelay],
        endpoints: Mapping[str, str | None] | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        max_queue: int = DEFAULT_MAX_QUEUE,
    ) -> None:
        if not secret:
            raise ValueError("the replication transport needs a non-empty shared secret")
        self.region = region
        self._secret = secret.encode()
        self._monotonic = monotonic
        self._rng = rng or random.Random()
        self._max_queue = max_queue
        self._handler: ReceiveHandler | None = None
        self._outbound = {
            peer: _Outbound(peer, delays[peer], (endpoints or {}).get(peer), self._rng)
            for peer in sorted(delays)
            if peer != region
        }
        self._sequence = itertools.count()
        self._session: aiohttp.ClientSession | None = None
        self._closing = False
        self._inbound: set[web.WebSocketResponse] = set()
        self.grudges: frozenset[str] = frozenset()  # senders this region refuses to hear (a partition)
        self.received: dict[str, int] = dict.fromkeys(self._outbound, 0)
        self.refused: dict[str, int] = dict.fromkeys(self._outbound, 0)  # dropped by a grudge
        self.inbound_connections: dict[str, int] = dict.fromkeys(self._outbound, 0)
        self.rejected_requests = 0  # unauthenticated or unknown-region connection attempts
        self.bad_messages = 0

    @property
    def peers(self) -> tuple[str, ...]:
        return tuple(self._outbound)

    # ------------------------------------------------------------------------------------ Transport protocol

    def register(self, region: str, handler: ReceiveHandler) -> None:
        if region != self.region:
            raise ValueError(f"this transport delivers only to {self.region}, not {region}")
        self._handler = handler

    def unregister(self, region: str) -> None:
        if region == self.region:
            self._handler = None

    def send(self, envelope: Envelope) -> None:
        out = self._outbound.get(envelope.dest)
        if out is None:
            log.error("dropping %r: %s is not a peer of %s", envelope, envelope.dest, self.region)
            return
        if len(out.heap) >= self._max_queue:
            out.dropped += 1
            return
        delay = out.delay
        faults = out.faults
        now = self._monotonic()
        faulty = faults.fault is not NO_FAULT
        if faulty and faults.lose():  # decided before the delay is drawn: a lost message draws no delay
            faults.lost += 1
            return
        due = now + delay.latency_ms / 1000.0 + faults.extra_s(delay.jitter_ms)
        if faulty:
            if faults.fault.bandwidth_kbps:
                due += faults.transmission_s(now, len(encode_envelope(envelope)))
            fault = faults.fault
            if fault.duplicate and self._rng.random() < fault.duplicate:
                faults.duplicated += 1  # a second copy, with its own delay, outside the lane order
                copy_due = now + delay.latency_ms / 1000.0 + faults.extra_s(delay.jitter_ms)
                self._push(out, copy_due, envelope)
            if fault.reorder and self._rng.random() < fault.reorder:
                faults.reordered += 1  # held back outside the lane order: later messages overtake it
                self._push(out, due + fault.reorder_ms / 1000.0, envelope)
                return
        lane = envelope.lane
        previous = out.lane_due.get(lane)
        if previous is not None and previous > due:
            due = previous  # jitter never reorders a lane
        out.lane_due[lane] = due
        self._push(out, due, envelope)

    def _push(self, out: _Outbound, due: float, envelope: Envelope) -> None:
        heap = out.heap
        heapq.heappush(heap, (due, next(self._sequence), envelope))
        if heap[0][2] is envelope:  # the new earliest deadline: the writer must re-arm its timer
            out.wake.set()

    # ------------------------------------------------------------------------------------------- lifecycle

    async def run(self) -> None:
        """One writer per outbound link, until cancelled; then every socket, outbound and inbound, is closed.
        Once it ends, inbound connections are refused (503): a peer reconnecting must not hold a shutdown up."""
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT_S))
        try:
            async with asyncio.TaskGroup() as links:
                for out in self._outbound.values():
                    links.create_task(self._run_link(out), name=f"replication-link-{out.dest}")
                await asyncio.Event().wait()  # until cancelled, links or none (a region without peers)
        finally:
            self._closing = True
            # Peers usually shut down at the same moment (`up` stops every region at once), and a graceful close
            # waits for the other side's close frame: bound it, all sockets at once, or every stop takes 10 s.
            sockets = [out.ws for out in self._outbound.values() if out.ws is not None] + list(self._inbound)
            for out in self._outbound.values():
                out.ws = None
            await asyncio.gather(*(_close_quickly(ws) for ws in sockets))
            await self._session.close()

    def set_endpoint(self, peer: str, endpoint: str | None) -> None:
        """Where `peer` listens (learned from the topology, the state file or the control API)."""
        out = self._outbound[peer]
        if out.endpoint == endpoint:
            return
        out.endpoint = endpoint
        if out.ws is not None:  # it moved: the writer closes the old socket and reconnects to the new address
            out.ws = None
        out.wake.set()

    def endpoint(self, peer: str) -> str | None:
        return self._outbound[peer].endpoint

    # ----------------------------------------------------------------------------------------------- faults

    def set_grudges(self, senders: Iterable[str]) -> None:
        senders = frozenset(senders)
        unknown = senders - set(self._outbound)
        if unknown:
            raise ValueError(f"unknown region(s) {', '.join(sorted(unknown))}; peers are {', '.join(self.peers)}")
        self.grudges = senders

    def set_delay(self, peer: str, delay: LinkDelay | None) -> None:
        """Override the delay of the link to `peer` (None: back to the topology's)."""
        out = self._outbound[peer]
        out.delay = out.baseline if delay is None else delay

    def set_link_fault(self, peer: str, fault: LinkSettings | None) -> None:
        """Faults on the link to `peer` (None: none); ending a stall wakes the writer to drain the backlog."""
        out = self._outbound[peer]
        out.faults.set(fault or NO_FAULT)
        out.wake.set()

    def heal(self) -> None:
        self.grudges = frozenset()
        for out in self._outbound.values():
            out.delay = out.baseline
            out.faults.set(NO_FAULT)
            out.wake.set()

    # ---------------------------------------------------------------------------------------------- status

    def status(self) -> dict[str, Any]:
        now = self._monotonic()
        return {
            "peers": {
                peer: {
                    **out.status(now),
                    "received": self.received[peer],
                    "refused_by_grudge": self.refused[peer],
                    "inbound_connections": self.inbound_connections[peer],
                }
                for peer, out in self._outbound.items()
            },
            "grudges": sorted(self.grudges),
            "rejected_requests": self.rejected_requests,
            "bad_messages": self.bad_messages,
        }

    # -------------------------------------------------------------------------------------- outbound side

    async def _run_link(self, out: _Outbound) -> None:
        """Keep the socket to `out.dest` up and write each envelope when it is due, for the transport's life. The
        link's group owns the watcher of each socket it opened, and the closing of a socket dropped by
        `set_endpoint`."""
        async with asyncio.TaskGroup() as link:
            backoff = BACKOFF_FIRST_S
            ws: aiohttp.ClientWebSocketResponse | None = None
            while not self._closing:
                if out.ws is not ws and ws is not None and not ws.closed:  # dropped by set_endpoint (the peer moved)
                    link.create_task(_close_quickly(ws), name=f"replication-close-{out.dest}")
                ws = out.ws
                if ws is None or ws.closed:
                    out.ws = None
                    if out.endpoint is None:  # not known yet: wait for set_endpoint
                        out.wake.clear()
                        await out.wake.wait()
                        continue
                    ws = await self._connect(out)
                    if ws is None:
                        await asyncio.sleep(backoff)
                        backoff = min(backoff * 2, BACKOFF_MAX_S)
                        continue
                    backoff = BACKOFF_FIRST_S
                    out.ws = ws
                    link.create_task(self._watch(out, ws), name=f"replication-watch-{out.dest}")
                heap = out.heap
                now = self._monotonic()
                stalled = out.faults.fault.stalled  # a stalled stream writes nothing; its backlog drains on resume
                if stalled or not heap or heap[0][0] > now:
                    out.wake.clear()
                    timeout = None if stalled or not heap else heap[0][0] - now
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(timeout):
                            await out.wake.wait()
                    continue
                try:
                    while heap and heap[0][0] <= now and out.ws is ws:  # not past a set_endpoint
                        envelope = heap[0][2]
                        await ws.send_bytes(encode_envelope(envelope))
                        heapq.heappop(heap)
                        out.sent += 1
                except (ConnectionError, aiohttp.ClientError, RuntimeError) as error:
                    # The envelope stays queued and goes out on the next socket (at-least-once is fine above us).
                    out.last_error = f"send failed: {error!r}"
                    log.info("link %s -> %s lost: %s", self.region, out.dest, error)
                    out.ws = None
                    with contextlib.suppress(Exception):
                        await ws.close()

    async def _connect(self, out: _Outbound) -> aiohttp.ClientWebSocketResponse | None:
        assert self._session is not None and out.endpoint is not None
        url = out.endpoint.rstrip("/") + REPLICATION_PATH
        headers = {SECRET_HEADER: self._secret.decode(), REGION_HEADER: self.region}
        try:
            ws = await self._session.ws_connect(url, headers=headers, max_msg_size=MAX_MESSAGE_BYTES, autoping=True)
        except (aiohttp.ClientError, OSError, TimeoutError) as error:
            message = f"connect to {url} failed: {error!r}"
            if out.last_error != message:
                log.info("link %s -> %s: %s", self.region, out.dest, message)
            out.last_error = message
            return None
        out.connects += 1
        out.connected_since = self._monotonic()
        out.last_error = None
        log.info("link %s -> %s connected (%s)", self.region, out.dest, url)
        return ws

    async def _watch(self, out: _Outbound, ws: aiohttp.ClientWebSocketResponse) -> None:
        """Read the outbound socket only to notice that it closed (the peer never writes to it)."""
        with contextlib.suppress(Exception):
            async for _ in ws:
                pass
        if out.ws is ws:
            out.ws = None
            out.last_error = "connection closed by peer"
            out.wake.set()

    # --------------------------------------------------------------------------------------- inbound side

    def route(self) -> web.RouteDef:
        return web.get(REPLICATION_PATH, self.handle_inbound)

    def authenticated(self, request: web.Request) -> bool:
        return secret_offered(request, self._secret)

    async def handle_inbound(self, request: web.Request) -> web.StreamResponse:
        if self._closing:  # a peer reconnecting while we shut down would hold the server's shutdown up
            return web.json_response({"error": f"{self.region} is shutting down"}, status=503)
        if not self.authenticated(request):
            self.rejected_requests += 1
            return web.json_response({"error": "replication requires the topology's shared secret"}, status=401)
        source = request.headers.get(REGION_HEADER, "")
        if source not in self._outbound:
            self.rejected_requests += 1
            return web.json_response({"error": f"{source!r} is not a peer region of {self.region}"}, status=403)
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE_BYTES, autoping=True)
        await ws.prepare(request)
        self._inbound.add(ws)
        self.inbound_connections[source] += 1
        try:
            async for message in ws:
                if message.type != aiohttp.WSMsgType.BINARY:
                    continue
                self._deliver(source, message.data)
        finally:
            self._inbound.discard(ws)
        return ws

    def _deliver(self, source: str, data: bytes) -> None:
        try:
            envelope = decode_envelope(data)
        except (ValueError, orjson.JSONDecodeError) as error:
            self.bad_messages += 1
            log.warning("undecodable replication message from %s: %s", source, error)
            return
        if envelope.src != source or envelope.dest != self.region:
            self.bad_messages += 1
            log.warning("dropping %r received on the link from %s", envelope, source)
            return
        if source in self.grudges:
            self.refused[source] += 1
            return
        self.received[source] += 1
        handler = self._handler
        if handler is not None:
            try:
                handler(envelope)
            except Exception:  # a failing core must not take the link down; the sender will retransmit
                log.exception("replication handler failed on %r", envelope)
