"""Requests that are not well-formed HTTP/1.1 get DynamoDB's JSON error shape, on both HTTP paths, quietly.

Both paths: a region process (the HTTP front serves plain requests and hands everything else to aiohttp) and a
server whose front serves nothing itself (as a strong-mode region's), so aiohttp's parser sees every byte from the
first. Each malformed request is answered with `__type` and `Message`, the framing headers, a 4xx, and the
connection closed; the region logs at most one WARNING line per interval about them and never a traceback.
"""

from __future__ import annotations

import asyncio
import re
import time
import zlib

import orjson
import pytest
from aiohttp import web

from globaltables.engine.engine import Engine
from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.region.app import make_app
from globaltables.region.http_errors import QuietLog
from globaltables.region.http_front import HttpFront
from globaltables.runtime.clock import ManualClock

SERIALIZATION = "com.amazon.coral.service#SerializationException"
TOO_LARGE = "com.amazon.coral.service#RequestEntityTooLargeException"
AUTH = (
    b"Authorization: AWS4-HMAC-SHA256 Credential=a/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, "
    b"Signature=abc\r\nX-Amz-Date: 20260101T000000Z\r\n"
)
HEAD = (
    b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n"
    b"Content-Type: application/x-amz-json-1.0\r\n" + AUTH
)
CHUNKED = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
IN_PROCESS_WALL_TIME = 1_700_000_000.0  # the in-process servers' engine clock (ManualClock)


def signed_head(at: float) -> bytes:
    """HEAD signed at `at` (seconds since the epoch): a request the region executes must be within its 5-minute
    signing window (the malformed ones are refused before the signature is looked at)."""
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(at)).encode()
    return HEAD.replace(b"20260101T000000Z", date).replace(b"/20260101/", b"/" + date[:8] + b"/")

MALFORMED = {
    "content-length not a number": (HEAD + b"Content-Length: abc\r\n\r\n{}", 400, SERIALIZATION),
    "negative content-length": (HEAD + b"Content-Length: -1\r\n\r\n{}", 400, SERIALIZATION),
    "duplicate content-length": (HEAD + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400, SERIALIZATION),
    "repeated equal content-length": (HEAD + b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400, SERIALIZATION),
    "content-length with chunked": (
        HEAD + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400, SERIALIZATION),
    "unknown transfer-coding": (HEAD + b"Transfer-Encoding: chunked2\r\n\r\n{}", 400, SERIALIZATION),
    "chunk size not hex": (CHUNKED + b"zz\r\n{}\r\n0\r\n\r\n", 400, SERIALIZATION),
    "chunk size overflow": (CHUNKED + b"ffffffffffffffffffff\r\n{}\r\n0\r\n\r\n", 400, SERIALIZATION),
    "header line without colon": (HEAD + b"Content-Length: 2\r\nBogusHeader\r\n\r\n{}", 400, SERIALIZATION),
    "NUL in a header value": (HEAD + b"Content-Length: 2\r\nX-A: a\x00b\r\n\r\n{}", 400, SERIALIZATION),
    "NUL in the request line": (HEAD.replace(b"POST /", b"POST /\x00") + b"Content-Length: 2\r\n\r\n{}", 400,
                                SERIALIZATION),
    "obsolete line folding": (HEAD + b"Content-Length: 2\r\nX-A: a\r\n b\r\n\r\n{}", 400, SERIALIZATION),
    "HTTP/1.7": (HEAD.replace(b"HTTP/1.1", b"HTTP/1.7") + b"Content-Length: 2\r\n\r\n{}", 400, SERIALIZATION),
    "HTTP/2.0 request line": (HEAD.replace(b"HTTP/1.1", b"HTTP/2.0") + b"Content-Length: 2\r\n\r\n{}", 400,
                              SERIALIZATION),
    "HTTP/3": (HEAD.replace(b"HTTP/1.1", b"HTTP/3") + b"Content-Length: 2\r\n\r\n{}", 400, SERIALIZATION),
    "HTTP/2 preface": (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, SERIALIZATION),
    "TLS client hello": (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, SERIALIZATION),
    "header line over 8190 bytes": (HEAD + b"X-Big: " + b"a" * 9000 + b"\r\nContent-Length: 2\r\n\r\n{}", 413,
                                    TOO_LARGE),
    "200 headers": (HEAD + b"".join(b"X-%d: a\r\n" % i for i in range(200)) + b"Content-Length: 2\r\n\r\n{}", 413,
                    TOO_LARGE),
}  # fmt: skip


class Server:
    def __init__(self, host: str, port: int, log_text) -> None:
        self.host, self.port, self.log_text = host, port, log_text


@pytest.fixture(scope="module")
def region_server(region) -> Server:
    host, port = region.address
    return Server(host, port, lambda: region.log_path.read_text(errors="replace"))


async def aiohttp_only_server(caplog):
    """A region app behind an HTTP front that serves nothing itself: every connection is aiohttp's."""
    engine = Engine(MemoryStore(), ManualClock(wall_time=IN_PROCESS_WALL_TIME))
    runner = web.AppRunner(make_app(engine), access_log=None)
    await runner.setup()
    front = HttpFront(runner.server, None)
    server = await asyncio.get_running_loop().create_server(front, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return runner, front, server, Server("127.0.0.1", port, lambda: caplog.text)


async def exchange(server: Server, parts: list[bytes], pause: float = 0.05) -> bytes:
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        for part in parts:
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(pause)
        return await asyncio.wait_for(reader.read(), 30)  # until the server closes the connection
    finally:
        writer.close()


def answers(data: bytes) -> list[tuple[int, dict, bytes]]:
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v for k, _, v in (line.partition(": ") for line in lines[1:])}
        length = int(headers["content-length"])
        out.append((status, headers, rest[:length]))
        data = rest[length:]
    return out


def assert_dynamodb_error(status: int, headers: dict, body: bytes, expected_status: int, expected_type: str):
    assert status == expected_status, body
    document = orjson.loads(body)
    assert document["__type"] == expected_type
    assert document.get("Message") or document.get("message")
    assert headers["x-amz-crc32"] == str(zlib.crc32(body))
    assert re.fullmatch(r"[0-9A-Z]{52}", headers["x-amzn-requestid"])
    assert headers.get("connection", "").lower() == "close" or headers.get("content-type")


async def check_every_case(server: Server, parses_whole_buffer: bool = False, signed_at: float | None = None) -> None:
    for name, (request, status, error_type) in MALFORMED.items():
        got = answers(await exchange(server, [request]))
        assert len(got) == 1, name
        assert_dynamodb_error(*got[0], status, error_type)
    # A bad chunk after good ones, once the handler is already reading the body.
    got = answers(await exchange(server, [CHUNKED, b"2\r\n{}\r\n", b"zz\r\n"]))
    assert len(got) == 1
    assert_dynamodb_error(*got[0], 400, SERIALIZATION)
    # Pipelined: good requests are answered in order, the malformed one after them, then the connection closes.
    # (aiohttp's parser, given the whole buffer at once, refuses it before the good ones run: they are then neither
    # executed nor answered.)
    good = signed_head(time.time() if signed_at is None else signed_at) + b"Content-Length: 2\r\n\r\n{}"
    got = answers(await exchange(server, [good * 3 + HEAD + b"Content-Length: x\r\n\r\n{}" + good]))
    statuses = [status for status, _, _ in got]
    assert statuses in ([200, 200, 200, 400], [400]) if parses_whole_buffer else statuses == [200, 200, 200, 400]
    assert_dynamodb_error(*got[-1], 400, SERIALIZATION)


async def test_the_region_process_answers_every_framing_error_as_dynamodb_and_logs_no_traceback(region_server):
    await check_every_case(region_server)
    log = region_server.log_text()
    assert "Traceback" not in log
    assert len(re.findall(r"WARNING .*malformed request", log)) <= 2  # rate-limited: one line per 10 s


async def test_a_server_whose_connections_are_all_aiohttps_answers_the_same(caplog):
    caplog.set_level("WARNING")
    runner, front, server, target = await aiohttp_only_server(caplog)
    try:
        await check_every_case(target, parses_whole_buffer=True, signed_at=IN_PROCESS_WALL_TIME)
    finally:
        server.close()
        front.close()
        await runner.cleanup()
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.exc_info]


def test_quiet_log_writes_one_line_per_interval_and_counts_the_rest(caplog):
    now = [0.0]
    quiet = QuietLog(interval=10.0, clock=lambda: now[0])
    caplog.set_level("WARNING")
    for _ in range(1000):
        quiet.warning("refused %s", "x")
    now[0] = 10.5
    quiet.warning("refused %s", "y")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["refused x", "refused y (999 more malformed requests since the last report)"]


async def test_a_message_quoting_a_header_that_is_not_utf8_still_renders(region_server):
    # IncompleteSignatureException quotes the Authorization header; bytes that are not UTF-8 once made it a 500.
    request = HEAD.replace(b"Credential=a/", b"Cred\xffntial=a/") + b"Connection: close\r\nContent-Length: 2\r\n\r\n{}"
    ((status, _headers, body),) = answers(await exchange(region_server, [request]))
    assert status == 400, body
    document = orjson.loads(body)
    assert document["__type"] == "com.amazon.coral.service#IncompleteSignatureException"
    assert "Authorization header requires 'Credential' parameter." in document["message"]
