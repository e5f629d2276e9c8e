"""The region's HTTP/1.1 front: plain DynamoDB requests answered straight from the socket, everything else by aiohttp.

Why: a PutItem's engine work costs about 26 us, aiohttp's request machinery (parser callbacks, a request object, a
response object, a stream writer, the handler task's wake-ups) about twice that again. A DynamoDB client sends one
shape of request almost exclusively (`POST /` with a Content-Length, a JSON media type and a handful of headers),
so this protocol parses that shape itself, calls the same answer function as the aiohttp handler (app.py
`DYNAMODB_ANSWER`: the same checks, the same engine call, the same framing headers) and writes the same bytes
aiohttp would (status line, headers in aiohttp's order, Date and Server).

Why regular expressions and not llhttp (httptools, the C parser uvicorn uses; aiohttp's own parser is llhttp too):
measured on a botocore-shaped PutItem head, httptools parses in about 10-11 us of CPU against 15-19 us here, but
through the whole front (engine included, in process, best of six rounds) the two were within noise of each other
(PutItem 53.6 vs 49.6 us, GetItem 36.1 vs 38.3 us), while llhttp's callbacks give no byte offsets, which the
hand-over from the start of a pipelined request needs. Every request this front does not take is parsed by llhttp
anyway, in aiohttp.

Theory of operation
1. Every accepted connection starts here. Requests are taken from the buffer one by one (pipelining works) and
   answered inline, in arrival order; the engine is synchronous, so a request is done when `data_received` returns.
   A strong-mode region's requests may wait for other regions (app.py `DYNAMODB_ANSWER_SOON`): such a request is
   answered from a callback once its commit or sync is done, and the connection takes its next request only then,
   so answers keep the order of the requests. No task is started for it (aiohttp would start one per request).
2. A request is served here only if its head is strictly well formed (request line exactly `POST / HTTP/1.1`,
   token header names, printable ASCII values, no repeated header, within aiohttp's size limits) with a
   Content-Length no larger than the 16 MiB limit, a JSON media type, and none of Transfer-Encoding, Expect,
   Upgrade or Connection. This is a strict subset of what aiohttp accepts and answers the same way. Compressed
   bodies and compressed answers need nothing here: the shared answer decodes and encodes them (content_coding.py),
   and tests/region/test_two_paths.py holds both paths to the same bytes.
3. Any other request (health check, other paths, presigned query strings, chunked or oversized bodies, `Expect:
   100-continue`, WebSocket upgrades of replication links, control routes, anything malformed) hands the whole
   connection to aiohttp: a fresh `RequestHandler` of the runner's server takes the transport and the unconsumed
   bytes from the start of that request, and keeps the connection for the rest of its life. So every behaviour
   outside the common case is aiohttp's, with its error answers in DynamoDB's shape (http_errors.py). A buffer that
   cannot start a POST (a TLS handshake, the HTTP/2 preface) is handed over at once, not after 8 KiB.
4. Flow control: while the transport's write buffer is full, reading pauses and buffered requests wait.
5. Group commit (group_commit.py): with a committer, a write request (`GROUPED_TARGETS`) is queued to it rather
   than answered inline, and so is a GetItem or Query (`PHASED_TARGETS`: the committer runs the like requests of a
   loop turn phase by phase, its rule 6), and any request while the committer has work queued (a connection's
   answers stay in its requests' order, and a read waits for the writes before it to be durable); the answer is
   written when the committer delivers it. A connection with answers still owed is not handed to aiohttp until they
   are written. (Strong-mode regions have no committer: their requests wait as rule 1 says.)
6. Connections idle longer than aiohttp's keep-alive timeout are closed by a periodic sweep (`sweep_idle`, a task
   of the region's server lifetime); `close` (at shutdown) closes every connection still here. A strong-mode request
   still waiting then loses its connection, as its client would through aiohttp; its write goes on being resolved.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import time
from collections.abc import Callable, Mapping
from email.utils import formatdate
from http import HTTPStatus

from aiohttp import web
from aiohttp.http import SERVER_SOFTWARE

from . import http_errors, wire
from .group_commit import GROUPED_TARGETS, PHASED_TARGETS, GroupCommit

log = logging.getLogger("globaltables.region")

# (headers, body, media type) -> (status, body, response headers); app.py's answer to an accepted POST.
Answer = Callable[[Mapping[str, str], bytes, str], tuple[int, bytes, dict[str, str]]]
# (headers, body, media type, done) -> None, `done(status, body, response headers)` later: a strong region's answer.
AnswerSoon = Callable[[Mapping[str, str], bytes, str, Callable[[int, bytes, dict[str, str]], None]], None]
# (operation, [(headers, body, media type)]) -> their answers in order; app.py's answer to a committer's batch.
AnswerMany = Callable[[str, list[tuple[Mapping[str, str], bytes, str]]], list[tuple[int, bytes, dict[str, str]]]]
# (headers, media type) -> the framed InternalServerError answer of a request whose group commit failed.
FailedAnswer = Callable[[Mapping[str, str], str], tuple[int, bytes, dict[str, str]]]

# aiohttp's own limits (RequestHandler defaults): a longer head or more headers goes to aiohttp, which refuses it.
MAX_HEAD_BYTES = 8190
MAX_HEADERS = 128
# aiohttp's RequestHandler default keep-alive timeout, and how often idle connections are looked for.
KEEPALIVE_TIMEOUT_S = 3630.0
SWEEP_INTERVAL_S = 60.0

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_REQUEST_LINE = "POST / HTTP/1.1\r\n"
# One header line: name, the whitespace after the colon, the value. Greedy value, trailing whitespace stripped
# after: a lazy value with a trailing [ \t]* backtracks at every byte. The head is well formed exactly when the
# lines found cover it with nothing between them (`_serve_buffer` adds their lengths up), so it is scanned once: a
# second pattern validating the whole head cost as much again, some 7 % of a GetItem's CPU.
_FIELD = re.compile(rf"({_TOKEN}):([ \t]*)([\t\x20-\x7e]*)\r\n")
# Headers whose semantics the fast path does not implement: their presence sends the request to aiohttp.
_SLOW_HEADERS = ("transfer-encoding", "expect", "upgrade", "connection")
_POST = b"POST "  # how every request this front serves starts
_STATUS_LINES = {s.value: f"HTTP/1.1 {s.value} {s.phrase}\r\n" for s in HTTPStatus}


class Headers(dict):
    """Request headers keyed by lower-cased name; `get` is case-insensitive, like aiohttp's CIMultiDict."""

    __slots__ = ()

    def get(self, name: str, default=None):  # type: ignore[override]
        return dict.get(self, name.lower(), default)


class HttpFront:
    """The protocol factory the region listens with (see the module doc); `aiohttp_server` is the runner's server,
    which takes over connections the fast path does not serve."""

    def __init__(
        self,
        aiohttp_server: web.Server,
        answer: Answer | None,
        answer_soon: AnswerSoon | None = None,
        *,
        committer: GroupCommit | None = None,
        failed_answer: FailedAnswer | None = None,
        answer_many: AnswerMany | None = None,
    ) -> None:
        self.aiohttp_server = aiohttp_server
        self.aiohttp_handler = http_errors.handler_factory(aiohttp_server)  # a connection aiohttp serves
        self.answer = answer
        self.answer_soon = answer_soon
        self.answer_many = answer_many  # None: each request is answered alone
        # Group commit serves synchronous answers only (a strong region's requests wait on their own).
        self.committer = committer if failed_answer is not None and answer is not None else None
        self.failed_answer = failed_answer
        self.loop = asyncio.get_running_loop()
        self.connections: set[FastConnection] = set()
        self._date_second = -1
        self._date = ""

    def __call__(self) -> asyncio.Protocol:
        if self.answer is None and self.answer_soon is None:  # an app without either answer: aiohttp serves it all
            return self.aiohttp_handler()
        return FastConnection(self)

    def date(self) -> str:
        """The Date header's value, formatted once a second (as aiohttp does)."""
        now = int(time.time())
        if now != self._date_second:
            self._date_second, self._date = now, formatdate(now, usegmt=True)
        return self._date

    async def sweep_idle(self) -> None:
        """Close connections idle past the keep-alive timeout, until cancelled; its owner is the region's server
        lifetime (region/main.py)."""
        while True:
            await asyncio.sleep(SWEEP_INTERVAL_S)
            deadline = self.loop.time() - KEEPALIVE_TIMEOUT_S
            for connection in [c for c in self.connections if c.idle_since < deadline]:
                connection.close()

    def close(self) -> None:
        """Close every connection still served here (at shutdown)."""
        for connection in list(self.connections):
            connection.close()


class Queued:
    """A request of a connection queued to the committer (group_commit.Work); `batch`: its operation when the
    committer may run it with the like requests queued after it (group_commit.py rule 6)."""

    __slots__ = ("batch", "connection", "grouped", "headers", "media", "raw")
    whole = False  # one request: its write rolls back alone

    def __init__(
        self, connection: FastConnection, headers: Headers, raw: bytes, media: str, grouped: bool,
        batch: str | None = None,
    ) -> None:  # fmt: skip
        self.connection = connection
        self.headers = headers
        self.raw = raw
        self.media = media
        self.grouped = grouped
        self.batch = batch

    def run_many(self, works: list[Queued]) -> list[tuple[int, bytes, dict[str, str]]]:
        front = self.connection.front
        try:
            posts = [(work.headers, work.raw, work.media) for work in works]
            return front.answer_many(self.batch, posts)  # type: ignore[misc]
        except Exception:  # a bug (each request's errors are its answer): a generic 500 each, the trace logged
            log.exception("HTTP front failed to answer %d requests", len(works))
            return [front.failed_answer(work.headers, work.media) for work in works]  # type: ignore[misc]

    def run(self) -> tuple[int, bytes, dict[str, str]]:
        front = self.connection.front
        try:
            return front.answer(self.headers, self.raw, self.media)  # type: ignore[misc]
        except Exception:  # a bug (the answer catches every error of the request): a generic 500, the trace logged
            log.exception("HTTP front failed to answer a request")
            return front.failed_answer(self.headers, self.media)  # type: ignore[misc]

    def deliver(self, answer: tuple[int, bytes, dict[str, str]]) -> None:
        self.connection._owed_answer(answer)

    def fail(self) -> None:
        self.connection._owed_answer(self.connection.front.failed_answer(self.headers, self.media))  # type: ignore[misc]


class FastConnection(asyncio.Protocol):
    __slots__ = ("buffer", "front", "idle_since", "owed", "paused", "serving", "transport", "waiting")

    def __init__(self, front: HttpFront) -> None:
        self.front = front
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.paused = False
        self.waiting = False  # a strong-mode request is being answered: the next one waits for it (rule 1)
        self.serving = False  # inside `_serve`: an answer that comes at once lets that loop go on
        self.owed = 0  # answers the committer still has to deliver
        self.idle_since = front.loop.time()

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.front.connections.add(self)
        sock = transport.get_extra_info("socket")
        if sock is not None:  # as aiohttp's RequestHandler does (tcp_keepalive); uvloop sets TCP_NODELAY itself
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            except OSError:
                pass

    def connection_lost(self, exc) -> None:
        self.front.connections.discard(self)
        self.transport = None

    def pause_writing(self) -> None:
        self.paused = True
        if self.transport is not None:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.paused = False
        if self.transport is not None:
            self.transport.resume_reading()
            if not self.waiting:
                self._serve()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.paused and not self.waiting:
            self._serve()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def _serve(self) -> None:
        """Answer every complete request in the buffer, or hand the connection to aiohttp at the first one this
        front does not serve."""
        self.serving = True
        try:
            self._serve_buffer()
        finally:
            self.serving = False

    def _serve_buffer(self) -> None:
        buffer = self.buffer
        while buffer and not self.paused and not self.waiting and self.transport is not None:
            end = buffer.find(b"\r\n\r\n", 0, MAX_HEAD_BYTES + 4)
            if end < 0:
                if len(buffer) > MAX_HEAD_BYTES + 3 or not _POST.startswith(buffer[:5]):
                    self._hand_over()
                return
            head = buffer[: end + 2].decode("latin-1")
            if not head.startswith(_REQUEST_LINE):
                self._hand_over()
                return
            fields = _FIELD.findall(head, len(_REQUEST_LINE))
            headers = Headers()
            covered = len(_REQUEST_LINE)
            for name, space, value in fields:
                covered += len(name) + len(space) + len(value) + 3  # the colon and the CRLF
                headers[name.lower()] = value.rstrip(" \t")
            length = headers.get("content-length")
            if (
                covered != len(head)  # something between the header lines that is not one
                or len(headers) != len(fields)  # a repeated header
                or len(fields) > MAX_HEADERS
                or length is None
                or not length.isdigit()
                or len(length) > 9
                or int(length) > wire.MAX_REQUEST_BYTES
                or any(name in headers for name in _SLOW_HEADERS)
            ):
                self._hand_over()
                return
            media = wire.media_type(headers.get("content-type"))
            if media is None:
                self._hand_over()
                return
            start = end + 4
            stop = start + int(length)
            if len(buffer) < stop:
                return
            raw = bytes(buffer[start:stop])
            del buffer[:stop]
            front = self.front
            committer = front.committer
            if committer is not None:
                target = headers.get("x-amz-target")
                grouped = target in GROUPED_TARGETS
                batch = PHASED_TARGETS.get(target) if front.answer_many is not None else None
                if grouped or batch is not None or committer.busy:
                    self.owed += 1
                    committer.submit(Queued(self, headers, raw, media, grouped, batch))
                    continue
            self._respond(headers, raw, media)

    def _owed_answer(self, answer: tuple[int, bytes, dict[str, str]]) -> None:
        self.owed -= 1
        if self.transport is None:  # the client went away meanwhile
            return
        try:
            self._write(*answer)
        except Exception:
            self._fail()
            return
        if not self.owed and self.buffer and not self.paused:  # a request held back until its turn (a hand-over)
            self._serve()

    def _respond(self, headers: Headers, raw: bytes, media: str) -> None:
        front = self.front
        try:
            if front.answer is None:  # a strong region's: answered from `_answered`, maybe later
                self.waiting = True
                front.answer_soon(headers, raw, media, self._answered)  # type: ignore[misc]
                return
            self._write(*front.answer(headers, raw, media))
        except Exception:  # a bug here: drop the connection (as aiohttp does on a handler crash), keep serving others
            self._fail()

    def _answered(self, status: int, body: bytes, response_headers: dict[str, str]) -> None:
        self.waiting = False
        if self.transport is None:  # closed meanwhile (shutdown, or the client left)
            return
        try:
            self._write(status, body, response_headers)
        except Exception:
            self._fail()
            return
        if not self.serving and not self.paused:  # answered later: take the requests that arrived meanwhile
            self._serve()

    def _write(self, status: int, body: bytes, response_headers: dict[str, str]) -> None:
        front = self.front
        lines = [_STATUS_LINES[status]]
        lines.extend(f"{name}: {value}\r\n" for name, value in response_headers.items())
        lines.append(f"Content-Length: {len(body)}\r\nDate: {front.date()}\r\nServer: {SERVER_SOFTWARE}\r\n\r\n")
        self.transport.write("".join(lines).encode() + body)
        self.idle_since = front.loop.time()

    def _fail(self) -> None:
        log.exception("HTTP front failed to answer a request")
        self.buffer.clear()  # pipelined requests behind it go unanswered, with the connection
        self.waiting = False
        if self.transport is not None:
            self.transport.abort()

    def _hand_over(self) -> None:
        """Give this connection, from the start of the current request, to aiohttp for the rest of its life; once
        the answers the committer owes it are written (`_owed_answer` serves the buffer again)."""
        if self.owed:
            return
        transport, data = self.transport, bytes(self.buffer)
        self.front.connections.discard(self)
        self.transport = None
        self.buffer = bytearray()
        handler = self.front.aiohttp_handler()
        transport.set_protocol(handler)
        handler.connection_made(transport)
        if data:
            handler.data_received(data)
