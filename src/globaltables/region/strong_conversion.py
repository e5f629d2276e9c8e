"""Tables made strong (MRSC) through UpdateTable: the region-layer half of engine/strong_membership.py.

Theory of operation: UpdateTable marks the table strong in the region asked, the *driver*, with the new members
`creating`. This task of every strong-mode region looks for such tables (`strong_membership.driving()`) and carries
each conversion out through the other replicas' `POST /control/strong` (behind the topology's secret):

    every new replica: join (the table created, strong, converting) -> every new replica: activate -> here: activate

A witness holds no tables and takes no step. Each step is idempotent, so a step that fails (a region down, a
timeout) is retried with backoff from the start. A replica that refuses to join for good (it already holds a table
of that name) abandons the conversion: every replica drops what it joined and the driver's table is regional again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

from ..engine.engine import Engine
from .control_steps import Refused, drive_each, post_control, step_route

log = logging.getLogger("globaltables.mrsc.conversion")

PATH = "/control/strong"
SCAN_INTERVAL_S = 0.05
RETRY_FIRST_S = 0.2
RETRY_MAX_S = 5.0
CALL_TIMEOUT_S = 30.0
OPS = ("join", "activate", "abandon")


class StrongConversion:
    def __init__(self, engine: Engine, secret: str, endpoint_of: Callable[[str], str | None]) -> None:
        self.engine = engine
        self.membership = engine.strong_membership
        self._secret = secret
        self._endpoint_of = endpoint_of
        self._session: aiohttp.ClientSession | None = None
        self._running: dict[str, asyncio.Task] = {}
        self.completed: list[dict[str, Any]] = []
        self.errors = 0

    async def run(self) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT_S))
        await drive_each(
            lambda: {name: (name,) for name in self.membership.driving()},
            self._drive,
            self._running,
            SCAN_INTERVAL_S,
            self._session,
        )

    async def _drive(self, name: str) -> None:
        delay = RETRY_FIRST_S
        while name in self.membership.driving():
            try:
                await self._convert(name)
                return
            except Refused as error:
                log.error("conversion of %s to strong mode refused: %s", name, error)
                await self._abandon(name, str(error))
                return
            except (aiohttp.ClientError, OSError, TimeoutError, LookupError) as error:
                self.errors += 1
                log.warning("conversion of %s to strong mode: %s; retrying in %.1f s", name, error, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    def _joining(self, name: str) -> tuple[dict, list[str]]:
        strong = self.engine.tables[name].strong
        assert strong is not None
        replicas = [r for r in strong["replicas"] if r != self.engine.region]
        return dict(strong), replicas

    async def _convert(self, name: str) -> None:
        strong, replicas = self._joining(name)
        request = self.membership.create_request(name)
        for region in replicas:
            await self._call(region, {"op": "join", "request": request, "strong": strong})
        for region in replicas:
            await self._call(region, {"op": "activate", "table": name})
        if name in self.membership.driving():
            self.membership.activate(name)
            self.completed.append({"table": name, "action": "convert", "members": strong["creating"]})
            log.info("table %s is strong (MRSC): %s", name, ", ".join(strong["creating"]))

    async def _abandon(self, name: str, reason: str) -> None:
        strong, replicas = self._joining(name)
        delay = RETRY_FIRST_S
        for region in replicas:
            while True:
                try:
                    await self._call(region, {"op": "abandon", "table": name, "driver": strong["driver"]})
                    break
                except (aiohttp.ClientError, OSError, TimeoutError, LookupError, Refused) as error:
                    self.errors += 1
                    log.warning("abandoning %s in %s: %s; retrying in %.1f s", name, region, error, delay)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RETRY_MAX_S)
        self.membership.abandon(name, self.engine.region)
        self.completed.append({"table": name, "action": "abandon", "reason": reason})

    async def _call(self, region: str, body: dict) -> dict:
        assert self._session is not None
        return await post_control(self._session, self._endpoint_of(region), region, PATH, self._secret, body)

    # ------------------------------------------------------------------------------------------------ serving

    def handle(self, body: dict) -> dict:
        """One step asked by a driver. Raises ValueError for a malformed body, DynamoError when this region
        refuses."""
        op = body.get("op")
        if op not in OPS:
            raise ValueError(f"op: expected one of {', '.join(OPS)}, got {op!r}")
        membership = self.membership
        if op == "join":
            request, strong = body.get("request"), body.get("strong")
            if not isinstance(request, dict) or not isinstance(request.get("TableName"), str):
                raise ValueError("request: expected a CreateTable request")
            if not isinstance(strong, dict) or not isinstance(strong.get("replicas"), list):
                raise ValueError("strong: expected the table's strong-mode membership")
            if self.engine.region not in strong["replicas"]:
                raise ValueError(f"strong.replicas: {self.engine.region} is not among them")
            membership.join(request, strong)
            return {"ok": True}
        table = body.get("table")
        if not isinstance(table, str):
            raise ValueError("table: expected a table name")
        if op == "activate":
            membership.activate(table)
        else:
            driver = body.get("driver")
            if not isinstance(driver, str):
                raise ValueError("driver: expected a region name")
            membership.abandon(table, driver)
        return {"ok": True}

    def route(self, authenticated: Callable[[web.Request], bool]) -> web.RouteDef:
        return step_route(PATH, self.handle, authenticated)

    def status(self) -> dict[str, Any]:
        return {"driving": self.membership.driving(), "completed": self.completed[-20:], "errors": self.errors}
