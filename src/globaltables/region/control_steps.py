"""The steps of multi-region procedures (adding and removing replicas, converting a table to strong consistency):
one client that posts a step to another region's secret-protected control API, and one route that serves them.

A step is a JSON object with an `op`; the answer is JSON: 200 with the result, 400 for a malformed step, 401 without
the shared secret (nothing changes), 409 when the region refuses with a DynamoDB error (the client raises Refused).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from ..engine.errors import DynamoError
from .control_client import AsyncControlClient, ControlError

log = logging.getLogger("globaltables.region.control")


async def drive_each(
    pending: Callable[[], dict[Hashable, tuple]],
    drive: Callable[..., Awaitable[None]],
    running: dict,
    interval: float,
    session: aiohttp.ClientSession,
) -> None:
    """Until cancelled, every `interval`: start `drive(*args)` for every procedure `pending()` lists ({key: args})
    that has no live task in `running` (a failed or finished one is started again while still pending). The drives
    are children of one TaskGroup: on the way out every one is cancelled and awaited, then the steps' session is
    closed."""
    try:
        async with asyncio.TaskGroup() as drives:
            while True:
                for key, args in pending().items():
                    task = running.get(key)
                    if task is None or task.done():
                        running[key] = drives.create_task(_contained(drive(*args)))
                await asyncio.sleep(interval)
    finally:
        await session.close()


async def _contained(drive: Awaitable[None]) -> None:
    """One procedure's drive; its failure is logged and left for the next scan to retry, never let to cancel the
    other procedures."""
    try:
        await drive
    except Exception:
        log.exception("a multi-region procedure step failed; it is retried while still pending")


class Refused(Exception):
    """A region answered a step with a DynamoDB error (HTTP 409): the procedure cannot go on as asked."""


async def post_control(
    session: aiohttp.ClientSession, endpoint: str | None, region: str, path: str, secret: str, body: dict
) -> dict:
    """POST one step to `region`'s control API at `path`; its JSON answer. Raises LookupError while the region's
    endpoint is unknown, Refused for a DynamoDB refusal, ControlError (an OSError) for anything else."""
    if endpoint is None:
        raise LookupError(f"no endpoint known for {region} yet")
    try:
        return await AsyncControlClient(session, secret).call(endpoint, path, body, region=region)
    except ControlError as error:
        if error.status == 409:
            raise Refused(error.answer.get("error", "refused")) from None
        raise


def step_route(
    path: str, handle: Callable[[dict], dict], authenticated: Callable[[web.Request], bool]
) -> web.RouteDef:
    """The POST route serving steps at `path` with `handle(step) -> answer` (ValueError: malformed step)."""

    async def serve(request: web.Request) -> web.Response:
        if not authenticated(request):
            return json_response({"error": "the control API requires the topology's shared secret"}, 401)
        try:
            body = orjson.loads(await request.read() or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            return json_response(handle(body))
        except (ValueError, orjson.JSONDecodeError) as error:
            return json_response({"error": str(error)}, 400)
        except DynamoError as error:
            return json_response({"error": error.message, "type": type(error).__name__}, 409)

    return web.post(path, serve)


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")
