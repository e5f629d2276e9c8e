"""UpdateTable: billing mode, provisioned throughput, GSI create/update/delete, stream, SSE, table class,
deletion protection and on-demand/warm throughput settings.

The request is validated completely and applied to a copy of the definition, which replaces the stored one only
when every rule passed, so a refused request changes nothing. Changes take effect at once; the response shows the
transitional state DynamoDB's does (UPDATING, an index CREATING or DELETING, the capacity still in force), while
DescribeTable right after shows the settled table.

Replica changes (ReplicaUpdates Create/Delete, eventual mode) go to engine/replica_membership.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .. import strong_membership
from ..errors import LimitExceededException, ResourceNotFoundException, invalid_parameter, validation
from ..schema import IndexDefinition, TableDefinition
from ..strong import refuse_if_strong
from ..table_description import describe_table, same_utc_day, sse_description, stream_label
from ..table_validation import (
    BILLING_MODE,
    MAX_CAPACITY_UNITS,
    MAX_GSIS,
    ON_DEMAND_THROUGHPUT,
    PROJECTION,
    SETTINGS_REPLICATION_MODE,
    SSE_SPECIFICATION,
    STREAM_SPECIFICATION,
    TABLE_CLASS,
    WARM_THROUGHPUT,
    attribute_definitions_field,
    build_index,
    check_attribute_definitions,
    check_capacity_bounds,
    check_gsi,
    check_projected_attribute_count,
    check_stream_specification,
    copy_of,
    index_name_field,
    key_schema_field,
    provisioned_throughput_field,
)
from ..validation import Bool, Field, List, Str, Struct, TableNameField, check_request

GSI_UPDATE = Struct(
    {
        "Update": Struct(
            {
                "IndexName": index_name_field(),
                "ProvisionedThroughput": provisioned_throughput_field(),
                "OnDemandThroughput": ON_DEMAND_THROUGHPUT,
                "WarmThroughput": WARM_THROUGHPUT,
            }
        ),
        "Create": Struct(
            {
                "Projection": PROJECTION,
                "IndexName": index_name_field(),
                "ProvisionedThroughput": provisioned_throughput_field(),
                "KeySchema": key_schema_field(multi_attribute=True),
                "OnDemandThroughput": ON_DEMAND_THROUGHPUT,
                "WarmThroughput": WARM_THROUGHPUT,
            }
        ),
        "Delete": Struct({"IndexName": index_name_field()}),
    }
)

FIELDS = {
    "TableName": TableNameField(),
    "ProvisionedThroughput": provisioned_throughput_field(),
    "BillingMode": BILLING_MODE,
    "GlobalSecondaryIndexUpdates": List(GSI_UPDATE),
    "AttributeDefinitions": attribute_definitions_field(required=False),
    "StreamSpecification": STREAM_SPECIFICATION,
    "SSESpecification": SSE_SPECIFICATION,
    "ReplicaUpdates": List(Field(type="structure"), min_length=1),
    "TableClass": TABLE_CLASS,
    "DeletionProtectionEnabled": Bool(),
    "MultiRegionConsistency": Str(enum=("EVENTUAL", "STRONG")),
    "GlobalTableWitnessUpdates": List(Field(type="structure"), min_length=1, max_length=1),
    "OnDemandThroughput": ON_DEMAND_THROUGHPUT,
    "WarmThroughput": WARM_THROUGHPUT,
    "GlobalTableSettingsReplicationMode": SETTINGS_REPLICATION_MODE,
}

# Members that make a request an update; GlobalSecondaryIndexUpdates counts only when it holds an action.
UPDATE_MEMBERS = (
    "ProvisionedThroughput",
    "BillingMode",
    "StreamSpecification",
    "SSESpecification",
    "ReplicaUpdates",
    "TableClass",
    "DeletionProtectionEnabled",
    "MultiRegionConsistency",
    "GlobalTableWitnessUpdates",
    "OnDemandThroughput",
    "WarmThroughput",
    "GlobalTableSettingsReplicationMode",
)
NOTHING_TO_UPDATE = (
    "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates or "
    "SSESpecification or ReplicaUpdates is required"
)
GLOBAL_TABLE_MEMBERS = (
    "ReplicaUpdates",
    "GlobalTableWitnessUpdates",
    "MultiRegionConsistency",
    "GlobalTableSettingsReplicationMode",
)
ONE_INDEX_AT_A_TIME = (
    "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table"
)
GSI_ACTIONS = ("Update", "Create", "Delete")
# Settings DynamoDB applies in the background (UPDATING); deletion protection alone leaves the table ACTIVE.
ASYNCHRONOUS_SETTINGS = (
    "StreamSpecification",
    "SSESpecification",
    "TableClass",
    "OnDemandThroughput",
    "WarmThroughput",
)


@dataclass
class Outcome:
    """What the response shows besides the new definition: transitional statuses and the capacity still in force."""

    table_status: str = "ACTIVE"
    index_status: dict[str, str] = field(default_factory=dict)
    capacity_in_force: dict[str, dict] = field(default_factory=dict)  # "" for the table, else an index name
    dropped: dict[int, IndexDefinition] = field(default_factory=dict)  # position -> deleted GSI


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    gsi_updates = request.get("GlobalSecondaryIndexUpdates") or []
    if not gsi_updates and all(request.get(member) is None for member in UPDATE_MEMBERS):
        raise validation(NOTHING_TO_UPDATE)
    # Strong mode (MRSC) made or changed through UpdateTable (engine/strong_membership.py); MREC replicas added or
    # removed (engine/replica_membership.py; MultiRegionConsistency EVENTUAL creating replicas is that too).
    if strong_membership.concerns(engine, request):
        others = [m for m in UPDATE_MEMBERS if m not in strong_membership.GLOBAL_MEMBERS and request.get(m) is not None]
        return engine.strong_membership.update(request, gsi_updates, others)
    if request.get("ReplicaUpdates") is not None:
        return update_replicas(engine, request, gsi_updates)
    for member in GLOBAL_TABLE_MEMBERS:
        if request.get(member) is not None:
            raise validation(
                f"{member} is not supported yet by globaltables: global table replicas cannot be managed "
                "through UpdateTable in this version"
            )
    if request.get("BillingMode") == "PROVISIONED" and request.get("ProvisionedThroughput") is None:
        raise invalid_parameter("ProvisionedThroughput must be specified when BillingMode is PROVISIONED")
    if request.get("ProvisionedThroughput") is not None:
        check_capacity_bounds(request["ProvisionedThroughput"])
    check_gsi_update_list(gsi_updates)
    if request.get("AttributeDefinitions") is not None:
        check_attribute_definitions(request["AttributeDefinitions"])

    table = engine.table(request["TableName"], describe=True)
    new = TableDefinition.from_dict(table.to_dict())  # a deep copy: the stored table changes only on success
    now = engine.clock.wall_time()
    outcome = Outcome()
    billing_mode = update_billing(new, request, gsi_updates, now, outcome)
    update_gsis(new, request, gsi_updates, billing_mode, now, outcome)
    update_stream(new, request.get("StreamSpecification"), now)
    update_settings(engine, new, request, now)
    if any(request.get(member) is not None for member in ASYNCHRONOUS_SETTINGS):
        outcome.table_status = "UPDATING"
    engine.save_table(new)
    return {
        "TableDescription": describe_table(
            engine, response_view(new, outcome), table_status=outcome.table_status, index_status=outcome.index_status
        )
    }


def update_replicas(engine, request: dict, gsi_updates: list[dict]) -> dict:
    """ReplicaUpdates: one replica created or deleted; the region layer carries the change to the other regions
    and the replica's status goes from CREATING (or DELETING) to ACTIVE (or gone)."""
    table = engine.table(request["TableName"], describe=True)
    others = [
        m for m in UPDATE_MEMBERS if m not in ("ReplicaUpdates", "MultiRegionConsistency") and request.get(m) is not None
    ]
    if gsi_updates:
        others.append("GlobalSecondaryIndexUpdates")
    action, region = engine.membership.plan(table, request, others)
    new = TableDefinition.from_dict(table.to_dict())
    engine.membership.apply_update(new, action, region)
    engine.save_table(new)
    return {"TableDescription": describe_table(engine, new, table_status="UPDATING")}


# ---------------------------------------------------------------------------------------- request-only rules


def check_gsi_update_list(updates: list[dict]) -> None:
    seen: set[str] = set()
    for update in updates:
        actions = [action for action in GSI_ACTIONS if update.get(action) is not None]
        if not actions:
            raise invalid_parameter(
                "One of GlobalSecondaryIndexUpdate.Update, GlobalSecondaryIndexUpdate.Create, "
                "GlobalSecondaryIndexUpdate.Delete must not be null"
            )
        if len(actions) > 1:
            raise invalid_parameter(
                "Only one of GlobalSecondaryIndexUpdate.Update, GlobalSecondaryIndexUpdate.Create, "
                "GlobalSecondaryIndexUpdate.Delete can be specified"
            )
        name = update[actions[0]]["IndexName"]
        if name in seen:
            raise invalid_parameter(
                f"Only one global secondary index update per index is allowed simultaneously. Index: {name}"
            )
        seen.add(name)


# --------------------------------------------------------------------------------- billing mode and capacity


def update_billing(new: TableDefinition, request: dict, gsi_updates: list[dict], now: float, outcome: Outcome) -> str:
    """Apply BillingMode/ProvisionedThroughput; returns the billing mode the table ends up in."""
    current = new.billing_mode
    target = request.get("BillingMode") or current
    throughput = request.get("ProvisionedThroughput")
    if throughput is not None and target == "PAY_PER_REQUEST":
        raise invalid_parameter(
            "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST"
        )
    if request.get("BillingMode") is not None:
        new.billing_mode_explicit = True
    if target == "PROVISIONED" and current == "PAY_PER_REQUEST":
        given = {
            u["Update"]["IndexName"]
            for u in gsi_updates
            if u.get("Update") and u["Update"].get("ProvisionedThroughput")
        }
        missing = [index.name for index in new.gsis if index.name not in given]
        if missing:
            raise invalid_parameter(f"ProvisionedThroughput must be specified for index: {','.join(missing)}")
        new.billing_mode = "PROVISIONED"
        new.provisioned = set_capacity(new.provisioned, throughput, now)
        outcome.table_status = "UPDATING"
    elif target == "PAY_PER_REQUEST" and current == "PROVISIONED":
        new.billing_mode = "PAY_PER_REQUEST"
        new.billing_mode_updated = now
        new.provisioned = zero_capacity(new.provisioned)
        for index in new.gsis:
            index.provisioned = zero_capacity(index.provisioned)
        outcome.table_status = "UPDATING"
    elif throughput is not None:
        old = new.provisioned or {}
        check_capacity_changes("the table", old, throughput)
        outcome.capacity_in_force[""] = old
        new.provisioned = set_capacity(old, throughput, now)
        outcome.table_status = "UPDATING"
    return target


def check_capacity_changes(what: str, old: dict, requested: dict) -> None:
    if (old.get("ReadCapacityUnits"), old.get("WriteCapacityUnits")) == (
        requested["ReadCapacityUnits"],
        requested["WriteCapacityUnits"],
    ):
        raise validation(
            f"The provisioned throughput for {what} will not change. The requested value equals the current value. "
            f"Current ReadCapacityUnits provisioned for {what}: {old.get('ReadCapacityUnits')}. "
            f"Requested ReadCapacityUnits: {requested['ReadCapacityUnits']}. "
            f"Current WriteCapacityUnits provisioned for {what}: {old.get('WriteCapacityUnits')}. "
            f"Requested WriteCapacityUnits: {requested['WriteCapacityUnits']}. "
            "Refer to the Amazon DynamoDB Developer Guide for current limits and how to request higher limits."
        )


def set_capacity(stored: dict | None, requested: dict, now: float) -> dict:
    """New provisioned capacity, stamping increases and counting decreases per UTC day as DynamoDB reports them."""
    old = dict(stored or {})
    read, write = requested["ReadCapacityUnits"], requested["WriteCapacityUnits"]
    old_read, old_write = old.get("ReadCapacityUnits", 0), old.get("WriteCapacityUnits", 0)
    out = {**old, "ReadCapacityUnits": read, "WriteCapacityUnits": write}
    if read > old_read or write > old_write:
        out["LastIncreaseDateTime"] = now
    if read < old_read or write < old_write:
        last = old.get("LastDecreaseDateTime")
        today = old.get("NumberOfDecreasesToday", 0) if last is not None and same_utc_day(last, now) else 0
        out["LastDecreaseDateTime"] = now
        out["NumberOfDecreasesToday"] = today + 1
    out.setdefault("NumberOfDecreasesToday", 0)
    return out


def zero_capacity(stored: dict | None) -> dict:
    return {**(stored or {}), "ReadCapacityUnits": 0, "WriteCapacityUnits": 0}


# ------------------------------------------------------------------------------------ global secondary indexes


def update_gsis(
    new: TableDefinition, request: dict, updates: list[dict], billing_mode: str, now: float, outcome: Outcome
) -> None:
    if not updates:
        return
    structural = [u for u in updates if u.get("Create") is not None or u.get("Delete") is not None]
    if len(structural) > 1 or (structural and any(index.status != "ACTIVE" for index in new.gsis)):
        raise LimitExceededException(ONE_INDEX_AT_A_TIME)
    for update in updates:
        if update.get("Update") is not None:
            update_gsi(new, update["Update"], billing_mode, now, outcome)
        elif update.get("Create") is not None:
            create_gsi(new, update["Create"], request.get("AttributeDefinitions") or [], billing_mode, outcome)
        else:
            delete_gsi(new, update["Delete"]["IndexName"], outcome)
    new.attribute_definitions = [
        d for d in new.attribute_definitions if d["AttributeName"] in new.key_attribute_names()
    ]
    outcome.table_status = "UPDATING"


def existing_gsi(table: TableDefinition, name: str) -> IndexDefinition:
    for index in table.gsis:
        if index.name == name:
            return index
    raise ResourceNotFoundException(f"Requested resource not found: Index: {name} not found")


def update_gsi(new: TableDefinition, action: dict, billing_mode: str, now: float, outcome: Outcome) -> None:
    name = action["IndexName"]
    throughput = action.get("ProvisionedThroughput")
    if throughput is not None and (
        throughput["ReadCapacityUnits"] > MAX_CAPACITY_UNITS or throughput["WriteCapacityUnits"] > MAX_CAPACITY_UNITS
    ):
        raise validation(
            "This operation cannot be performed with given input values. Please contact DynamoDB service team for "
            "more info: Action Blocked: IndexUpdate"
        )
    index = existing_gsi(new, name)
    if billing_mode == "PAY_PER_REQUEST":
        if throughput is not None:
            raise invalid_parameter(
                f"ProvisionedThroughput should not be specified for index: {name} when BillingMode is PAY_PER_REQUEST"
            )
        if action.get("OnDemandThroughput") is None and action.get("WarmThroughput") is None:
            raise invalid_parameter(f"OnDemandThroughput or WarmThroughput must be specified for index: {name}")
    elif throughput is None and action.get("WarmThroughput") is None:
        raise invalid_parameter(f"ProvisionedThroughput must be specified for index: {name}")
    if throughput is not None:
        old = index.provisioned or {}
        if new.billing_mode == "PROVISIONED" and old.get("ReadCapacityUnits"):
            check_capacity_changes("the table", old, throughput)
            outcome.capacity_in_force[name] = old
        index.provisioned = set_capacity(old, throughput, now)
    if action.get("OnDemandThroughput") is not None:
        index.on_demand = {**(index.on_demand or {}), **copy_of(action["OnDemandThroughput"], ON_DEMAND_THROUGHPUT)}
    if action.get("WarmThroughput") is not None:
        index.warm_throughput = {**(index.warm_throughput or {}), **copy_of(action["WarmThroughput"], WARM_THROUGHPUT)}
    outcome.index_status[name] = "UPDATING"


def create_gsi(
    new: TableDefinition, action: dict, requested_definitions: list[dict], billing_mode: str, outcome: Outcome
) -> None:
    if not requested_definitions:
        raise invalid_parameter(f"AttributeDefinitions is not specified for index: {action['IndexName']}")
    types = {d["AttributeName"]: d["AttributeType"] for d in new.attribute_definitions}
    for definition in requested_definitions:
        name, kind = definition["AttributeName"], definition["AttributeType"]
        if name in types and types[name] != kind:
            raise invalid_parameter(
                "Attributes cannot be redefined. Please check that your attribute has the same type as previously "
                f"defined. Existing schema: {_schema_text(name, types[name])} New schema: {_schema_text(name, kind)}"
            )
        types[name] = kind
    # The index's key attributes must be defined in this request, even those the table already knows.
    check_gsi(action, [d["AttributeName"] for d in requested_definitions], billing_mode)
    if new.index(action["IndexName"]) is not None:
        raise validation("Attempting to create an index which already exists")
    if len(new.gsis) >= MAX_GSIS:
        raise invalid_parameter(f"GlobalSecondaryIndex count exceeds the per-table limit of {MAX_GSIS}")
    index = build_index(action, "GSI", types)
    check_projected_attribute_count((*new.lsis, *new.gsis, index))
    new.gsis.append(index)
    for name in index.key.names:
        if all(d["AttributeName"] != name for d in new.attribute_definitions):
            new.attribute_definitions.append({"AttributeName": name, "AttributeType": types[name]})
    outcome.index_status[index.name] = "CREATING"


def _schema_text(name: str, kind: str) -> str:
    # An attribute definition as the service prints it in this message (its Java model's text form).
    return f"{{AttributeName: {name},AttributeType: {kind}}}"


def delete_gsi(new: TableDefinition, name: str, outcome: Outcome) -> None:
    index = existing_gsi(new, name)
    position = new.gsis.index(index)
    outcome.dropped[position] = index
    outcome.index_status[name] = "DELETING"
    new.gsis.remove(index)


# ---------------------------------------------------------------------------------------- streams and settings


def update_stream(new: TableDefinition, spec: dict | None, now: float) -> None:
    if spec is None:
        return
    if spec["StreamEnabled"]:
        check_stream_specification(spec)
        refuse_if_strong(new, "DynamoDB Streams")
        if new.stream_enabled:
            raise validation(f"Table already has an enabled stream: TableName: {new.name}")
        new.stream = {
            "StreamEnabled": True,
            "StreamViewType": spec["StreamViewType"],
            "LatestStreamLabel": stream_label(now),
        }
    else:
        if not new.stream_enabled:
            raise validation(f"Table has no stream to disable: TableName: {new.name}")
        # The last stream stays readable (24 hours in DynamoDB), so its label and ARN stay in the description.
        new.stream = {"StreamEnabled": False, "LatestStreamLabel": new.stream["LatestStreamLabel"]}


def update_settings(engine, new: TableDefinition, request: dict, now: float) -> None:
    if request.get("SSESpecification") is not None:
        new.sse = sse_description(engine, request["SSESpecification"])
    if request.get("TableClass") is not None:
        new.table_class = request["TableClass"]
        new.table_class_updated = now
    if request.get("DeletionProtectionEnabled") is not None:
        new.deletion_protection = request["DeletionProtectionEnabled"]
    if request.get("OnDemandThroughput") is not None:
        new.on_demand = {**(new.on_demand or {}), **copy_of(request["OnDemandThroughput"], ON_DEMAND_THROUGHPUT)}
    if request.get("WarmThroughput") is not None:
        new.warm_throughput = {**(new.warm_throughput or {}), **copy_of(request["WarmThroughput"], WARM_THROUGHPUT)}


# ------------------------------------------------------------------------------------------------ the response


def response_view(new: TableDefinition, outcome: Outcome) -> TableDefinition:
    """The table as the response shows it: capacity changes still in progress, a deleted index still listed."""
    view = TableDefinition.from_dict(new.to_dict())
    in_force = outcome.capacity_in_force
    if "" in in_force:
        view.provisioned = _with_capacity_of(view.provisioned, in_force[""])
    for index in view.gsis:
        if index.name in in_force:
            index.provisioned = _with_capacity_of(index.provisioned, in_force[index.name])
    for position, index in sorted(outcome.dropped.items()):
        view.gsis.insert(position, replace(index))
    return view


def _with_capacity_of(stored: dict | None, old: dict) -> dict:
    return {
        **(stored or {}),
        "ReadCapacityUnits": old.get("ReadCapacityUnits", 0),
        "WriteCapacityUnits": old.get("WriteCapacityUnits", 0),
    }
