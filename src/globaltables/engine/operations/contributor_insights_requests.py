"""What the three Contributor Insights operations share: their request fields and the table or GSI a request names
(engine/contributor_insights.py has the settings and the key trackers)."""

from __future__ import annotations

from ..errors import ResourceNotFoundException
from ..schema import TableDefinition
from ..validation import Str

# The service model's shapes: TableName is a TableArn (a name or an ARN, 1 to 1024 characters), IndexName 3 to 255.
TABLE_FIELD = Str(min_length=1, max_length=1024)
INDEX_FIELD = Str(min_length=3, max_length=255)


def resource(engine, request: dict) -> tuple[TableDefinition, str | None]:
    """The table the request names, and its GSI when it names one (ResourceNotFoundException otherwise: Contributor
    Insights watches tables and global secondary indexes only)."""
    table = engine.table(request["TableName"], describe=True)
    index_name = request.get("IndexName")
    if index_name is not None:
        index = table.index(index_name)
        if index is None or index.kind != "GSI":
            raise ResourceNotFoundException(f"Requested resource not found: Index: {index_name} not found")
    return table, index_name


def has_sort_key(table: TableDefinition, index_name: str | None) -> bool:
    key = table.key if index_name is None else table.index(index_name).key
    return key.range_name is not None


def summary(setting) -> dict:
    """A setting as ContributorInsightsSummary (and the head of the other two answers)."""
    out: dict = {"TableName": setting.table}
    if setting.index is not None:
        out["IndexName"] = setting.index
    out["ContributorInsightsStatus"] = setting.status
    out["ContributorInsightsMode"] = setting.mode
    return out
