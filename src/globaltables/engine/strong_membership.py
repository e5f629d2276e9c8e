"""Making a table strong (MRSC) through UpdateTable, and its fixed membership: the engine side (facts §3).

Theory of operation (docs/mrsc.md, "The AWS path"). In a region of a `mode: mrsc` topology, a table created with
CreateTable is regional. UpdateTable on it, while it is empty, with `MultiRegionConsistency: STRONG` and either two
`ReplicaUpdates` Create entries or one plus `GlobalTableWitnessUpdates: [{Create}]`, names the other two members of
the topology; the region asked (the *driver*) validates everything here, then marks its table strong with the new
members `creating` (writes refused: "nothing may be written during conversion"). The region layer
(region/strong_conversion.py) carries it out through the secret-protected control API: every new replica `join`s
(creates the table, strong, still converting), then every one is `activate`d, then the driver. A region that
refuses (it already holds a table of that name) makes the driver `abandon` the conversion everywhere: the table is
regional again. A witness holds no tables; it votes for any table its replicas propose, so it needs no step.

After it, membership is fixed: no replica or witness is added, and no single one is removed. Removing two replicas,
or a replica and the witness, would leave a single-region table; globaltables refuses it (see DISSOLVE_REFUSED).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .errors import ResourceInUseException, ResourceNotFoundException, validation
from .schema import TableDefinition
from .strong import unsupported
from .table_description import describe_table

if TYPE_CHECKING:
    from .engine import Engine

# DynamoDB's texts (facts §3, [LAB]).
BAD_COUNT = "Unsupported replica count for global tables with MultiRegionConsistency set to STRONG."
WITNESS_NEEDS_STRONG = "MultiRegionConsistency must be set as STRONG when GlobalTableWitnessUpdates parameter is present."
MIXED_UPDATE = "Requests that modify replicas or witnesses must not also modify other fields"
EXISTING_GLOBAL = "MultiRegionConsistency parameter is unsupported on existing global table"
ONE_DELETION = "Deletion of only one table replica is not supported"
IN_USE = "Attempt to change a resource which is still in use: Table is being updated: {table}"
ALREADY_A_TABLE = (
    "Failed to create a the new replica of table with name: '{table}' because one or more replicas already existed "
    "as tables."
)
# Ours, where DynamoDB's texts are not known; each says what is wrong.
INVALID = "One or more parameter values were invalid: "
ONLY_WITH_CREATES = INVALID + "MultiRegionConsistency can only be specified on a request whose ReplicaUpdates create replicas"
NOT_EMPTY = (
    INVALID + "table {table} holds items: only an empty table can be converted to multi-Region strong consistency"
)
NOT_MRSC_TOPOLOGY = (
    INVALID + "MultiRegionConsistency STRONG needs a globaltables topology in mode mrsc; this region's topology is "
    "not one"
)
DISSOLVE_REFUSED = (
    "Deleting the replicas of a table with multi-Region strong consistency (MRSC) is not supported by globaltables "
    "yet: its membership is fixed"
)
WRITES_REFUSED = (
    "Table {table} is being converted to multi-Region strong consistency (MRSC): writes are refused until every "
    "replica is ACTIVE"
)
GLOBAL_MEMBERS = ("ReplicaUpdates", "GlobalTableWitnessUpdates", "MultiRegionConsistency")

# Facts §3: a table cannot span sets (codes are our mapping of the doc's names).
REGION_SETS = {
    "US": frozenset({"us-east-1", "us-east-2", "us-west-2"}),
    "EU": frozenset({"eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1"}),
    "AP": frozenset({"ap-northeast-1", "ap-northeast-2", "ap-northeast-3"}),
}


def concerns(engine: Engine, request: dict) -> bool:
    """Whether an UpdateTable request is a strong-mode membership request (this module's), not an MREC one."""
    if request.get("GlobalTableWitnessUpdates") is not None:
        return True
    if request.get("MultiRegionConsistency") == "STRONG":
        return True
    table = engine.tables.get(request.get("TableName"))  # type: ignore[arg-type]
    if table is None:
        return False
    if table.strong is not None and request.get("ReplicaUpdates") is not None:
        return True
    # EVENTUAL on a global table, or without replicas to create: refused here with DynamoDB's texts.
    return request.get("MultiRegionConsistency") is not None and (
        bool(table.replicas) or table.strong is not None or request.get("ReplicaUpdates") is None
    )


def converting(table: TableDefinition) -> bool:
    return table.strong is not None and bool(table.strong.get("creating"))


def refuse_writes_if_converting(table: TableDefinition) -> None:
    if converting(table):
        raise validation(WRITES_REFUSED.format(table=table.name))


def _region_of(update: object, action_names: tuple[str, ...], where: str) -> tuple[str, str]:
    """(action, region) of one ReplicaUpdates or GlobalTableWitnessUpdates element."""
    actions = [a for a in action_names if isinstance(update, dict) and update.get(a) is not None]
    if len(actions) != 1:
        raise validation(INVALID + f"exactly one of {', '.join(f'{where}.{a}' for a in action_names)} must be specified")
    body = update[actions[0]]  # type: ignore[index]
    region = body.get("RegionName") if isinstance(body, dict) else None
    if not isinstance(region, str) or not region:
        raise validation(
            f"1 validation error detected: Value null at '{where[0].lower() + where[1:]}.{actions[0].lower()}"
            ".regionName' failed to satisfy constraint: Member must not be null"
        )
    return actions[0], region


class StrongMembership:
    """Strong-mode membership of one region's tables (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.members: tuple[str, ...] = ()  # the mrsc topology's three regions; empty: not an mrsc topology
        self.witness: str | None = None  # the topology's witness region, if it has one

    def configure(self, members: Iterable[str], witness: str | None) -> None:
        members = set(members)
        self.members = tuple(sorted(members | {self.engine.region})) if members else ()
        self.witness = witness

    # ---------------------------------------------------------------------------------------------- UpdateTable

    def update(self, request: dict, gsi_updates: list[dict], other_members: Iterable[str]) -> dict:
        """UpdateTable with MultiRegionConsistency or GlobalTableWitnessUpdates, or ReplicaUpdates on a strong
        table: validated completely before anything changes."""
        engine = self.engine
        table = engine.table(request["TableName"], describe=True)
        if any(True for _ in other_members) or gsi_updates:
            raise validation(MIXED_UPDATE)
        consistency = request.get("MultiRegionConsistency")
        is_global = table.strong is not None or bool(table.replicas)
        if consistency is not None and is_global:
            raise validation(EXISTING_GLOBAL)
        if table.strong is not None:
            self._fixed_membership(table, request)  # always raises: membership is fixed
        witness_updates = request.get("GlobalTableWitnessUpdates")
        if witness_updates is not None and consistency != "STRONG":
            raise validation(WITNESS_NEEDS_STRONG)
        replica_updates = request.get("ReplicaUpdates") or []
        if consistency is None or (not replica_updates and witness_updates is None):
            raise validation(ONLY_WITH_CREATES)
        creates = []
        for update in replica_updates:
            action, region = _region_of(update, ("Create", "Update", "Delete"), "ReplicationGroupUpdate")
            if action != "Create":
                raise validation(ONLY_WITH_CREATES)
            creates.append(region)
        witness = None
        if witness_updates is not None:
            action, witness = _region_of(witness_updates[0], ("Create", "Delete"), "GlobalTableWitnessGroupUpdate")
            if action != "Create":
                raise validation(INVALID + f"table {table.name} has no witness to delete")
        if consistency != "STRONG":  # EVENTUAL on a regional table without replicas to create
            raise validation(ONLY_WITH_CREATES)
        if len(creates) + (witness is not None) != 2:
            raise validation(BAD_COUNT)
        me = engine.region
        regions = [me, *creates, *([witness] if witness else [])]
        if len(set(regions)) != 3:
            raise validation(
                INVALID + f"the replicas and the witness must be three different Regions, got {', '.join(regions)}"
            )
        self._check_region_set(regions)
        self._check_topology(creates, witness)
        self._check_table(table)
        new = TableDefinition.from_dict(table.to_dict())
        new.strong = {
            "replicas": sorted([me, *creates]),
            "witness": witness,
            "creating": sorted(regions[1:]),
            "driver": me,
        }
        engine.save_table(new)
        return {"TableDescription": describe_table(engine, new, table_status="UPDATING")}

    def _fixed_membership(self, table: TableDefinition, request: dict) -> None:
        if converting(table):
            raise ResourceInUseException(IN_USE.format(table=table.name))
        replica_updates = request.get("ReplicaUpdates") or []
        witness_updates = request.get("GlobalTableWitnessUpdates") or []
        deleted = []
        for update in replica_updates:
            action, region = _region_of(update, ("Create", "Update", "Delete"), "ReplicationGroupUpdate")
            if action != "Delete":
                raise validation(BAD_COUNT)  # membership is fixed: no replica is added later
            deleted.append(region)
        for update in witness_updates:
            action, region = _region_of(update, ("Create", "Delete"), "GlobalTableWitnessGroupUpdate")
            if action != "Delete":
                raise validation(BAD_COUNT)
            deleted.append(region)
        members = set(table.strong["replicas"]) | ({table.strong["witness"]} if table.strong.get("witness") else set())
        unknown = sorted(set(deleted) - members)
        if unknown:
            raise validation(
                INVALID + f"Cannot delete {', '.join(unknown)}: table {table.name} has no replica or witness there"
            )
        if len(set(deleted)) != 2:
            raise validation(ONE_DELETION)
        raise validation(DISSOLVE_REFUSED)

    def _check_region_set(self, regions: list[str]) -> None:
        if any(all(region in members for region in regions) for members in REGION_SETS.values()):
            return
        sets = "; ".join(f"{label}: {', '.join(sorted(members))}" for label, members in REGION_SETS.items())
        raise validation(
            INVALID + f"a table with MultiRegionConsistency STRONG must keep its replicas and witness within one "
            f"region set ({sets}); got {', '.join(regions)}"
        )

    def _check_topology(self, creates: list[str], witness: str | None) -> None:
        if not self.members:
            raise validation(NOT_MRSC_TOPOLOGY)
        wanted = sorted(set(self.members) - {self.engine.region})
        named = sorted([*creates, *([witness] if witness else [])])
        if named != wanted:
            raise validation(
                INVALID + f"this globaltables topology's strong-mode members are {', '.join(self.members)}: the "
                f"request must name {' and '.join(wanted)}, got {', '.join(named)}"
            )
        if witness != self.witness:
            if self.witness is None:
                raise validation(
                    INVALID + f"{witness} is a replica Region of this globaltables topology, not a witness: create "
                    "it with ReplicaUpdates"
                )
            raise validation(
                INVALID + f"{self.witness} is the witness Region of this globaltables topology: it can only be "
                "added with GlobalTableWitnessUpdates"
            )

    def _check_table(self, table: TableDefinition) -> None:
        if table.status != "ACTIVE" or any(index.status != "ACTIVE" for index in table.gsis):
            raise ResourceInUseException(IN_USE.format(table=table.name))
        if table.lsis:
            raise unsupported("Local secondary indexes")
        if table.stream_enabled:
            raise unsupported("DynamoDB Streams")
        if table.ttl is not None and table.ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
            raise unsupported("Time to Live (TTL)")
        count, _size = self.engine.store.table_stats(table.name)
        if count:
            raise validation(NOT_EMPTY.format(table=table.name))

    # ------------------------------------------------------------------------------ the steps of a conversion

    def driving(self) -> list[str]:
        """The tables whose conversion this region drives and has not finished."""
        me = self.engine.region
        return [
            name
            for name, table in sorted(self.engine.tables.items())
            if converting(table) and table.strong.get("driver") == me
        ]

    def create_request(self, name: str) -> dict:
        """The CreateTable request a joining replica starts from (the table's key, indexes and settings)."""
        request = self.engine.membership.create_request(name)
        table = self.engine.tables[name]
        if table.billing_mode == "PROVISIONED" and table.provisioned:
            request["BillingMode"] = "PROVISIONED"
            throughput = {k: table.provisioned[k] for k in ("ReadCapacityUnits", "WriteCapacityUnits")}
            request["ProvisionedThroughput"] = throughput
            for index, definition in zip(request.get("GlobalSecondaryIndexes", []), table.gsis, strict=True):
                index["ProvisionedThroughput"] = {
                    k: (definition.provisioned or {}).get(k, 1) for k in ("ReadCapacityUnits", "WriteCapacityUnits")
                }
        return request

    def join(self, request: dict, strong: dict) -> None:
        """A new replica: the table created here, strong, still converting. Idempotent; a regional table of that
        name already here refuses it (ValidationException)."""
        engine = self.engine
        name = request["TableName"]
        existing = engine.tables.get(name)
        if existing is not None:
            if existing.strong is not None and existing.strong.get("driver") == strong.get("driver"):
                return  # asked again after a lost answer
            raise validation(ALREADY_A_TABLE.format(table=name))
        engine.handle("CreateTable", dict(request))
        definition = engine.tables[name]
        definition.strong = dict(strong)
        engine.save_table(definition)

    def activate(self, name: str) -> None:
        """The conversion is done: the table takes writes (idempotent)."""
        definition = self.engine.tables.get(name)
        if definition is None or definition.strong is None:
            raise ResourceNotFoundException(f"Requested resource not found: Table: {name} not found")
        if converting(definition):
            definition.strong = {"replicas": definition.strong["replicas"], "witness": definition.strong["witness"]}
            self.engine.save_table(definition)

    def abandon(self, name: str, driver: str) -> None:
        """The conversion failed: the driver's table is regional again, a joined replica's table goes."""
        engine = self.engine
        definition = engine.tables.get(name)
        if definition is None or not converting(definition) or definition.strong.get("driver") != driver:
            return
        if driver == engine.region:
            definition.strong = None
            engine.save_table(definition)
        else:
            engine.drop_table(name)
