"""Adding and removing replicas of an MREC global table (UpdateTable `ReplicaUpdates`): the engine side.

Theory of operation (docs/replication.md, "Membership"). The region a client asks is the *driver*; the region layer
(region/replica_coordinator.py) moves the change along between regions, through the secret-protected control API,
calling the steps below in each region. Every step here is synchronous, so what it reads is one consistent state.
Adding replica R to table T, asked in region S:
1. `plan` + `apply_update` (UpdateTable in S): R joins `replicas` with status CREATING (a regional T becomes global
   first: stream on, lanes). Links run only to ACTIVE replicas (`ReplicaPort.peers`), so nobody ships to R yet.
2. `snapshot` (S): every item and tombstone of T with its version, S's own log end per lane, and S's applied
   position per (origin, lane) for every other ACTIVE replica: exactly the writes the items reflect.
3. `begin_load` / `load_chunk` / `finish_load` (R): T created CREATING (refusing reads and writes), the snapshot
   merged by LWW, then T made global with `applied(origin, lane)` = the snapshot's positions, S's included.
4. `add_peer` (every other ACTIVE replica O): R joins, `acked(R, lane)` = S's applied position of O, so O ships R
   everything after what the snapshot holds of O's writes — including writes still in flight from O to S when the
   snapshot was taken. `activate` (S): the same with `acked(R, lane)` = S's log end in the snapshot.
   Positions are per (origin, table, lane) and every origin ships only its own writes, so each origin's stream into R
   starts exactly where the snapshot's copy of it ends: nothing is lost and nothing is applied twice.
Removing replica R (asked in S; R may be S): R is marked DELETING in S (S stops shipping to it at once), every other
replica forgets R (`forget`: links and positions go), R drops its table (`drop_replica`: its data goes), and S
forgets R. A global table left with one replica becomes a regional table again (its stream stays on).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import ResourceInUseException, ResourceNotFoundException, validation
from .schema import TableDefinition
from .storage.records import ItemWrite
from .table_description import stream_label
from .values import item_size

if TYPE_CHECKING:
    from .engine import Engine

ACTIVE = "ACTIVE"
CREATING = "CREATING"
DELETING = "DELETING"
CREATION_FAILED = "CREATION_FAILED"
ACTIONS = ("Create", "Update", "Delete")

# DynamoDB's texts where we know them; the others are ours and say what is wrong (docs/replication.md).
ALREADY_A_TABLE = (
    "Failed to create a the new replica of table with name: '{table}' because one or more replicas already existed "
    "as tables."
)
NOT_AUTOSCALED = "Table write capacity should either be Pay-Per-Request or AutoScaled."
IN_USE = "Attempt to change a resource which is still in use: Table is being updated: {table}"
MIXED_UPDATE = "Requests that modify replicas or witnesses must not also modify other fields"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a new replica loads: items [pk, sk, item, version], tombstones [pk, sk, version, deleted_at] (keys as
    base64 of their encoded form) and, per origin region, the position of its log the items reflect, per lane."""

    table: str
    replicas: list[str]  # the ACTIVE replicas, the driver among them (not the new one)
    positions: dict[str, list[int]]
    items: list[list]
    tombstones: list[list]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text)


def origin_of(version: str) -> str:
    return version.rsplit("/", 1)[1]


class ReplicaMembership:
    """Replica membership of one region's global tables (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.regions: tuple[str, ...] = ()  # the topology's regions (this one included); empty: a standalone region
        self.lanes = 4

    def configure(self, regions: Iterable[str], lanes: int) -> None:
        self.regions = tuple(sorted(set(regions) | {self.engine.region}))
        self.lanes = lanes

    # ---------------------------------------------------------------------------------------------- UpdateTable

    def plan(self, table: TableDefinition, request: dict, other_members: Iterable[str]) -> tuple[str, str]:
        """Validate `ReplicaUpdates` against the table; (action, region) with action "Create" or "Delete"."""
        updates = request["ReplicaUpdates"]
        if any(True for _ in other_members):
            raise validation(MIXED_UPDATE)
        if len(updates) != 1:
            raise validation(
                "One or more parameter values were invalid: a global table in eventual mode (MREC) adds or removes "
                "one replica per UpdateTable request"
            )
        update = updates[0]
        actions = [action for action in ACTIONS if isinstance(update, dict) and update.get(action) is not None]
        if len(actions) != 1:
            raise validation(
                "One or more parameter values were invalid: exactly one of ReplicationGroupUpdate.Create, "
                "ReplicationGroupUpdate.Update, ReplicationGroupUpdate.Delete must be specified"
            )
        action = actions[0]
        body = update[action]
        region = body.get("RegionName") if isinstance(body, dict) else None
        if not isinstance(region, str) or not region:
            raise validation(
                "1 validation error detected: Value null at "
                f"'replicaUpdates.1.member.{action.lower()}.regionName' failed to satisfy constraint: "
                "Member must not be null"
            )
        if action == "Update":
            raise validation(
                "ReplicaUpdates Update (replica-specific throughput, indexes, KMS keys or table class) is not "
                "supported by globaltables: replicas share the table's settings"
            )
        if region not in self.regions:
            known = ", ".join(self.regions) if self.regions else "none: this region runs alone"
            raise validation(
                f"One or more parameter values were invalid: Region {region} is not a region of this globaltables "
                f"topology (regions: {known})"
            )
        busy = [r for r, status in table.replica_status.items() if status in (CREATING, DELETING)]
        if busy or table.status != ACTIVE:
            raise ResourceInUseException(IN_USE.format(table=table.name))
        if action == "Create":
            if region in table.replicas and table.replica_status.get(region) != CREATION_FAILED:
                raise validation(ALREADY_A_TABLE.format(table=table.name))
            if region == self.engine.region:
                raise validation(ALREADY_A_TABLE.format(table=table.name))
            if table.billing_mode == "PROVISIONED":
                raise validation(NOT_AUTOSCALED)
        elif region not in table.replicas:
            raise validation(
                f"One or more parameter values were invalid: Cannot delete replica in Region {region}: table "
                f"{table.name} has no replica there"
            )
        return action, region

    def apply_update(self, new: TableDefinition, action: str, region: str) -> None:
        """Record the change on `new` (a copy, saved by UpdateTable): the replica CREATING or DELETING."""
        new.replica_status.pop(f"{region}:reason", None)
        if action == "Create":
            if not new.replicas:
                self._make_global(new, [self.engine.region])
            if region not in new.replicas:
                new.replicas = sorted([*new.replicas, region])
            new.replica_status[region] = CREATING
        elif new.replica_status.get(region) == CREATION_FAILED:
            new.replicas = [r for r in new.replicas if r != region]
            new.replica_status.pop(region)
            if new.replicas == [self.engine.region]:
                new.replicas = []
        else:
            new.replica_status[region] = DELETING

    def _make_global(self, definition: TableDefinition, replicas: list[str]) -> None:
        definition.replicas = sorted(set(replicas) | {self.engine.region})
        definition.replication_lanes = self.lanes
        if not definition.stream_enabled:  # MREC replicas always have a stream
            definition.stream = {
                "StreamEnabled": True,
                "StreamViewType": "NEW_AND_OLD_IMAGES",
                "LatestStreamLabel": stream_label(self.engine.clock.wall_time()),
            }

    # ------------------------------------------------------------------------------------------- the driver

    def pending(self) -> list[tuple[str, str, str]]:
        """(table, region, CREATING | DELETING) changes this region drives."""
        return [
            (name, region, status)
            for name, table in sorted(self.engine.tables.items())
            for region, status in sorted(table.replica_status.items())
            if status in (CREATING, DELETING)
        ]

    def snapshot(self, name: str) -> Snapshot:
        """A consistent copy of the table for a new replica (step 2 of the module docstring)."""
        engine = self.engine
        definition = engine.tables[name]
        store = engine.store
        tid = store.table_id(name)
        lanes = definition.replication_lanes
        me = engine.region
        positions = {me: [engine.change_log.lane_end(tid, lane) for lane in range(lanes)]}
        active = [r for r in definition.replicas if r not in definition.replica_status]
        for origin in active:
            if origin != me:
                positions[origin] = [store.position("applied", origin, name, lane) for lane in range(lanes)]
        items = []
        for pk, sk, item, version in store.table_records(name):
            if version is None and engine.versions is not None:  # written before this region had versions
                version = engine.versions.stamp(None)
            items.append([_b64(pk), _b64(sk), item, version])
        tombstones = [
            [_b64(pk), _b64(sk), version, deleted_at] for pk, sk, version, deleted_at in store.table_tombstones(name)
        ]
        return Snapshot(name, active, positions, items, tombstones)

    def create_request(self, name: str) -> dict:
        """The CreateTable request a new replica of the table starts from (its settings are the table's)."""
        table = self.engine.tables[name]
        request: dict = {
            "TableName": name,
            "AttributeDefinitions": [dict(d) for d in table.attribute_definitions],
            "KeySchema": table.key.to_wire(),
            "BillingMode": "PAY_PER_REQUEST",
        }
        if table.gsis:
            request["GlobalSecondaryIndexes"] = [
                {"IndexName": i.name, "KeySchema": i.key.to_wire(), "Projection": i.projection} for i in table.gsis
            ]
        if table.lsis:
            request["LocalSecondaryIndexes"] = [
                {"IndexName": i.name, "KeySchema": i.key.to_wire(), "Projection": i.projection} for i in table.lsis
            ]
        if table.table_class != "STANDARD":
            request["TableClass"] = table.table_class
        return request

    def activate(self, name: str, region: str, acked: list[int]) -> None:
        """The new replica loaded the snapshot: ship to it from the snapshot's log end (`acked` per lane)."""
        self.add_peer(name, region, acked)

    def fail(self, name: str, region: str, reason: str) -> None:
        table = self.engine.tables.get(name)
        if table is None or table.replica_status.get(region) != CREATING:
            return
        new = TableDefinition.from_dict(table.to_dict())
        new.replica_status[region] = CREATION_FAILED
        new.replica_status[f"{region}:reason"] = reason
        self.engine.save_table(new)

    # ---------------------------------------------------------------------------------------- the new replica

    def begin_load(self, request: dict, ttl: dict | None) -> None:
        """Create the table for a snapshot, CREATING (reads and writes refused until `finish_load`). A CREATING copy
        left by an earlier attempt is dropped; any other table of that name refuses the replica."""
        engine = self.engine
        name = request["TableName"]
        existing = engine.tables.get(name)
        if existing is not None:
            if existing.status != CREATING:
                raise ResourceInUseException(ALREADY_A_TABLE.format(table=name))
            self.drop_replica(name)
        engine.handle("CreateTable", dict(request))
        definition = TableDefinition.from_dict(engine.tables[name].to_dict())
        definition.status = CREATING
        definition.ttl = ttl
        engine.save_table(definition)

    def load_chunk(self, name: str, items: list[list], tombstones: list[list]) -> int:
        """Merge a chunk of a snapshot by last-writer-wins (a retried chunk changes nothing); how many rows."""
        engine = self.engine
        self._loading(name)
        store = engine.store
        writes = []
        for pk64, sk64, item, version in items:
            pk, sk = _unb64(pk64), _unb64(sk64)
            old, stored, tombstone = store.get_record(name, pk, sk)
            if stored is not None and stored >= version:
                continue
            writes.append(
                ItemWrite(name, pk, sk, item, item_size(item), old, version=version, origin=origin_of(version),
                          old_version=stored, had_tombstone=tombstone)
            )  # fmt: skip
        for pk64, sk64, version, deleted_at in tombstones:
            pk, sk = _unb64(pk64), _unb64(sk64)
            old, stored, _ = store.get_record(name, pk, sk)
            if stored is not None and stored >= version:
                continue
            writes.append(
                ItemWrite(name, pk, sk, None, 0, old, version=version, origin=origin_of(version),
                          old_version=stored, tombstone=True, deleted_at=deleted_at)
            )  # fmt: skip
        if writes:
            engine.commit(writes)
        return len(writes)

    def finish_load(self, name: str, replicas: list[str], positions: dict[str, list[int]]) -> None:
        """The snapshot is in: the table becomes an ACTIVE global table whose applied position per origin and lane
        is the snapshot's, so each origin's records after it apply here exactly once."""
        engine = self.engine
        definition = TableDefinition.from_dict(self._loading(name).to_dict())
        lanes = len(next(iter(positions.values()))) if positions else self.lanes
        rows = [
            ("applied", origin, name, lane, pos)
            for origin, per_lane in positions.items()
            for lane, pos in enumerate(per_lane)
        ]
        engine.store.write([], positions=rows)
        self._make_global(definition, [*replicas, engine.region])
        definition.replication_lanes = lanes
        definition.replica_status = {}
        definition.status = ACTIVE
        engine.save_table(definition)
        highest = engine.store.highest_version()
        if highest is not None and engine.versions is not None:
            engine.versions.observe_floor(highest)

    def _loading(self, name: str) -> TableDefinition:
        definition = self.engine.tables.get(name)
        if definition is None or definition.status != CREATING:
            raise ResourceNotFoundException(f"Requested resource not found: Table: {name} is not being loaded")
        return definition

    # ------------------------------------------------------------------------------------ every other replica

    def add_peer(self, name: str, region: str, acked: list[int]) -> None:
        """`region` joins the table's replicas, ACTIVE: links to it start at `acked` (per lane), and its own log,
        which starts afresh, is applied from its beginning."""
        engine = self.engine
        table = engine.table(name, describe=True)
        if not table.replicas:
            raise ResourceNotFoundException(f"Requested resource not found: Table: {name} is not a global table")
        rows = []
        for lane in range(table.replication_lanes):
            rows.append(("acked", region, name, lane, acked[lane] if lane < len(acked) else 0))
            rows.append(("applied", region, name, lane, 0))
        engine.store.write([], positions=rows)
        new = TableDefinition.from_dict(table.to_dict())
        if region not in new.replicas:
            new.replicas = sorted([*new.replicas, region])
        new.replica_status.pop(region, None)
        new.replica_status.pop(f"{region}:reason", None)
        engine.save_table(new)

    def forget(self, name: str, region: str) -> None:
        """`region` leaves the table's replicas: no links to or from it, its positions gone. A table left alone
        becomes regional again."""
        engine = self.engine
        table = engine.tables.get(name)
        if table is None or region not in table.replicas:
            return
        engine.store.delete_positions(name, region)
        new = TableDefinition.from_dict(table.to_dict())
        new.replicas = [r for r in new.replicas if r != region]
        new.replica_status.pop(region, None)
        new.replica_status.pop(f"{region}:reason", None)
        if new.replicas == [engine.region]:
            new.replicas = []
        engine.save_table(new)

    def drop_replica(self, name: str) -> None:
        """This region's replica goes, with its data, tombstones and positions."""
        engine = self.engine
        if name not in engine.tables:
            return
        engine.drop_table(name)  # the store drops its tombstones and positions with its items
