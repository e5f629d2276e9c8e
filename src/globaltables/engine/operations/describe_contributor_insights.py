"""DescribeContributorInsights: the Contributor Insights status of a table or GSI, its mode, its rules and when it
last changed. A table or GSI it was never enabled on is DISABLED, with no rules and no time.

Rules (capacity-facts §7): DynamoDBContributorInsights-{PKC,PKT}-{resource}-{creation ms}, plus SKC and SKT when the
table or GSI has a sort key; {resource} is the table name, or table-index for a GSI; THROTTLED_KEYS mode has only
the *T rules. They are listed while enabled.
"""

from __future__ import annotations

from ..validation import check_request
from .contributor_insights_requests import INDEX_FIELD, has_sort_key, resource, summary
from .update_contributor_insights import FIELDS as UPDATE_FIELDS

FIELDS = {"TableName": UPDATE_FIELDS["TableName"], "IndexName": INDEX_FIELD}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table, index_name = resource(engine, request)
    setting = engine.contributor_insights.get(table.name, index_name)
    if setting is None:
        out: dict = {"TableName": table.name}
        if index_name is not None:
            out["IndexName"] = index_name
        out["ContributorInsightsStatus"] = "DISABLED"
        return out
    out = summary(setting)
    if setting.status == "ENABLED":
        out["ContributorInsightsRuleList"] = setting.rule_names(has_sort_key(table, index_name))
    out["LastUpdateDateTime"] = setting.updated
    return out
