"""The aiohttp application of one region: a single handler on every path, speaking the DynamoDB wire protocol.

The request path is kept lean on purpose (a region should take well over 10,000 PutItem/s on two cores): one
handler on the raw request, no middlewares, the engine called inline on the event loop (it is synchronous and not
thread-safe; running it inline is both the fastest and the only correct way), orjson, zlib.crc32, and a counter for
request ids. Protocol decisions live in `wire.py`. The engine's background work (index backfills and purges) runs
in bounded steps between requests, owned by the application's cleanup context; so do the TTL sweep and the trim
of stream records past retention, every `--ttl-sweep-interval` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any

from aiohttp import web

from ..engine.engine import Engine
from . import wire

ENGINE = web.AppKey("engine", Engine)
REQUEST_IDS = web.AppKey("request_ids", wire.RequestIds)

# The version ("<hlc>/<region>") of the item a data-plane answer wrote or read, when the table is global.
VERSION_HEADER = "x-globaltables-version"

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

    task = asyncio.create_task(run())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


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

    task = asyncio.create_task(run())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def make_app(
    engine: Engine,
    ttl_sweep_interval_s: float = DEFAULT_TTL_SWEEP_INTERVAL_S,
    routes: Iterable[web.AbstractRouteDef] = (),
    answer_async: Callable[[Any, str, bytes, str], Awaitable[tuple[int, bytes]]] | None = None,
    signing: Any = None,
) -> web.Application:
    """The application serving `engine`. The caller owns the engine and its store (and closes them).

    `routes` (replication and control, region/http_transport.py and control.py) are matched before the catch-all
    DynamoDB handler. `answer_async` replaces `wire.answer` for a region whose writes wait for other regions
    (strong mode, region/mrsc_host.py); its answers carry no version header. `signing` (signing.RequestSigning)
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

    def respond(status: int, body: bytes, content_type: str) -> web.Response:
        return web.Response(status=status, body=body, headers=framing(next_id(), body, content_type))

    async def handle(request: web.Request) -> web.Response:
        if request.method != "POST":
            if request.method in ("GET", "HEAD") and request.path == "/":
                return respond(200, wire.health_body(request.host), "text/plain")
            return respond(404, wire.NOT_FOUND_BODY, wire.AMZ_JSON)
        content_type = media_type(request.headers.get("Content-Type"))
        if content_type is None:
            return respond(404, wire.NOT_FOUND_BODY, wire.AMZ_JSON)
        declared = request.content_length
        if declared is not None and declared > max_bytes:
            return too_large(content_type)
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return too_large(content_type)
        if answer_async is not None:
            status, body = await answer_async(request.headers, request.query_string, raw, request.path)
            return web.Response(status=status, body=body, headers=framing(next_id(), body, content_type))
        status, body, headers = answer_post(request.headers, raw, content_type, request.query_string, request.path)
        return web.Response(status=status, body=body, headers=headers)

    def answer_post(
        headers: Mapping[str, str], raw: bytes, content_type: str, query_string: str = "", path: str = "/"
    ) -> tuple[int, bytes, dict[str, str]]:
        engine.response_version = None  # a request refused before the engine must not show the previous one's
        status, body = answer(engine, headers, query_string, raw, signing, path)
        response_headers = framing(next_id(), body, content_type)
        version = engine.response_version  # global tables: which item version this answer wrote or read
        if version is not None:
            response_headers[VERSION_HEADER] = version
        return status, body, response_headers

    def too_large(content_type: str) -> web.Response:
        response = respond(*wire.error_answer(wire.TOO_LARGE), content_type)
        # The unread remainder of the body cannot be skipped cheaply; the connection is not reused.
        response.force_close()
        return response

    app.add_routes(routes)
    app.router.add_route("*", "/{path:.*}", handle)
    # None: every request must be able to wait (strong mode), so the synchronous HTTP front must not serve any.
    app[DYNAMODB_ANSWER] = answer_post if answer_async is None else None
    app.cleanup_ctx.append(background_work)
    app.cleanup_ctx.append(expiry_work)
    return app
