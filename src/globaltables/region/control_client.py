"""Calling another region's secret-protected control API: the one client the multi-region procedures share (adding
and removing replicas, converting a table to strong consistency)."""

from __future__ import annotations

import aiohttp
import orjson

from .http_transport import SECRET_HEADER


class Refused(Exception):
    """A region answered a step with a DynamoDB error (HTTP 409): the procedure cannot go on as asked."""


async def post_control(
    session: aiohttp.ClientSession, endpoint: str | None, region: str, path: str, secret: str, body: dict
) -> dict:
    """POST one step to `region`'s control API at `path`; its JSON answer. Raises LookupError while the region's
    endpoint is unknown, Refused for a DynamoDB refusal, aiohttp.ClientError for anything else."""
    if endpoint is None:
        raise LookupError(f"no endpoint known for {region} yet")
    async with session.post(
        endpoint.rstrip("/") + path,
        data=orjson.dumps(body),
        headers={SECRET_HEADER: secret, "Content-Type": "application/json"},
    ) as response:
        answer = orjson.loads(await response.read() or b"{}")
        if response.status == 409:
            raise Refused(answer.get("error", "refused"))
        if response.status != 200:
            raise aiohttp.ClientError(f"{region} answered {body['op']} with {response.status}: {answer}")
        return answer
