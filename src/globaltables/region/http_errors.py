"""Requests that are not even well-formed HTTP/1.1, answered in DynamoDB's JSON error shape and logged quietly.

Why: below the DynamoDB protocol, aiohttp answers a request it cannot parse (a bad or repeated Content-Length, a bad
chunk size, a header line without a colon, a NUL byte, obsolete line folding, an unknown HTTP version, the HTTP/2
preface, an oversized head, too many headers) with a text/plain 400 and logs a full traceback for each one. A client
that can reach the port could grow the log by megabytes and gets an answer no SDK can parse.

Rules
1. Every framing error is answered with a DynamoDB-shaped body (`__type`, `Message`) and the framing headers every
   answer carries (request id, CRC32, Content-Type): `SerializationException` (400) for a request that cannot be
   read, `RequestEntityTooLargeException` (413) for a head over aiohttp's limits (8190 bytes a line, 128 header
   lines). The connection is closed after the answer: nothing after a framing error can be trusted to be a request
   boundary.
2. A request whose HTTP version is neither 1.0 nor 1.1 (`HTTP/2.0` written as a request line) is a framing error
   too; HTTP/2 itself (the connection preface) is refused by the parser.
3. Logs: a malformed request is logged at WARNING, one line, no traceback, and at most one line per
   `QUIET_INTERVAL_S` (the next line says how many were not logged). A real internal error (any other exception
   reaching aiohttp) still logs its traceback and answers a generic 500 InternalServerError.
4. Both HTTP paths use this handler: the HTTP front (http_front.py) hands every connection it does not serve to a
   `DynamoRequestHandler`, and so does every connection of a region without the front (strong mode).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler, _ErrInfo

from ..engine.errors import DynamoError, SerializationException
from . import wire

log = logging.getLogger("globaltables.region")

QUIET_INTERVAL_S = 10.0
SUPPORTED_VERSIONS = ((1, 0), (1, 1))
_SHOWN_DETAIL = 200  # characters of the parser's explanation kept in the answer and the log line


class QuietLog:
    """At most one WARNING line per `interval` seconds about refused requests; the rest are counted."""

    def __init__(self, interval: float = QUIET_INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        self._next = float("-inf")
        self._suppressed = 0

    def warning(self, message: str, *args: object) -> None:
        now = self.clock()
        if now < self._next:
            self._suppressed += 1
            return
        self._next = now + self.interval
        if self._suppressed:
            message += " (%d more malformed requests since the last report)"
            args = (*args, self._suppressed)
            self._suppressed = 0
        log.warning(message, *args)


MALFORMED = QuietLog()  # one per process: the budget is the log's, not a connection's
_REQUEST_IDS = wire.RequestIds()


def framing_error(exc: BaseException | None) -> DynamoError:
    """The DynamoDB error a request that is not well-formed HTTP gets."""
    detail = _detail(exc)
    if detail.startswith("Pause on PRI"):  # the HTTP/2 connection preface
        return SerializationException("Malformed HTTP request: HTTP/2 is not supported; use HTTP/1.1")
    if isinstance(exc, LineTooLong) or "too many headers" in detail.lower():
        return wire.RequestEntityTooLargeException(f"Request header fields too large: {detail}")
    return SerializationException(f"Malformed HTTP request: {detail}")


def _detail(exc: object) -> str:
    if isinstance(exc, HttpProcessingError):
        text = exc.message or type(exc).__name__
    else:
        text = str(exc) if exc else "bad request"
    # aiohttp's explanation is a few lines and then the offending bytes with a caret under them: keep the words.
    words = []
    for line in text.strip().splitlines():
        if not line.strip():
            break
        words.append(line.strip().rstrip(":"))
    first = ": ".join(words) or type(exc).__name__
    return first if len(first) <= _SHOWN_DETAIL else first[: _SHOWN_DETAIL - 3] + "..."


def is_malformed(exc: BaseException | None) -> bool:
    """Whether an exception aiohttp reports means the client sent bad HTTP (not a bug of ours)."""
    return isinstance(exc, HttpProcessingError)


def error_response(request: web.BaseRequest, error: DynamoError) -> web.Response:
    status, body = wire.error_answer(error)
    content_type = wire.media_type(request.headers.get("Content-Type")) or wire.AMZ_JSON
    response = web.Response(status=status, body=body, headers=wire.framing(_REQUEST_IDS.next(), body, content_type))
    response.force_close()
    return response


def unsupported_version(request: web.BaseRequest) -> web.Response:
    """The refusal of a request line with an HTTP version other than 1.0 and 1.1 (rule 2)."""
    version = f"HTTP/{request.version.major}.{request.version.minor}"
    MALFORMED.warning("refused a request from %s: unsupported HTTP version %s", request.remote, version)
    return error_response(request, SerializationException(f"Malformed HTTP request: unsupported version {version}"))


class DynamoRequestHandler(RequestHandler):
    """aiohttp's connection handler, answering its error cases as DynamoDB does (module rules 1 and 3)."""

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # A framing error in the body of a request already being handled (a bad chunk size after good chunks):
        # aiohttp queues the error behind that request, whose handler then waits for the rest of a body that never
        # comes. Fail the body read instead, so the request is answered (400) and the connection closed.
        request = self._current_request
        if request is None or not self._messages:
            return
        error, _payload = self._messages[-1]
        if isinstance(error, _ErrInfo) and isinstance(error.exc, HttpProcessingError) and not request.content.at_eof():
            request.content.set_exception(error.exc)
            request.content.feed_eof()  # nothing more is read from this body (aiohttp would linger on it)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if request.writer.output_size > 0:  # an answer is on its way already: only closing is left (as aiohttp)
            raise ConnectionError("Response is sent already, cannot send another response with the error message")
        if isinstance(exc, ConnectionError):  # the client went away mid-request: nobody to answer, nothing wrong
            MALFORMED.warning("a client at %s closed its connection mid-request", request.remote)
            raise exc
        if is_malformed(exc) or (exc is None and status == 400):
            MALFORMED.warning("refused a malformed request from %s: %s", request.remote, _detail(exc or message))
            return error_response(request, framing_error(exc or (HttpProcessingError(message=message or ""))))
        if status == 504:  # a handler timed out (aiohttp's own case; none of ours sets a timeout)
            log.warning("request from %s timed out", request.remote)
        else:
            log.error("internal error answering a request from %s", request.remote, exc_info=exc)
        response = web.Response(
            status=500,
            body=wire.INTERNAL_ERROR_BODY,
            headers=wire.framing(_REQUEST_IDS.next(), wire.INTERNAL_ERROR_BODY, wire.AMZ_JSON),
        )
        response.force_close()
        return response


def handler_factory(server: web.Server) -> Callable[[], RequestHandler]:
    """New connections of `server` (the region's AppRunner server) handled by DynamoRequestHandler, with the same
    settings aiohttp's own factory (`Server.__call__`) gives its handlers."""
    settings = dict(server._kwargs)  # what the AppRunner was given (access_log=None, ...)

    def make() -> RequestHandler:
        return DynamoRequestHandler(server, loop=server._loop, **settings)

    return make
