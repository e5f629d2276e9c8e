"""The aiohttp application of one region: a single handler on every path, speaking the DynamoDB wire protocol.

The request path is kept lean on purpose (a region should take well over 10,000 PutItem/s on two cores): one
handler on the raw request, no middlewares, the engine called inline on the event loop (it is synchronous and not
thread-safe; running it inline is both the fastest and the only correct way), orjson, zlib.crc32, and a counter for
request ids. Protocol decisions live in `wire.py`, content-coding (compressed requests and answers) in
`content_coding.py`; both run in `answer_post`, which the HTTP front (http_front.py) calls too, so the two paths
answer alike. The engine's background work (index backfills and purges) runs in bounded steps between requests,
owned by the application's cleanup context (a task owner, runtime/task_owner.py, entered at startup and left at
cleanup); so do the TTL sweep and the trim of stream records past retention, every `--ttl-sweep-interval` seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any

from aiohttp import web

from ..engine.engine import Engine
from ..engine.errors import DynamoError
from ..runtime.task_owner import task_owner
from ..runtime.transport import VERSION_HEADER
from . import content_coding, http_errors, wire

ENGINE = web.AppKey("engine", Engine)
REQUEST_IDS = web.AppKey("request_ids", wire.RequestIds)

# How often an idle region looks for background work (index backfills and purges); each step takes milliseconds.
BACKGROUND_POLL_S = 0.05

# TTL sweeping and stream retention: every interval, sweep passes in bounded steps (deleting at most this many
# items per step), yielding to requests between steps.
DEFAULT_TTL_SWEEP_INTERVAL_S = 30.0
TTL_SWEEP_LIMIT = 500
TTL_INTERVAL = web.AppKey("ttl_sweep_interval_s", float)

log = logging.getLogger("globaltables.region")

# The answer to an accepted DynamoDB POST, (headers, body, media type) -> (status, body, headers), shared by the
# aiohttp handler and the HTTP front (http_front.py), which serves the common case without aiohttp's machinery.
DYNAMODB_ANSWER = web.AppKey("dynamodb_answer", object)
# The same answer for a region whose requests may wait for other regions (strong mode): (headers, body, media type,
# done) -> None, and `done(status, body, response headers)` once answered, so the HTTP front serves those regions
# too, without a task per request.
DYNAMODB_ANSWER_SOON = web.AppKey("dynamodb_answer_soon", object)
# The answers to several accepted POSTs of one DynamoDB operation, (operation, [(headers, body, media type)]) ->
# [(status, body, headers)]: the group committer's batches of one loop turn (group_commit.py), phase by phase.
DYNAMODB_ANSWER_MANY = web.AppKey("dynamodb_answer_many", object)
# (headers, media type) -> the framed InternalServerError answer of a write whose group commit failed (group_commit.py).
FAILED_ANSWER = web.AppKey("failed_answer", object)


async def background_work(app: web.Application) -> AsyncIterator[None]:
    """Run the engine's background work in bounded steps between requests, for the application's lifetime."""
    engine = app[ENGINE]

    async def run() -> None:
        while True:
            if not engine.pending_work:
                await asyncio.sleep(BACKGROUND_POLL_S)
                continue
            try:
                engine.background_step()
            except Exception:  # keep serving; a failing step is retried after a pause, not in a hot loop
                log.exception("background step failed")
                await asyncio.sleep(1.0)
            await asyncio.sleep(0)  # let waiting requests run between steps

    async with task_owner() as tasks:
        tasks.start(run(), name="engine-background")
        yield


async def expiry_work(app: web.Application) -> AsyncIterator[None]:
    """Every TTL sweep interval: trim stream records past retention, then sweep expired items (a full pass over
    the TTL tables, in bounded steps), for the application's lifetime."""
    engine = app[ENGINE]
    interval = app[TTL_INTERVAL]

    async def run() -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                while engine.trim_change_log():
                    await asyncio.sleep(0)
                while True:
                    engine.sweep_expired(TTL_SWEEP_LIMIT)
                    if engine.ttl.pass_complete:
                        break
                    await asyncio.sleep(0)  # let waiting requests run between steps
            except Exception:  # keep serving; the next interval tries again
                log.exception("TTL sweep or stream trim failed")

    async with task_owner() as tasks:
        tasks.start(run(), name="ttl-sweep")
        yield


PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def metrics_route(render: Callable[[], str]) -> web.RouteDef:
    """`GET /metrics`: the Prometheus text `render` gives. Read-only and bound to 127.0.0.1 like every endpoint; no
    secret, so a stock Prometheus can scrape it."""

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=render().encode(), headers={"Content-Type": PROMETHEUS_TEXT})

    return web.get("/metrics", metrics)


def make_runner(app: web.Application, **options: Any) -> web.AppRunner:
    """The runner every region serves its app with. aiohttp must not decode request bodies itself: the DynamoDB
    handler decodes them (content_coding.py), the same way the HTTP front does, so both paths see the same bytes."""
    return web.AppRunner(app, auto_decompress=False, **options)


def make_app(
    engine: Engine,
    ttl_sweep_interval_s: float = DEFAULT_TTL_SWEEP_INTERVAL_S,
    routes: Iterable[web.AbstractRouteDef] = (),
    answer_async: Callable[[Any, str, bytes, str, bytes], Awaitable[tuple[int, bytes]]] | None = None,
    signing: Any = None,
    answer_soon: Callable[..., None] | None = None,
) -> web.Application:
    """The application serving `engine`. The caller owns the engine and its store (and closes them); serve it with
    `make_runner`.

    `routes` (replication and control, region/http_transport.py and control.py) are matched before the catch-all
    DynamoDB handler. `answer_async` replaces `wire.answer` for a region whose writes wait for other regions
    (strong mode, region/mrsc_host.py); its answers carry no version header. `answer_soon` is the same answer
    in callback form, `answer_soon(headers, query_string, body, path, signed, done)` calling `done(status, body)`,
    for the HTTP front. `signing` (signing.RequestSigning)
    checks every DynamoDB request's signature; `answer_async` does its own."""
    # aiohttp enforces the size limit itself while reading bodies without a Content-Length (chunked uploads).
    app = web.Application(client_max_size=wire.MAX_REQUEST_BYTES)
    app[ENGINE] = engine
    app[TTL_INTERVAL] = ttl_sweep_interval_s
    app[REQUEST_IDS] = request_ids = wire.RequestIds()
    next_id = request_ids.next
    answer = wire.answer
    framing = wire.framing
    media_type = wire.media_type
    max_bytes = wire.MAX_REQUEST_BYTES
    decode_request_body = content_coding.decode_request_body
    encode_answer = content_coding.encode_answer
    compress_over = content_coding.COMPRESS_OVER_BYTES

    def finish(
        request_headers: Mapping[str, str], status: int, body: bytes, content_type: str, version: str | None = None
    ) -> tuple[int, bytes, dict[str, str]]:
        """Every answer's last step, on both paths: compression as the request accepts it, the framing headers
        (the checksum is of the bytes sent), the item version, CORS."""
        coding = None
        if len(body) > compress_over:  # most answers are small: nothing to negotiate
            body, coding = encode_answer(body, request_headers.get("Accept-Encoding"))
        headers = framing(next_id(), body, content_type)
        if coding is not None:
            headers["Content-Encoding"] = coding
        if version is not None:  # global tables: which item version this answer wrote or read
            headers[VERSION_HEADER] = version
        if request_headers.get("Origin") is not None:
            headers.update(wire.cors_headers(request_headers))
        return status, body, headers

    def respond(request: web.Request, status: int, body: bytes, content_type: str) -> web.Response:
        status, body, headers = finish(request.headers, status, body, content_type)
        return web.Response(status=status, body=body, headers=headers)

    async def handle(request: web.Request) -> web.Response:
        if request.version not in http_errors.SUPPORTED_VERSIONS:  # `HTTP/2.0` as a request line (http_errors.py)
            return http_errors.unsupported_version(request)
        if request.method != "POST":
            if request.method in ("GET", "HEAD") and request.path == "/":
                return respond(request, 200, wire.health_body(request.host), "text/plain")
            if request.method == "OPTIONS" and request.headers.get("Origin") is not None:
                headers = {"x-amzn-RequestId": next_id(), **wire.cors_headers(request.headers, preflight=True)}
                return web.Response(status=200, headers=headers)
            return respond(request, 404, wire.NOT_FOUND_BODY, wire.AMZ_JSON)
        content_type = media_type(request.headers.get("Content-Type"))
        if content_type is None or request.path != "/":
            return respond(request, 404, wire.NOT_FOUND_BODY, wire.AMZ_JSON)
        declared = request.content_length
        if declared is not None and declared > max_bytes:
            return too_large(request, content_type)
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return too_large(request, content_type)
        if answer_async is not None:
            status, body, headers = await answer_post_async(
                request.headers, raw, content_type, request.query_string, request.path
            )
        else:
            status, body, headers = answer_post(request.headers, raw, content_type, request.query_string, request.path)
        return web.Response(status=status, body=body, headers=headers)

    def answer_post(
        headers: Mapping[str, str], raw: bytes, content_type: str, query_string: str = "", path: str = "/"
    ) -> tuple[int, bytes, dict[str, str]]:
        try:
            request_body = decode_request_body(raw, headers.get("Content-Encoding"))
        except DynamoError as error:  # not decodable: nothing is executed
            return finish(headers, *wire.error_answer(error), content_type)
        # The signature covers the bytes as sent (a compressed body compressed), the engine reads them decoded.
        status, body, version = answer(engine, headers, query_string, request_body, signing, path, raw)
        return finish(headers, status, body, content_type, version)

    async def answer_post_async(
        headers: Mapping[str, str], raw: bytes, content_type: str, query_string: str, path: str = "/"
    ) -> tuple[int, bytes, dict[str, str]]:
        assert answer_async is not None
        try:
            request_body = decode_request_body(raw, headers.get("Content-Encoding"))
        except DynamoError as error:
            return finish(headers, *wire.error_answer(error), content_type)
        status, body = await answer_async(headers, query_string, request_body, path, raw)
        return finish(headers, status, body, content_type)

    def answer_post_many(
        operation: str, posts: list[tuple[Mapping[str, str], bytes, str]]
    ) -> list[tuple[int, bytes, dict[str, str]]]:
        """`answer_post` for POSTs to `/` of one DynamoDB `operation` (the requests of one loop turn: the group
        committer's batches, region/group_commit.py), each given as (headers, body as sent, media type): their
        answers in order, each as `answer_post` gives it (wire.answer_many)."""
        answers: list[tuple[int, bytes, dict[str, str]] | None] = [None] * len(posts)
        decoded: list[tuple[Mapping[str, str], bytes, bytes]] = []
        placed: list[int] = []
        for index, (headers, raw, content_type) in enumerate(posts):
            try:
                decoded.append((headers, decode_request_body(raw, headers.get("Content-Encoding")), raw))
                placed.append(index)
            except DynamoError as error:  # not decodable: nothing is executed
                answers[index] = finish(headers, *wire.error_answer(error), content_type)
        answered = wire.answer_many(engine, operation, decoded, signing)
        for index, (status, body, version) in zip(placed, answered, strict=True):
            headers, _raw, content_type = posts[index]
            answers[index] = finish(headers, status, body, content_type, version)
        return answers  # type: ignore[return-value]

    def answer_post_soon(
        headers: Mapping[str, str], raw: bytes, content_type: str, done: Callable[[int, bytes, dict[str, str]], None]
    ) -> None:
        assert answer_soon is not None
        try:
            request_body = decode_request_body(raw, headers.get("Content-Encoding"))
        except DynamoError as error:
            done(*finish(headers, *wire.error_answer(error), content_type))
            return
        answer_soon(
            headers, "", request_body, "/", raw, lambda status, body: done(*finish(headers, status, body, content_type))
        )

    def failed_answer(headers: Mapping[str, str], content_type: str) -> tuple[int, bytes, dict[str, str]]:
        return finish(headers, 500, wire.INTERNAL_ERROR_BODY, content_type)

    def too_large(request: web.Request, content_type: str) -> web.Response:
        response = respond(request, *wire.error_answer(wire.TOO_LARGE), content_type)
        # The unread remainder of the body cannot be skipped cheaply; the connection is not reused.
        response.force_close()
        return response

    app.add_routes(routes)
    app.router.add_route("*", "/{path:.*}", handle)
    # None: every request must be able to wait (strong mode); the front then answers through DYNAMODB_ANSWER_SOON.
    app[DYNAMODB_ANSWER] = answer_post if answer_async is None else None
    app[DYNAMODB_ANSWER_MANY] = answer_post_many if answer_async is None else None
    app[DYNAMODB_ANSWER_SOON] = answer_post_soon if answer_soon is not None else None
    app[FAILED_ANSWER] = failed_answer
    app.cleanup_ctx.append(background_work)
    app.cleanup_ctx.append(expiry_work)
    return app
