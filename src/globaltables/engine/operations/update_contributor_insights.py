"""UpdateContributorInsights: enable (in ACCESSED_AND_THROTTLED_KEYS or THROTTLED_KEYS mode) or disable CloudWatch
Contributor Insights on a table or one of its GSIs.

The answer shows the transitional status (ENABLING, DISABLING), as DynamoDB's does; the transition completes at once
(docs/capacity.md, decision 18), so a DescribeContributorInsights right after shows ENABLED or DISABLED, and keys
are counted from the next request on. ENABLE without a mode means ACCESSED_AND_THROTTLED_KEYS; enabling again with
another mode switches the mode (and starts the key counts afresh); DISABLE forgets the keys counted.
"""

from __future__ import annotations

from ..contributor_insights import ACCESSED_AND_THROTTLED, MODES
from ..validation import Str, check_request
from .contributor_insights_requests import INDEX_FIELD, TABLE_FIELD, has_sort_key, resource, summary

FIELDS = {
    "TableName": Str(required=True, min_length=TABLE_FIELD.min_length, max_length=TABLE_FIELD.max_length),
    "IndexName": INDEX_FIELD,
    "ContributorInsightsAction": Str(required=True, enum=("ENABLE", "DISABLE")),
    "ContributorInsightsMode": Str(enum=MODES),
}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table, index_name = resource(engine, request)
    enable = request["ContributorInsightsAction"] == "ENABLE"
    mode = request.get("ContributorInsightsMode") or ACCESSED_AND_THROTTLED
    setting = engine.contributor_insights.update(
        table.name, index_name, enable, mode, has_sort_key(table, index_name), engine.clock.wall_time()
    )
    out = summary(setting)
    out["ContributorInsightsStatus"] = "ENABLING" if enable else "DISABLING"
    return out
