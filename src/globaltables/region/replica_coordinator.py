"""Replicas added and removed across regions: the region-layer half of engine/replica_membership.py.

Theory of operation: UpdateTable (ReplicaUpdates) only marks a replica CREATING or DELETING in the region it was
sent to, the *driver*. This coordinator, a task of every region, looks for such marks (`membership.pending()`) and
carries each change out by calling the other regions' `POST /control/replicas` (behind the topology's secret):

  add R:    snapshot here -> R: begin, load (chunks of CHUNK_ROWS), finish -> every other ACTIVE replica: add
            -> here: activate (R ACTIVE; links to R start from the snapshot's positions)
  delete R: every other replica: forget R -> R: drop (its data goes) -> here: forget R
            (R may be this region: then the others forget it and it drops its own table last)

Each step is idempotent, so a step that fails (a region down, a timeout) is retried with backoff by running the
whole change again from a fresh snapshot; `add` overwrites a peer's positions, and `begin` drops a half-loaded copy.
A region that refuses the replica for good (it already holds a regional table of that name) leaves the replica
CREATION_FAILED with DynamoDB's message. The node is told of every membership change (`reset_peer`) so its links
are rebuilt from the new positions at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

from ..engine.engine import Engine
from ..engine.replica_membership import CREATING
from ..replication.node import RegionNode
from .control_steps import Refused, drive_each, post_control, step_route

log = logging.getLogger("globaltables.replication.membership")

PATH = "/control/replicas"
CHUNK_ROWS = 2000
SCAN_INTERVAL_S = 0.05
RETRY_FIRST_S = 0.2
RETRY_MAX_S = 5.0
CALL_TIMEOUT_S = 60.0
OPS = ("begin", "load", "finish", "add", "forget", "drop")


class ReplicaCoordinator:
    def __init__(
        self,
        engine: Engine,
        node: RegionNode,
        secret: str,
        endpoint_of: Callable[[str], str | None],
        wake_node: Callable[[], None],
    ) -> None:
        self.engine = engine
        self.membership = engine.membership
        self.node = node
        self._secret = secret
        self._endpoint_of = endpoint_of
        self._wake_node = wake_node
        self._session: aiohttp.ClientSession | None = None
        self._running: dict[tuple[str, str], asyncio.Task] = {}
        self.completed: list[dict[str, Any]] = []  # finished changes, for status
        self.errors = 0

    # ------------------------------------------------------------------------------------------------ driving

    async def run(self) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT_S))
        await drive_each(
            lambda: {(table, region): (table, region, status) for table, region, status in self.membership.pending()},
            self._drive,
            self._running,
            SCAN_INTERVAL_S,
            self._session,
        )

    def _still(self, table: str, region: str, status: str) -> bool:
        definition = self.engine.tables.get(table)
        return definition is not None and definition.replica_status.get(region) == status

    async def _drive(self, table: str, region: str, status: str) -> None:
        delay = RETRY_FIRST_S
        while self._still(table, region, status):
            try:
                if status == CREATING:
                    await self._create(table, region)
                else:
                    await self._delete(table, region)
                return
            except Refused as error:
                log.error("replica %s of %s refused: %s", region, table, error)
                self.membership.fail(table, region, str(error))
                return
            except (aiohttp.ClientError, OSError, TimeoutError, LookupError) as error:
                self.errors += 1
                log.warning("replica %s of %s: %s; retrying in %.1f s", status.lower(), table, error, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    async def _create(self, table: str, region: str) -> None:
        membership = self.membership
        me = self.engine.region
        definition = self.engine.tables[table]
        snapshot = membership.snapshot(table)  # synchronous: one consistent state
        request = membership.create_request(table)
        await self._call(region, {"op": "begin", "request": request, "ttl": definition.ttl})
        rows = [("items", row) for row in snapshot.items] + [("tombstones", row) for row in snapshot.tombstones]
        for start in range(0, len(rows), CHUNK_ROWS):
            chunk = rows[start : start + CHUNK_ROWS]
            await self._call(
                region,
                {
                    "op": "load",
                    "table": table,
                    "items": [row for kind, row in chunk if kind == "items"],
                    "tombstones": [row for kind, row in chunk if kind == "tombstones"],
                },
            )
        await self._call(
            region, {"op": "finish", "table": table, "replicas": snapshot.replicas, "positions": snapshot.positions}
        )
        for other in snapshot.replicas:
            if other != me:
                await self._call(
                    other, {"op": "add", "table": table, "region": region, "acked": snapshot.positions[other]}
                )
        if not self._still(table, region, CREATING):
            return
        membership.activate(table, region, snapshot.positions[me])
        self.node.reset_peer(table, region)
        self._wake_node()
        self.completed.append({"table": table, "region": region, "action": "create", "rows": len(rows)})
        log.info("replica %s of %s is ACTIVE (%d rows loaded)", region, table, len(rows))

    async def _delete(self, table: str, region: str) -> None:
        me = self.engine.region
        others = [r for r in self.engine.tables[table].replicas if r not in (me, region)]
        for other in others:
            await self._call(other, {"op": "forget", "table": table, "region": region})
        if region == me:
            self.membership.drop_replica(table)
        else:
            await self._call(region, {"op": "drop", "table": table})
            self.membership.forget(table, region)
            self.node.reset_peer(table, region)
        self._wake_node()
        self.completed.append({"table": table, "region": region, "action": "delete"})
        log.info("replica %s of %s deleted", region, table)

    async def _call(self, region: str, body: dict) -> dict:
        assert self._session is not None
        return await post_control(self._session, self._endpoint_of(region), region, PATH, self._secret, body)

    # ------------------------------------------------------------------------------------------------ serving

    def handle(self, body: dict) -> dict:
        """One step asked by a driver (see the module docstring). Raises ValueError for a malformed body and
        DynamoError when this region refuses."""
        op = body.get("op")
        if op not in OPS:
            raise ValueError(f"op: expected one of {', '.join(OPS)}, got {op!r}")
        membership = self.membership
        if op == "begin":
            request = body.get("request")
            if not isinstance(request, dict) or not isinstance(request.get("TableName"), str):
                raise ValueError("request: expected a CreateTable request")
            membership.begin_load(request, body.get("ttl"))
            return {"ok": True}
        table = body.get("table")
        if not isinstance(table, str):
            raise ValueError("table: expected a table name")
        if op == "load":
            items, tombstones = body.get("items", []), body.get("tombstones", [])
            if not isinstance(items, list) or not isinstance(tombstones, list):
                raise ValueError("items, tombstones: expected lists")
            return {"ok": True, "merged": membership.load_chunk(table, items, tombstones)}
        if op == "finish":
            replicas, positions = body.get("replicas"), body.get("positions")
            if not isinstance(replicas, list) or not isinstance(positions, dict):
                raise ValueError("replicas, positions: expected a list and a mapping")
            membership.finish_load(table, replicas, positions)
        elif op == "add":
            region, acked = body.get("region"), body.get("acked")
            if not isinstance(region, str) or not isinstance(acked, list):
                raise ValueError("region, acked: expected a region name and a list of positions")
            membership.add_peer(table, region, acked)
            self.node.reset_peer(table, region)
        elif op == "forget":
            region = body.get("region")
            if not isinstance(region, str):
                raise ValueError("region: expected a region name")
            membership.forget(table, region)
            self.node.reset_peer(table, region)
        else:
            membership.drop_replica(table)
        self._wake_node()
        return {"ok": True}

    def route(self, authenticated: Callable[[web.Request], bool]) -> web.RouteDef:
        return step_route(PATH, self.handle, authenticated)

    def status(self) -> dict[str, Any]:
        return {
            "pending": [
                {"table": table, "region": region, "status": status}
                for table, region, status in self.membership.pending()
            ],
            "completed": self.completed[-20:],
            "errors": self.errors,
        }
