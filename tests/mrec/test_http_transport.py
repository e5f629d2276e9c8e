"""The replication transport on its own: two transports in one event loop, each behind a real aiohttp server.

What it must show: envelopes arrive in lane order and not before the link latency (a floor), jitter never
reorders a lane, a request without the secret is refused (401) and delivers nothing, grudges drop what is due
(envelopes in flight when a partition starts included), the receiver holds what is in flight (it arrives even if
its sender stops), and a link reconnects after its peer comes back on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
import time

import aiohttp
import orjson
import pytest
from aiohttp import web

from globaltables.region.http_transport import (
    CLOCK_HEADER,
    REPLICATION_PATH,
    HttpTransport,
    LinkDelay,
    decode_envelope,
    decode_frame,
    encode_envelope,
    host_clock,
)
from globaltables.runtime.task_owner import task_owner
from globaltables.runtime.transport import REGION_HEADER, SECRET_HEADER, Envelope

SECRET = "s3cret"


def test_codec_round_trip():
    for body in (b"\x00raw", {"a": [1, "x"]}, None):
        envelope = Envelope("a-b-1", "c-d-2", "ship", 7, 3, body, lane=2)
        assert decode_envelope(encode_envelope(envelope)) == envelope
        assert decode_frame(encode_envelope(envelope, 0.0123456, False, 12.5)) == (envelope, 0.012346, 12.5, False)
        assert decode_frame(encode_envelope(envelope, -1.0)) == (envelope, 0.0, 0.0, True)  # late: not held at all


def test_codec_refuses_a_malformed_hold():
    envelope = Envelope("a-b-1", "c-d-2", "ship", 7)
    for hold, due, ordered in ((-5, 0, True), (1.5, 0, True), (10, 0, 1), ("10", 0, True), (10, -1, True), (1, 2.5, True)):
        head = orjson.dumps(["a-b-1", "c-d-2", "ship", 7, None, None, hold, due, ordered])
        with pytest.raises(ValueError):
            decode_frame(b"N" + len(head).to_bytes(4, "big") + head)
    assert decode_frame(encode_envelope(envelope))[0] == envelope


class Node:
    """A transport plus the server it receives on, and what it received (with monotonic arrival times)."""

    def __init__(self, name: str, peers: dict[str, LinkDelay], **kwargs) -> None:
        self.name = name
        self.transport = HttpTransport(name, kwargs.pop("secret", SECRET), peers, rng=random.Random(1), **kwargs)
        self.inbox: list[tuple[float, Envelope]] = []
        self.transport.register(name, lambda envelope: self.inbox.append((time.monotonic(), envelope)))
        self.port = 0

    async def start(self, port: int = 0) -> None:
        app = web.Application()
        app.router.add_route(*_route(self.transport))
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", port, reuse_address=True)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        self.lifetime = contextlib.AsyncExitStack()  # the transport runs until stop() leaves its owner
        tasks = await self.lifetime.enter_async_context(task_owner())
        tasks.start(self.transport.run())

    async def stop(self) -> None:
        await self.lifetime.aclose()
        await self.runner.cleanup()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _route(transport: HttpTransport):
    definition = transport.route()
    return definition.method, definition.path, definition.handler


async def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


@pytest.fixture
async def pair():
    a = Node("us-east-1", {"eu-west-1": LinkDelay(30, 10)})
    b = Node("eu-west-1", {"us-east-1": LinkDelay(30, 10)})
    await a.start()
    await b.start()
    a.transport.set_endpoint("eu-west-1", b.endpoint)
    b.transport.set_endpoint("us-east-1", a.endpoint)
    yield a, b
    await a.stop()
    await b.stop()


async def test_latency_floor_and_lane_order(pair):
    a, b = pair
    sent_at = {}
    for i in range(200):
        sent_at[i] = time.monotonic()
        a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", i, body={"i": i}, lane=i % 4))
    await wait_for(lambda: len(b.inbox) == 200)
    for arrived, envelope in b.inbox:
        assert arrived - sent_at[envelope.msg_id] >= 0.030  # never before the latency
    for lane in range(4):
        ids = [envelope.msg_id for _, envelope in b.inbox if envelope.lane == lane]
        assert ids == sorted(ids)  # jitter never reorders a lane
    # many in flight at once: the whole burst took about one latency, not 200 of them
    assert b.inbox[-1][0] - sent_at[0] < 1.0
    assert a.transport.status()["peers"]["eu-west-1"]["sent"] == 200


async def test_replies_flow_back_over_the_other_link(pair):
    a, b = pair
    b.transport.register("eu-west-1", lambda e: b.transport.send(e.reply("ack", e.msg_id + 1000)))
    a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", 1, body=b"x"))
    await wait_for(lambda: len(a.inbox) == 1)
    assert a.inbox[0][1].kind == "ack" and a.inbox[0][1].in_reply_to == 1


async def test_request_without_secret_is_refused_and_delivers_nothing(pair):
    _a, b = pair
    url = b.endpoint + REPLICATION_PATH
    async with aiohttp.ClientSession() as session:
        for headers in ({}, {SECRET_HEADER: "wrong", REGION_HEADER: "us-east-1"}, {REGION_HEADER: "us-east-1"}):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(url, headers=headers)
            assert refused.value.status == 401
        with pytest.raises(aiohttp.WSServerHandshakeError) as unknown:
            await session.ws_connect(url, headers={SECRET_HEADER: SECRET, REGION_HEADER: "ap-south-1"})
        assert unknown.value.status == 403
        async with session.post(url, data=encode_envelope(Envelope("us-east-1", "eu-west-1", "ship", 1))) as response:
            assert response.status in (401, 405)
    assert b.inbox == []
    assert b.transport.status()["rejected_requests"] == 4


async def test_grudge_drops_on_arrival_and_heal_restores(pair):
    a, b = pair
    b.transport.set_grudges(["us-east-1"])
    a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", 1))
    await wait_for(lambda: b.transport.status()["peers"]["us-east-1"]["refused_by_grudge"] == 1)
    assert b.inbox == []
    b.transport.heal()
    a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", 2))
    await wait_for(lambda: len(b.inbox) == 1)
    with pytest.raises(ValueError):
        b.transport.set_grudges(["nowhere-1"])


async def test_latency_override_and_reconnect_after_peer_restart(pair):
    a, b = pair
    a.transport.set_delay("eu-west-1", LinkDelay(150, 0))
    started = time.monotonic()
    a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", 1))
    await wait_for(lambda: len(b.inbox) == 1)
    assert b.inbox[0][0] - started >= 0.150
    a.transport.heal()
    port = b.port
    await b.stop()
    a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", 2))  # queued while the peer is down
    await asyncio.sleep(0.2)
    b2 = Node("eu-west-1", {"us-east-1": LinkDelay(30, 10)})
    await b2.start(port)
    try:
        await wait_for(lambda: [e.msg_id for _, e in b2.inbox] == [2])
        assert a.transport.status()["peers"]["eu-west-1"]["connects"] >= 2
    finally:
        await b2.stop()
        b.runner = b2.runner  # the fixture's stop() is now a no-op for b
        b.transport = b2.transport


async def test_a_peer_that_moves_is_followed_and_its_old_socket_closed(pair):
    # The peer's endpoint changes while the link is connected (a region restarted on another port): the writer
    # closes the old socket itself and delivers what follows over a new one.
    a, b = pair
    a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", 1))
    await wait_for(lambda: len(b.inbox) == 1)
    await wait_for(lambda: len(b.transport._inbound) == 1)
    old = next(iter(b.transport._inbound))
    moved = Node("eu-west-1", {"us-east-1": LinkDelay(30, 10)})
    await moved.start()
    try:
        a.transport.set_endpoint("eu-west-1", moved.endpoint)
        a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", 2))
        await wait_for(lambda: [e.msg_id for _, e in moved.inbox] == [2])
        await wait_for(lambda: old.closed)  # the socket to the old address was closed, not left open
        assert [e.msg_id for _, e in b.inbox] == [1]
        assert a.transport.status()["peers"]["eu-west-1"]["connects"] == 2
    finally:
        await moved.stop()


async def test_a_transport_without_peers_runs_until_stopped():
    # A one-region topology has no links: the transport still runs (refusing with 401, not "shutting down").
    alone = Node("us-east-1", {})
    await alone.start()
    try:
        await asyncio.sleep(0.05)
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(alone.endpoint + REPLICATION_PATH)
            assert refused.value.status == 401
    finally:
        await alone.stop()


async def test_a_partition_cuts_what_is_already_in_flight(pair):
    a, b = pair
    a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", 1))
    await wait_for(lambda: b.transport.status()["peers"]["us-east-1"]["held"] == 1)  # arrived, not yet due
    b.transport.set_grudges(["us-east-1"])
    await wait_for(lambda: b.transport.status()["peers"]["us-east-1"]["refused_by_grudge"] == 1)
    assert b.inbox == [] and b.transport.status()["peers"]["us-east-1"]["held"] == 0


async def test_what_is_in_flight_arrives_after_its_sender_stopped(pair):
    # The delay is the wire's: the receiver holds an envelope already written, so the sender's end does not take
    # it back (a real network delivers what left a host that died).
    a, b = pair
    started = time.monotonic()
    a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", 1))
    await wait_for(lambda: b.transport.status()["peers"]["us-east-1"]["held"] == 1)
    await a.stop()
    await wait_for(lambda: len(b.inbox) == 1)
    assert b.inbox[0][0] - started >= 0.030
    a.stop = _nothing  # the fixture's stop


async def _nothing() -> None:
    pass


async def test_the_receiver_keeps_a_lane_in_order_whatever_the_transit():
    # Two envelopes of one lane whose holds would swap them (the first's transit took longer): the second waits
    # for the first; one of another lane, or sent outside its lane's order (a fault's copy), does not.
    receiver = HttpTransport("eu-west-1", SECRET, {"us-east-1": LinkDelay(30, 0)})
    inbox: list[int] = []
    receiver.register("eu-west-1", lambda envelope: inbox.append(envelope.msg_id))
    frames = [
        (Envelope("us-east-1", "eu-west-1", "ship", 1, lane=0), 0.060, True),
        (Envelope("us-east-1", "eu-west-1", "ship", 2, lane=0), 0.020, True),
        (Envelope("us-east-1", "eu-west-1", "ship", 3, lane=1), 0.030, True),
        (Envelope("us-east-1", "eu-west-1", "ship", 4, lane=0), 0.010, False),
    ]
    started = time.monotonic()
    for envelope, hold, ordered in frames:  # from another host: held from arrival (their due times mean nothing)
        receiver._arrived("us-east-1", encode_envelope(envelope, hold, ordered, due=1.0), shared_clock=False)
    assert receiver.status()["peers"]["us-east-1"]["held"] == 4
    await wait_for(lambda: len(inbox) == 4)
    assert time.monotonic() - started >= 0.060
    assert inbox == [4, 3, 1, 2]
    receiver._release_timer.close()  # the transport never ran, so its end does not close it


async def test_on_one_host_an_envelope_is_due_when_its_sender_said():
    # The sender's monotonic clock is the receiver's: the delay counts from the send, so the hop's own transit
    # falls inside it. Here the hold alone would wait 60 s; the due time, 20 ms from now, decides.
    receiver = HttpTransport("eu-west-1", SECRET, {"us-east-1": LinkDelay(30, 0)})
    inbox: list[float] = []
    receiver.register("eu-west-1", lambda envelope: inbox.append(time.monotonic()))
    due = time.monotonic() + 0.020
    receiver._arrived("us-east-1", encode_envelope(Envelope("us-east-1", "eu-west-1", "x", 1), 60.0, True, due), True)
    await wait_for(lambda: len(inbox) == 1, timeout=5.0)
    assert inbox[0] >= due
    receiver._release_timer.close()


async def test_links_on_one_host_tell_the_receiver_so(pair):
    a, b = pair
    a.transport.send(Envelope("us-east-1", "eu-west-1", "ship", 1))
    await wait_for(lambda: len(b.inbox) == 1)
    if sys.platform.startswith("linux"):  # elsewhere no boot id tells the host's clock
        assert host_clock() is not None and b.transport.status()["peers"]["us-east-1"]["same_host_clock"] is True
    headers = {SECRET_HEADER: SECRET, REGION_HEADER: "us-east-1", CLOCK_HEADER: "another-host"}
    async with aiohttp.ClientSession() as session, session.ws_connect(b.endpoint + REPLICATION_PATH, headers=headers) as ws:
        # Another host's clock: a due time of 0 means nothing there, the hold (20 ms from arrival) decides.
        sent = time.monotonic()
        await ws.send_bytes(encode_envelope(Envelope("us-east-1", "eu-west-1", "ship", 2), 0.020, True, 0.0))
        await wait_for(lambda: len(b.inbox) == 2)
        assert b.inbox[1][0] - sent >= 0.020
        assert b.transport.status()["peers"]["us-east-1"]["same_host_clock"] is False
