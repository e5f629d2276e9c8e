"""Validation of table definitions for CreateTable and UpdateTable.

Field-level constraints are declarative specs (see `validation.py`); the cross-field rules below run after them,
in the order DynamoDB applies them, and raise the first violation with DynamoDB's text. The texts and their order
follow the service as dynalite recorded it against live DynamoDB (`validations/createTable.js`,
`validations/updateTable.js`), extended to today's limits (20 GSIs, 100 projected attributes).

Nothing here reads or changes engine state: the functions take the request and, for UpdateTable, the current
definition, and return the pieces a new definition is built from.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import invalid_parameter, validation
from .schema import IndexDefinition, KeySchema
from .validation import TABLE_NAME_PATTERN, Bool, Int, List, Str, Struct, TableNameField, known_members

MAX_GSIS = 20
MAX_LSIS = 5
MAX_PROJECTED_ATTRIBUTES = 100  # NonKeyAttributes summed over all indexes of a table
MAX_CAPACITY_UNITS = 1_000_000_000_000  # larger values are "out of bounds", whatever the account's quota
MAX_TAGS = 50
MAX_KEY_ATTRIBUTES_PER_SIDE = 4  # a GSI's multi-attribute key: up to 4 HASH and 4 RANGE attributes
HASH_FIRST = "Every HASH KeySchemaElement must precede every RANGE KeySchemaElement"

# ------------------------------------------------------------------------------------------------- field specs
# Member order inside each spec is the order DynamoDB lists their violations in one message.


def key_schema_field(multi_attribute: bool = False) -> List:
    """A KeySchema: at most one HASH and one RANGE element for tables and LSIs. A GSI's may hold up to four of each
    (multi-attribute keys); their counts are cross-field rules (`check_key_elements`), so no length limit here."""
    element = Struct(
        {
            "AttributeName": Str(required=True, min_length=1, max_length=255),
            "KeyType": Str(required=True, enum=("HASH", "RANGE")),
        }
    )
    return List(element, required=True, min_length=1, max_length=None if multi_attribute else 2)


def attribute_definitions_field(required: bool) -> List:
    element = Struct(
        {
            "AttributeName": Str(required=True, min_length=1, max_length=255),
            "AttributeType": Str(required=True, enum=("S", "N", "B"), enum_order=("B", "N", "S")),
        }
    )
    return List(element, required=required)


def provisioned_throughput_field(required: bool = False) -> Struct:
    return Struct(
        {
            "WriteCapacityUnits": Int(required=True, minimum=1),
            "ReadCapacityUnits": Int(required=True, minimum=1),
        },
        required=required,
    )


def index_name_field() -> Str:
    return Str(required=True, min_length=3, max_length=255, pattern=TABLE_NAME_PATTERN)


ON_DEMAND_THROUGHPUT = Struct({"MaxReadRequestUnits": Int(), "MaxWriteRequestUnits": Int()})
WARM_THROUGHPUT = Struct({"ReadUnitsPerSecond": Int(), "WriteUnitsPerSecond": Int()})
PROJECTION = Struct(
    {
        "ProjectionType": Str(enum=("ALL", "KEYS_ONLY", "INCLUDE"), enum_order=("ALL", "INCLUDE", "KEYS_ONLY")),
        "NonKeyAttributes": List(Str(min_length=1, max_length=255), min_length=1, max_length=20),
    },
    required=True,
)
LOCAL_SECONDARY_INDEX = Struct(
    {"IndexName": index_name_field(), "KeySchema": key_schema_field(), "Projection": PROJECTION}
)
GLOBAL_SECONDARY_INDEX = Struct(
    {
        "IndexName": index_name_field(),
        "KeySchema": key_schema_field(multi_attribute=True),
        "Projection": PROJECTION,
        "ProvisionedThroughput": provisioned_throughput_field(),
        "OnDemandThroughput": ON_DEMAND_THROUGHPUT,
        "WarmThroughput": WARM_THROUGHPUT,
    }
)
STREAM_SPECIFICATION = Struct(
    {
        "StreamEnabled": Bool(required=True),
        "StreamViewType": Str(enum=("NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES", "KEYS_ONLY")),
    }
)
SSE_SPECIFICATION = Struct({"Enabled": Bool(), "SSEType": Str(enum=("AES256", "KMS")), "KMSMasterKeyId": Str()})
TAG = Struct({"Key": Str(required=True, min_length=1, max_length=128), "Value": Str(required=True, max_length=256)})
TAG_LIST = List(TAG)
BILLING_MODE = Str(enum=("PROVISIONED", "PAY_PER_REQUEST"))
TABLE_CLASS = Str(enum=("STANDARD", "STANDARD_INFREQUENT_ACCESS"))
SETTINGS_REPLICATION_MODE = Str(enum=("ENABLED", "DISABLED", "ENABLED_WITH_OVERRIDES"))

CREATE_TABLE_FIELDS = {
    "AttributeDefinitions": attribute_definitions_field(required=True),
    "TableName": TableNameField(),
    "BillingMode": BILLING_MODE,
    "ProvisionedThroughput": provisioned_throughput_field(),
    "KeySchema": key_schema_field(),
    "LocalSecondaryIndexes": List(LOCAL_SECONDARY_INDEX),
    "GlobalSecondaryIndexes": List(GLOBAL_SECONDARY_INDEX),
    "StreamSpecification": STREAM_SPECIFICATION,
    "SSESpecification": SSE_SPECIFICATION,
    "Tags": TAG_LIST,
    "TableClass": TABLE_CLASS,
    "DeletionProtectionEnabled": Bool(),
    "OnDemandThroughput": ON_DEMAND_THROUGHPUT,
    "WarmThroughput": WARM_THROUGHPUT,
    "ResourcePolicy": Str(),
    "GlobalTableSourceArn": Str(min_length=1, max_length=1024),
    "GlobalTableSettingsReplicationMode": SETTINGS_REPLICATION_MODE,
}

# ------------------------------------------------------------------------------------------ shared rule pieces


def names_list(names: Iterable[str]) -> str:
    return "[" + ", ".join(names) + "]"


def check_capacity_bounds(throughput: dict) -> None:
    for member in ("ReadCapacityUnits", "WriteCapacityUnits"):
        if throughput[member] > MAX_CAPACITY_UNITS:
            raise validation(f"Given value {throughput[member]} for {member} is out of bounds")


def check_key_elements(elements: list[dict], definition_names: list[str], multi_attribute: bool = False) -> None:
    """The rules every key schema (table or index) obeys, in DynamoDB's order. `multi_attribute`: a GSI's, which
    may hold 1-4 HASH elements followed by 0-4 RANGE elements, each attribute once (DynamoDB's multi-attribute
    keys, developerguide/GSI.html#GSI.MultiAttributeKeys)."""
    names = [element["AttributeName"] for element in elements]
    if any(name not in definition_names for name in names):
        raise invalid_parameter(
            "Some index key attributes are not defined in AttributeDefinitions. "
            f"Keys: {names_list(names)}, AttributeDefinitions: {names_list(definition_names)}"
        )
    if len(names) == 2 and names[0] == names[1]:
        raise validation("Both the Hash Key and the Range Key element in the KeySchema have the same name")
    if elements[0]["KeyType"] != "HASH":
        if multi_attribute and any(element["KeyType"] == "HASH" for element in elements):
            raise validation(f"Invalid KeySchema: The first KeySchemaElement is not a HASH key type: {HASH_FIRST}")
        raise validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    if not multi_attribute:
        if len(elements) == 2 and elements[1]["KeyType"] != "RANGE":
            raise validation("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")
        return
    repeated = next((name for position, name in enumerate(names) if name in names[:position]), None)
    if repeated is not None:
        raise validation(
            f"Invalid KeySchema: Two KeySchemaElements have the same name: {repeated}. An attribute may appear only "
            "once in a key schema"
        )
    kinds = [element["KeyType"] for element in elements]
    first_range = kinds.index("RANGE") if "RANGE" in kinds else len(kinds)
    if "HASH" in kinds[first_range:]:
        raise validation(f"Invalid KeySchema: {HASH_FIRST}")
    for kind, count in (("HASH", first_range), ("RANGE", len(kinds) - first_range)):
        if count > MAX_KEY_ATTRIBUTES_PER_SIDE:
            raise validation(
                f"Invalid KeySchema: A KeySchema can have at most {MAX_KEY_ATTRIBUTES_PER_SIDE} {kind} "
                f"KeySchemaElements; {kind} KeySchemaElements: {count}"
            )


def key_schema(elements: list[dict], types: dict[str, str]) -> KeySchema:
    """The KeySchema of elements that passed `check_key_elements` (all HASH elements, then all RANGE elements)."""
    hashes = [(e["AttributeName"], types[e["AttributeName"]]) for e in elements if e["KeyType"] == "HASH"]
    ranges = [(e["AttributeName"], types[e["AttributeName"]]) for e in elements if e["KeyType"] == "RANGE"]
    (hash_name, hash_type), *more_hash = hashes
    if not ranges:
        return KeySchema(hash_name, hash_type, more_hash=tuple(more_hash))
    (range_name, range_type), *more_range = ranges
    return KeySchema(hash_name, hash_type, range_name, range_type, tuple(more_hash), tuple(more_range))


def check_attribute_definitions(definitions: list[dict]) -> None:
    """A name defined twice is refused before any rule that counts or matches definitions."""
    seen: set[str] = set()
    for definition in definitions:
        name = definition["AttributeName"]
        if name in seen:
            raise validation(f"Attribute Name is duplicated: {name}")
        seen.add(name)


def check_projection(projection: dict) -> None:
    projection_type = projection.get("ProjectionType")
    if projection_type is None:
        raise invalid_parameter("Unknown ProjectionType: null")
    non_key = projection.get("NonKeyAttributes")
    if non_key is not None and projection_type != "INCLUDE":
        raise invalid_parameter(f"ProjectionType is {projection_type}, but NonKeyAttributes is specified")
    if projection_type == "INCLUDE":
        if non_key is None:
            raise invalid_parameter("ProjectionType is INCLUDE, but NonKeyAttributes is not specified")
        seen: set[str] = set()
        for name in non_key:
            if name in seen:
                raise invalid_parameter(f"Duplicate element in NonKeyAttributes: {name}")
            seen.add(name)


def projected_attribute_count(indexes: Iterable[IndexDefinition]) -> int:
    return sum(len(index.non_key_attributes) for index in indexes if index.projection_type == "INCLUDE")


def check_projected_attribute_count(indexes: Iterable[IndexDefinition]) -> None:
    count = projected_attribute_count(indexes)
    if count > MAX_PROJECTED_ATTRIBUTES:
        raise invalid_parameter(
            f"Number of projected attributes in all indexes exceeds limit of {MAX_PROJECTED_ATTRIBUTES}, "
            f"number of projected attributes: {count}"
        )


def check_gsi_throughput(raw: dict, billing_mode: str) -> None:
    """A GSI's capacity follows the table's billing mode: required when provisioned, refused when on demand."""
    name = raw["IndexName"]
    throughput = raw.get("ProvisionedThroughput")
    if billing_mode == "PAY_PER_REQUEST":
        if throughput is not None:
            raise invalid_parameter(
                f"ProvisionedThroughput should not be specified for index: {name} when BillingMode is PAY_PER_REQUEST"
            )
        return
    if throughput is None:
        raise invalid_parameter(f"ProvisionedThroughput must be specified for index: {name}")
    check_capacity_bounds(throughput)


def throughput_description(throughput: dict | None) -> dict:
    """The stored ProvisionedThroughput of a table or GSI: on-demand capacity shows as 0/0."""
    if throughput is None:
        return {"ReadCapacityUnits": 0, "WriteCapacityUnits": 0, "NumberOfDecreasesToday": 0}
    return {
        "ReadCapacityUnits": throughput["ReadCapacityUnits"],
        "WriteCapacityUnits": throughput["WriteCapacityUnits"],
        "NumberOfDecreasesToday": 0,
    }


def copy_of(structure: dict | None, spec: Struct) -> dict | None:
    """A checked request structure as a definition keeps it: its spec's members only, never shared with the
    request it came from."""
    return known_members(structure, spec) if structure is not None else None


def build_index(raw: dict, kind: str, types: dict[str, str]) -> IndexDefinition:
    projection = raw["Projection"]
    index = IndexDefinition(
        name=raw["IndexName"],
        kind=kind,
        key=key_schema(raw["KeySchema"], types),
        projection_type=projection["ProjectionType"],
        non_key_attributes=list(projection.get("NonKeyAttributes") or []),
    )
    if kind == "GSI":
        index.provisioned = throughput_description(raw.get("ProvisionedThroughput"))
        index.on_demand = copy_of(raw.get("OnDemandThroughput"), ON_DEMAND_THROUGHPUT)
        index.warm_throughput = copy_of(raw.get("WarmThroughput"), WARM_THROUGHPUT)
    return index


def check_gsi(raw: dict, definition_names: list[str], billing_mode: str) -> None:
    """One GSI of CreateTable or of an UpdateTable Create action."""
    check_key_elements(raw["KeySchema"], definition_names, multi_attribute=True)
    check_projection(raw["Projection"])
    check_gsi_throughput(raw, billing_mode)


def check_stream_specification(spec: dict) -> None:
    if spec["StreamEnabled"] and spec.get("StreamViewType") is None:
        raise invalid_parameter("You must specify a StreamViewType when enabling a stream")


# "The allowed characters are letters, white space, and numbers, plus the following special characters: + - = . _ :
# /" (Tagging restrictions in DynamoDB), and '@' as in AWS's common tag pattern [\p{L}\p{Z}\p{N}_.:/=+\-@].
TAG_SYMBOLS = frozenset("+-=._:/@")


def tag_text_ok(text: str) -> bool:
    for char in text:
        if char in TAG_SYMBOLS or char.isspace():
            continue
        if unicodedata.category(char)[0] not in "LNZ":
            return False
    return True


def check_tag_key(key: str) -> None:
    if not tag_text_ok(key):
        raise validation(f"The Tag Key provided is invalid, Key: {key}")


def check_tags(tags: list[dict]) -> None:
    for tag in tags:
        check_tag_key(tag["Key"])
        if not tag_text_ok(tag["Value"]):
            raise validation(f"The Tag Value provided is invalid, Value: {tag['Value']}")
    if len({tag["Key"] for tag in tags}) > MAX_TAGS:
        raise invalid_parameter(f"The number of tags exceeds the limit of {MAX_TAGS} tags per resource")


def merge_tags(current: list[dict], new: list[dict]) -> list[dict]:
    """Tags keyed by Key: a new value replaces the old one. Kept sorted by key so listings are stable."""
    merged = {tag["Key"]: tag["Value"] for tag in current}
    for tag in new:
        merged[tag["Key"]] = tag["Value"]
    return [{"Key": key, "Value": merged[key]} for key in sorted(merged)]


# --------------------------------------------------------------------------------------------------- CreateTable


@dataclass
class TableShape:
    """What a valid CreateTable request defines, ready to become a TableDefinition."""

    key: KeySchema
    attribute_definitions: list[dict]
    billing_mode: str
    provisioned: dict
    lsis: list[IndexDefinition] = field(default_factory=list)
    gsis: list[IndexDefinition] = field(default_factory=list)


def validate_create_table(request: dict) -> TableShape:
    """Cross-field rules of CreateTable, after `check_request(request, CREATE_TABLE_FIELDS)`."""
    if request.get("GlobalTableSourceArn") is not None:
        raise validation(
            "GlobalTableSourceArn is not supported by globaltables: multi-account global tables are not modelled"
        )
    billing_mode = request.get("BillingMode") or "PROVISIONED"
    throughput = request.get("ProvisionedThroughput")
    if billing_mode == "PAY_PER_REQUEST":
        if throughput is not None:
            raise invalid_parameter(
                "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST"
            )
    else:
        if throughput is None:
            raise invalid_parameter(
                "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED"
            )
        check_capacity_bounds(throughput)

    definitions = request["AttributeDefinitions"]
    check_attribute_definitions(definitions)
    definition_names = [d["AttributeName"] for d in definitions]
    types = {d["AttributeName"]: d["AttributeType"] for d in definitions}
    elements = request["KeySchema"]
    if len(elements) > len(definition_names):
        raise validation("Invalid KeySchema: Some index key attribute have no definition")
    check_key_elements(elements, definition_names)
    lsi_requests = request.get("LocalSecondaryIndexes")
    gsi_requests = request.get("GlobalSecondaryIndexes")
    has_indexes = lsi_requests is not None or gsi_requests is not None
    if not has_indexes and len(elements) != len(definitions):
        raise invalid_parameter(
            "Number of attributes in KeySchema does not exactly match number of attributes defined in "
            "AttributeDefinitions"
        )

    table_key = key_schema(elements, types)
    index_names: set[str] = set()
    lsis = _local_indexes(lsi_requests, elements, definition_names, index_names, types)
    gsis = _global_indexes(gsi_requests, definition_names, billing_mode, index_names, types)
    check_projected_attribute_count((*lsis, *gsis))

    if has_indexes:
        used = sorted({name for key in (table_key, *(index.key for index in (*lsis, *gsis))) for name in key.names})
        if len(definition_names) > len(used):
            raise invalid_parameter(
                f"Some AttributeDefinitions are not used. AttributeDefinitions: {names_list(sorted(definition_names))}"
                f", keys used: {names_list(used)}"
            )

    if request.get("StreamSpecification") is not None:
        check_stream_specification(request["StreamSpecification"])
    check_tags(request.get("Tags") or [])
    return TableShape(
        key=table_key,
        attribute_definitions=[
            {"AttributeName": d["AttributeName"], "AttributeType": d["AttributeType"]} for d in definitions
        ],
        billing_mode=billing_mode,
        provisioned=throughput_description(throughput),
        lsis=lsis,
        gsis=gsis,
    )


def _local_indexes(
    requests: list[dict] | None,
    table_elements: list[dict],
    definition_names: list[str],
    index_names: set[str],
    types: dict[str, str],
) -> list[IndexDefinition]:
    if requests is None:
        return []
    if not requests:
        raise invalid_parameter("List of LocalSecondaryIndexes is empty")
    if len(table_elements) != 2:
        raise invalid_parameter(
            "Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex"
        )
    table_hash = table_elements[0]["AttributeName"]
    for raw in requests:
        name = raw["IndexName"]
        elements = raw["KeySchema"]
        check_key_elements(elements, definition_names)
        if len(elements) != 2:
            raise invalid_parameter(f"Index KeySchema does not have a range key for index: {name}")
        index_hash = elements[0]["AttributeName"]
        if index_hash != table_hash:
            raise invalid_parameter(
                "Index KeySchema does not have the same leading hash key as table KeySchema for index: "
                f"{name}. index hash key: {index_hash}, table hash key: {table_hash}"
            )
        check_projection(raw["Projection"])
        _claim_name(name, index_names)
    if len(requests) > MAX_LSIS:
        raise invalid_parameter(f"Number of LocalSecondaryIndexes exceeds per-table limit of {MAX_LSIS}")
    return [build_index(raw, "LSI", types) for raw in requests]


def _global_indexes(
    requests: list[dict] | None,
    definition_names: list[str],
    billing_mode: str,
    index_names: set[str],
    types: dict[str, str],
) -> list[IndexDefinition]:
    if requests is None:
        return []
    if not requests:
        raise invalid_parameter("List of GlobalSecondaryIndexes is empty")
    for raw in requests:
        check_gsi(raw, definition_names, billing_mode)
        _claim_name(raw["IndexName"], index_names)
    if len(requests) > MAX_GSIS:
        raise invalid_parameter(f"GlobalSecondaryIndex count exceeds the per-table limit of {MAX_GSIS}")
    return [build_index(raw, "GSI", types) for raw in requests]


def _claim_name(name: str, taken: set[str]) -> None:
    if name in taken:
        raise invalid_parameter(f"Duplicate index name: {name}")
    taken.add(name)
