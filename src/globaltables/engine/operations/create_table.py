"""CreateTable: validate the whole definition (indexes included), then register the table.

The table is usable as soon as this returns; the response shows CREATING as DynamoDB's does, DescribeTable shows
ACTIVE (see `table_description`).
"""

from __future__ import annotations

from ..errors import ResourceInUseException
from ..schema import TableDefinition
from ..table_description import describe_table, sse_description, stream_label
from ..table_validation import (
    CREATE_TABLE_FIELDS,
    ON_DEMAND_THROUGHPUT,
    WARM_THROUGHPUT,
    TableShape,
    copy_of,
    merge_tags,
    validate_create_table,
)
from ..validation import check_request


def handle(engine, request: dict) -> dict:
    check_request(request, CREATE_TABLE_FIELDS)
    shape = validate_create_table(request)
    name = request["TableName"]
    if name in engine.tables:
        raise ResourceInUseException(f"Table already exists: {name}")
    definition = new_definition(engine, request, shape)
    engine.save_table(definition)
    index_status = {index.name: "CREATING" for index in definition.gsis}
    return {"TableDescription": describe_table(engine, definition, table_status="CREATING", index_status=index_status)}


def new_definition(engine, request: dict, shape: TableShape) -> TableDefinition:
    """The definition of a new table from a checked CreateTable request (restores build one too, backups.py)."""
    name = request["TableName"]
    now = engine.clock.wall_time()
    definition = TableDefinition(
        name=name,
        table_id=engine.new_id(),
        arn=engine.table_arn(name),
        key=shape.key,
        attribute_definitions=shape.attribute_definitions,
        creation_time=now,
        billing_mode=shape.billing_mode,
        provisioned=shape.provisioned,
        gsis=shape.gsis,
        lsis=shape.lsis,
        deletion_protection=bool(request.get("DeletionProtectionEnabled", False)),
        table_class=request.get("TableClass") or "STANDARD",
        tags=merge_tags([], request.get("Tags") or []),
        billing_mode_explicit=request.get("BillingMode") is not None,
        billing_mode_updated=now if shape.billing_mode == "PAY_PER_REQUEST" else None,
        on_demand=copy_of(request.get("OnDemandThroughput"), ON_DEMAND_THROUGHPUT),
        warm_throughput=copy_of(request.get("WarmThroughput"), WARM_THROUGHPUT),
        sse=sse_description(engine, request.get("SSESpecification")),
    )
    stream = request.get("StreamSpecification")
    if stream is not None and stream["StreamEnabled"]:
        definition.stream = {
            "StreamEnabled": True,
            "StreamViewType": stream["StreamViewType"],
            "LatestStreamLabel": stream_label(now),
        }
    return definition
