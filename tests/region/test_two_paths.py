"""The fast HTTP front and aiohttp answer every request with the same bytes (minus Date and the request id).

Both paths of one region are built as region/main.py builds them (one app, one engine, `make_runner`), and each
is given a socket of its own: the HTTP front (http_front.py) on one, the runner's aiohttp server on the other. Every
request of the set below goes byte for byte to both, one after the other on one keep-alive connection each, and the
answers are compared as bytes: status line, every header in order, body. The set covers what the two paths could
disagree on: compressed requests of every accepted and refused kind (content_coding.py), answers compressed by
each negotiated coding and left alone, CORS, protocol errors, both JSON media types.
"""

from __future__ import annotations

import asyncio
import gzip
import zlib

import orjson
import pytest

from engine_calls import pk_table
from globaltables.engine.engine import Engine
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.region.app import DYNAMODB_ANSWER, make_app, make_runner
from globaltables.region.http_front import HttpFront
from globaltables.runtime.clock import SystemClock

AUTHORIZATION = (
    "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/dynamodb/aws4_request, "
    "SignedHeaders=host;x-amz-date;x-amz-target, Signature=" + "0" * 64
)
TABLE = "Paths"
IGNORED = (b"date", b"x-amzn-requestid")
TIMEOUT_S = 30


def request(target: str, body: bytes, headers: str = "", content_type: str = "application/x-amz-json-1.0") -> bytes:
    return (
        f"POST / HTTP/1.1\r\nHost: test\r\nContent-Type: {content_type}\r\nX-Amz-Target: DynamoDB_20120810.{target}\r\n"
        f"Authorization: {AUTHORIZATION}\r\nX-Amz-Date: 20260101T000000Z\r\n{headers}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def put(key: str) -> bytes:
    return orjson.dumps({"TableName": TABLE, "Item": {"pk": {"S": key}, "v": {"S": "x"}}})


LARGE_GET = orjson.dumps({"TableName": TABLE, "Key": {"pk": {"S": "large"}}})
LARGE_QUERY = orjson.dumps(
    {"TableName": TABLE, "KeyConditionExpression": "pk = :k", "ExpressionAttributeValues": {":k": {"S": "large"}}}
)
BOMB = gzip.compress(orjson.dumps({"TableName": TABLE, "Item": {"pk": {"S": "bomb"}, "v": {"S": "x" * (16 << 20)}}}))

REQUESTS = {
    "plain": request("ListTables", b"{}"),
    "application/json": request("ListTables", b"{}", content_type="application/json"),
    "small answer, gzip accepted": request("ListTables", b"{}", "Accept-Encoding: gzip\r\n"),
    "large answer, no Accept-Encoding": request("GetItem", LARGE_GET),
    "large answer, identity": request("GetItem", LARGE_GET, "Accept-Encoding: identity\r\n"),
    "large answer, gzip": request("GetItem", LARGE_GET, "Accept-Encoding: gzip\r\n"),
    "large answer, deflate": request("GetItem", LARGE_GET, "Accept-Encoding: deflate\r\n"),
    "large answer, *": request("Query", LARGE_QUERY, "Accept-Encoding: *, gzip;q=0.5\r\n"),
    "large answer, gzip;q=0": request("Query", LARGE_QUERY, "Accept-Encoding: gzip;q=0\r\n"),
    "gzip request": request("PutItem", gzip.compress(put("g")), "Content-Encoding: gzip\r\n"),
    "deflate request": request("PutItem", zlib.compress(put("d")), "Content-Encoding: deflate\r\n"),
    "two gzip members": request(
        "PutItem", gzip.compress(put("m")[:9]) + gzip.compress(put("m")[9:]), "Content-Encoding: gzip\r\n"
    ),
    "gzip request, gzip answer": request(
        "GetItem", gzip.compress(LARGE_GET), "Content-Encoding: gzip\r\nAccept-Encoding: gzip\r\n"
    ),
    "two Accept-Encoding headers, identity first": request(
        "GetItem", LARGE_GET, "Accept-Encoding: identity\r\nAccept-Encoding: gzip\r\n"
    ),
    "two Accept-Encoding headers, gzip first": request(
        "GetItem", LARGE_GET, "Accept-Encoding: gzip\r\nAccept-Encoding: identity\r\n"
    ),
    "unknown coding": request("PutItem", put("u"), "Content-Encoding: br\r\n"),
    "corrupt gzip": request("PutItem", b"\x1f\x8b\x08\x00garbage", "Content-Encoding: gzip\r\n"),
    "truncated gzip": request("PutItem", gzip.compress(put("t"))[:-5], "Content-Encoding: gzip\r\n"),
    "empty gzip": request("PutItem", b"", "Content-Encoding: gzip\r\n"),
    "over 16 MiB decoded": request("PutItem", BOMB, "Content-Encoding: gzip\r\n"),
    "origin": request("ListTables", b"{}", "Origin: https://app.example\r\n"),
    "origin, compressed answer": request(
        "GetItem", LARGE_GET, "Origin: https://app.example\r\nAccept-Encoding: deflate\r\n"
    ),
    "bad json": request("ListTables", b"{"),
    "unknown operation": request("NoSuchOperation", b"{}"),
    "validation error": request("GetItem", b'{"TableName": "Paths"}'),
    "missing table": request("DescribeTable", b'{"TableName": "nope"}'),
}

# How these answers must be coded (only the first Accept-Encoding header counts, as at DynamoDB).
ANSWER_CODINGS = {
    "small answer, gzip accepted": [],
    "large answer, no Accept-Encoding": [],
    "large answer, identity": [],
    "large answer, gzip": [b"gzip"],
    "large answer, deflate": [b"deflate"],
    "large answer, *": [b"deflate"],
    "large answer, gzip;q=0": [],
    "two Accept-Encoding headers, identity first": [],
    "two Accept-Encoding headers, gzip first": [b"gzip"],
    "origin, compressed answer": [b"deflate"],
}


async def read_answer(reader: asyncio.StreamReader) -> tuple[bytes, list[tuple[bytes, bytes]], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status, *lines = head[:-4].split(b"\r\n")
    headers = [tuple(part.strip() for part in line.split(b":", 1)) for line in lines]
    length = int(next(value for name, value in headers if name.lower() == b"content-length"))
    return status, headers, await reader.readexactly(length)


@pytest.fixture
async def both_paths():
    """(front port, aiohttp port) of one region app whose table holds a 6 KB item (its answers are compressible)."""
    store = SqliteStore(None)
    engine = Engine(store, SystemClock(), region="us-east-1")
    engine.handle("CreateTable", pk_table(TABLE))
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "large"}, "text": {"S": "some text " * 600}}})
    app = make_app(engine)
    runner = make_runner(app, access_log=None)
    await runner.setup()
    assert runner.server is not None and app[DYNAMODB_ANSWER] is not None
    front = HttpFront(runner.server, app[DYNAMODB_ANSWER])
    loop = asyncio.get_running_loop()
    servers = [
        await loop.create_server(front, "127.0.0.1", 0),
        await loop.create_server(runner.server, "127.0.0.1", 0),
    ]
    try:
        yield tuple(server.sockets[0].getsockname()[1] for server in servers)
    finally:
        for server in servers:
            server.close()
        front.close()
        await runner.cleanup()
        store.close()


async def test_front_and_aiohttp_answer_every_request_with_the_same_bytes(both_paths):
    connections = [await asyncio.open_connection("127.0.0.1", port) for port in both_paths]
    compressed = set()
    try:
        for name, data in REQUESTS.items():
            answers = []
            for reader, writer in connections:
                writer.write(data)
                await writer.drain()
                answers.append(await asyncio.wait_for(read_answer(reader), TIMEOUT_S))
            (status, headers, body), (other_status, other_headers, other_body) = answers
            kept = [(n, v) for n, v in headers if n.lower() not in IGNORED]
            other_kept = [(n, v) for n, v in other_headers if n.lower() not in IGNORED]
            assert (status, kept, body) == (other_status, other_kept, other_body), name
            assert [n for n, _ in headers] == [n for n, _ in other_headers], name
            codings = [v for n, v in headers if n.lower() == b"content-encoding"]
            compressed.update(codings)
            if name in ANSWER_CODINGS:
                assert codings == ANSWER_CODINGS[name], name
            expected_status = {
                "unknown coding": b"500", "corrupt gzip": b"500", "truncated gzip": b"500", "empty gzip": b"500",
                "over 16 MiB decoded": b"413", "bad json": b"400", "unknown operation": b"400",
                "validation error": b"400", "missing table": b"400",
            }.get(name, b"200")  # fmt: skip
            assert status.split(b" ")[1] == expected_status, (name, status, body[:200])
    finally:
        for _, writer in connections:
            writer.close()
    assert compressed == {b"gzip", b"deflate"}  # the set really exercised both codings on both paths


async def test_a_region_whose_requests_wait_decodes_and_compresses_the_same_way(tmp_path):
    """Strong mode (answer_async, region/mrsc_host.py) serves every DynamoDB request through aiohttp: its bodies are
    decoded and its answers compressed by the same rules, and an undecodable body never reaches the answer."""
    store = SqliteStore(None)
    engine = Engine(store, SystemClock(), region="us-east-1")
    seen: list[bytes] = []

    async def answer_async(headers, query_string, raw, path="/", signed=None):
        seen.append(raw)
        return 200, orjson.dumps({"echo": raw.decode(), "padding": "p" * 5000})

    app = make_app(engine, answer_async=answer_async)
    assert app[DYNAMODB_ANSWER] is None  # the front must leave every request to aiohttp
    runner = make_runner(app, access_log=None)
    await runner.setup()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(runner.server, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    try:
        for data in (
            request("ListTables", gzip.compress(b'{"Limit": 1}'), "Content-Encoding: gzip\r\nAccept-Encoding: gzip\r\n"),
            request("ListTables", b"\x1f\x8b\x08\x00garbage", "Content-Encoding: gzip\r\n"),
        ):
            writer.write(data)
        (first, first_headers, first_body), (second, _, _) = [
            await asyncio.wait_for(read_answer(reader), TIMEOUT_S) for _ in range(2)
        ]
    finally:
        writer.close()
        server.close()
        await runner.cleanup()
        store.close()
    assert first.split(b" ")[1] == b"200" and (b"Content-Encoding", b"gzip") in first_headers
    assert orjson.loads(gzip.decompress(first_body))["echo"] == '{"Limit": 1}'
    assert second.split(b" ")[1] == b"500"
    assert seen == [b'{"Limit": 1}']
