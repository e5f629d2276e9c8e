"""On-demand backups and restores: what a backup keeps, how it is described, and how a restore makes a new table.

Rules (DynamoDB API reference: CreateBackup, DescribeBackup, ListBackups, DeleteBackup, RestoreTableFromBackup,
RestoreTableToPointInTime; developer guide "Backup and restore for DynamoDB"):
- A backup is a full copy of the table's items at the request time and of its definition then (key schema,
  attribute definitions, indexes, capacity, billing mode, stream, TTL and encryption settings). It never changes
  afterwards and outlives its table. It is stored durably with its items (storage/backup_store.py).
- Its ARN is the table's ARN plus `/backup/<creation ms, 13 digits>-<8 hex>`; the suffix is derived from the table
  id, time and name, so a simulated run replays the same ARNs.
- CreateBackup answers BackupStatus CREATING (the copy is made within the request; DescribeBackup then shows
  AVAILABLE), as CreateTable answers CREATING. DeleteBackup answers the description with DELETED; the backup is
  gone after.
- Deleting a table with point-in-time recovery enabled keeps a SYSTEM backup of it (`<table>$DeletedTableBackup`),
  expiring 35 days after, as DynamoDB does.
- A restore creates a new table in this region only: never a replica of a global table, never strong (MRSC), with
  no stream, TTL, tags, point-in-time recovery or deletion protection ("You must manually set up ... Tags, Stream
  settings, Time to Live (TTL) settings, Point in time recovery settings"). Key schema, attribute definitions, local
  and global secondary indexes, capacity and encryption come from the source, unless overridden:
  `BillingModeOverride`, `ProvisionedThroughputOverride`, `OnDemandThroughputOverride`,
  `GlobalSecondaryIndexOverride` / `LocalSecondaryIndexOverride` (the indexes to keep, which may be fewer),
  `SSESpecificationOverride`. The new definition passes CreateTable's own validation, so an override that
  CreateTable would refuse is refused with CreateTable's text.
- A target name that exists is TableAlreadyExistsException and nothing changes. The items are written in one store
  transaction (indexes maintained as for any write), so a restore is whole or absent; the answer shows CREATING
  with `RestoreSummary.RestoreInProgress` true, DescribeTable then ACTIVE and false.
- Error texts: InvalidRestoreTimeException's is the API model's documentation of it; DynamoDB does not document the
  others, so "Backup not found: <arn>", "Table already exists: <name>" (CreateTable's wording), "Table not found:
  <name>" (the continuous-backups operations') and "Point in time recovery is not enabled for table '<name>'" are
  the project's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .errors import DynamoError
from .schema import TableDefinition
from .storage.records import ItemWrite
from .table_description import describe_table, epoch
from .table_validation import CREATE_TABLE_FIELDS, validate_create_table
from .validation import check_request
from .values import item_size

if TYPE_CHECKING:
    from .engine import Engine

SYSTEM_BACKUP_RETENTION_S = 35 * 86400
SYSTEM_BACKUP_SUFFIX = "$DeletedTableBackup"


class BackupNotFoundException(DynamoError):
    pass


class TableAlreadyExistsException(DynamoError):
    pass


class TableInUseException(DynamoError):
    pass


class InvalidRestoreTimeException(DynamoError):
    pass


class PointInTimeRecoveryUnavailableException(DynamoError):
    pass


# --------------------------------------------------------------------------------------------------- backing up


def backup_arn(table: TableDefinition, name: str, now: float) -> str:
    digest = hashlib.blake2b(f"{table.table_id}/{now!r}/{name}".encode(), digest_size=4).hexdigest()
    return f"{table.arn}/backup/{int(now * 1000):013d}-{digest}"


def create(engine: Engine, table: TableDefinition, name: str, kind: str = "USER") -> dict:
    """Copy `table` into a new backup; its record (what the backup store keeps besides the items)."""
    now = engine.clock.wall_time()
    item_count, size = engine.store.table_stats(table.name)
    record = {
        "BackupArn": backup_arn(table, name, now),
        "BackupName": name,
        "BackupType": kind,
        "BackupCreationDateTime": epoch(now),
        "BackupSizeBytes": size,
        "ItemCount": item_count,
        "Definition": table.to_dict(),
    }
    if kind == "SYSTEM":
        record["BackupExpiryDateTime"] = epoch(now + SYSTEM_BACKUP_RETENTION_S)
    items = (item for _pk, _sk, item, _version in engine.store.table_records(table.name))
    engine.store.backup_store().add(record["BackupArn"], now, record, items)
    return record


def found(engine: Engine, arn: object) -> dict:
    record = engine.store.backup_store().get(arn) if isinstance(arn, str) else None
    if record is None:
        raise BackupNotFoundException(f"Backup not found: {arn}")
    return record


# --------------------------------------------------------------------------------------------------- describing


def details(record: dict, status: str = "AVAILABLE") -> dict:
    out = {
        "BackupArn": record["BackupArn"],
        "BackupName": record["BackupName"],
        "BackupSizeBytes": record["BackupSizeBytes"],
        "BackupStatus": status,
        "BackupType": record["BackupType"],
        "BackupCreationDateTime": record["BackupCreationDateTime"],
    }
    if "BackupExpiryDateTime" in record:
        out["BackupExpiryDateTime"] = record["BackupExpiryDateTime"]
    return out


def description(record: dict, status: str = "AVAILABLE") -> dict:
    """The BackupDescription: the backup, its source table then, and the table's features then."""
    table = TableDefinition.from_dict(record["Definition"])
    capacity = table.provisioned or {}
    source = {
        "TableName": table.name,
        "TableId": table.table_id,
        "TableArn": table.arn,
        "TableSizeBytes": record["BackupSizeBytes"],
        "KeySchema": table.key.to_wire(),
        "TableCreationDateTime": epoch(table.creation_time),
        "ProvisionedThroughput": {
            "ReadCapacityUnits": capacity.get("ReadCapacityUnits", 0),
            "WriteCapacityUnits": capacity.get("WriteCapacityUnits", 0),
        },
        "ItemCount": record["ItemCount"],
        "BillingMode": table.billing_mode,
    }
    if table.on_demand:
        source["OnDemandThroughput"] = dict(table.on_demand)
    features: dict = {}
    if table.lsis:
        features["LocalSecondaryIndexes"] = [
            {"IndexName": i.name, "KeySchema": i.key.to_wire(), "Projection": i.projection} for i in table.lsis
        ]
    if table.gsis:
        features["GlobalSecondaryIndexes"] = [
            {
                "IndexName": i.name,
                "KeySchema": i.key.to_wire(),
                "Projection": i.projection,
                "ProvisionedThroughput": {
                    "ReadCapacityUnits": (i.provisioned or {}).get("ReadCapacityUnits", 0),
                    "WriteCapacityUnits": (i.provisioned or {}).get("WriteCapacityUnits", 0),
                },
            }
            for i in table.gsis
        ]
    if table.stream_enabled:
        features["StreamDescription"] = {"StreamEnabled": True, "StreamViewType": table.stream["StreamViewType"]}
    if table.ttl:
        features["TimeToLiveDescription"] = dict(table.ttl)
    if table.sse is not None:
        features["SSEDescription"] = dict(table.sse)
    return {
        "BackupDetails": details(record, status),
        "SourceTableDetails": source,
        "SourceTableFeatureDetails": features,
    }


def summary(record: dict) -> dict:
    """One BackupSummary of ListBackups."""
    table = record["Definition"]
    out = {"TableName": table["name"], "TableId": table["table_id"], "TableArn": table["arn"]}
    out.update(details(record))
    return out


# ---------------------------------------------------------------------------------------------------- restoring


def restore(
    engine: Engine, source: TableDefinition, items: Iterable[dict], request: dict, restore_summary: dict
) -> dict:
    """Create `request["TargetTableName"]` from `source`'s definition (with the request's overrides) holding
    `items`; the RestoreTableFromBackup / RestoreTableToPointInTime answer."""
    from .operations.create_table import new_definition

    target = request["TargetTableName"]
    if target in engine.tables:
        raise TableAlreadyExistsException(f"Table already exists: {target}")
    create_request = create_table_request(source, request)
    check_request(create_request, CREATE_TABLE_FIELDS)
    shape = validate_create_table(create_request)
    definition = new_definition(engine, create_request, shape)
    definition.table_class = source.table_class
    if "SSESpecificationOverride" not in request:
        definition.sse = None if source.sse is None else dict(source.sse)
    definition.restore_summary = restore_summary
    engine.save_table(definition)
    key = definition.key
    writes = []
    for item in items:
        pk, sk = key.encode(item)
        writes.append(ItemWrite(target, pk, sk, item, item_size(item), old_version=None))
    try:
        if writes:
            engine.commit(writes)
    except BaseException:
        engine.drop_table(target)  # whole or absent
        raise
    response = describe_table(engine, definition, table_status="CREATING")
    response["RestoreSummary"]["RestoreInProgress"] = True
    return {"TableDescription": response}


def create_table_request(source: TableDefinition, request: dict) -> dict:
    """The CreateTable request a restore amounts to: the source's shape with the overrides applied."""
    billing = request.get("BillingModeOverride") or source.billing_mode
    out: dict = {"TableName": request["TargetTableName"], "KeySchema": source.key.to_wire(), "BillingMode": billing}
    provisioned = billing == "PROVISIONED"
    # Capacity comes from the override, else from a provisioned source; an on-demand source restored as
    # PROVISIONED without an override has none, and CreateTable's rule refuses it.
    had_capacity = source.billing_mode == "PROVISIONED"
    if provisioned:
        capacity = request.get("ProvisionedThroughputOverride") or (source.provisioned if had_capacity else None)
        if capacity:
            out["ProvisionedThroughput"] = {
                "ReadCapacityUnits": capacity["ReadCapacityUnits"], "WriteCapacityUnits": capacity["WriteCapacityUnits"]
            }  # fmt: skip
    on_demand = request.get("OnDemandThroughputOverride") or source.on_demand
    if on_demand and not provisioned:
        out["OnDemandThroughput"] = dict(on_demand)
    if "LocalSecondaryIndexOverride" in request:
        lsis = request["LocalSecondaryIndexOverride"]
    else:
        lsis = [{"IndexName": i.name, "KeySchema": i.key.to_wire(), "Projection": i.projection} for i in source.lsis]
    if "GlobalSecondaryIndexOverride" in request:
        gsis = request["GlobalSecondaryIndexOverride"]
    else:
        gsis = []
        for index in source.gsis:
            gsi = {"IndexName": index.name, "KeySchema": index.key.to_wire(), "Projection": index.projection}
            if provisioned and had_capacity and index.provisioned:
                gsi["ProvisionedThroughput"] = {
                    "ReadCapacityUnits": index.provisioned["ReadCapacityUnits"],
                    "WriteCapacityUnits": index.provisioned["WriteCapacityUnits"],
                }
            gsis.append(gsi)
    if lsis:
        out["LocalSecondaryIndexes"] = lsis
    if gsis:
        out["GlobalSecondaryIndexes"] = gsis
    # Only the attributes the kept keys use: dropping an index drops its key attributes' definitions.
    used = {element["AttributeName"] for element in out["KeySchema"]}
    for index in (*lsis, *gsis):
        for element in index.get("KeySchema") or []:
            if isinstance(element, dict):
                used.add(element.get("AttributeName"))
    out["AttributeDefinitions"] = [dict(d) for d in source.attribute_definitions if d["AttributeName"] in used]
    if "SSESpecificationOverride" in request:
        out["SSESpecification"] = request["SSESpecificationOverride"]
    return out
