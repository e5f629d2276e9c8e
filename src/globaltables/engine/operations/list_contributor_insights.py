"""ListContributorInsights: a summary of every table and GSI Contributor Insights was ever enabled on (enabled or
disabled since), by table name then index (the table first), optionally of one table only (which must exist), in
pages of `MaxResults` (at most 100, the default); `NextToken` resumes after the last one returned.
"""

from __future__ import annotations

from ..errors import validation
from ..validation import Int, Str, check_request
from .contributor_insights_requests import TABLE_FIELD, summary

FIELDS = {"TableName": TABLE_FIELD, "NextToken": Str(), "MaxResults": Int(minimum=1, maximum=100)}
PAGE = 100


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    only = None
    if request.get("TableName") is not None:
        only = engine.table(request["TableName"], describe=True).name
    settings = sorted(
        (s for s in engine.contributor_insights.settings.values() if only is None or s.table == only),
        key=lambda s: (s.table, s.index is not None, s.index or ""),
    )
    limit = request.get("MaxResults") or PAGE
    start = 0
    token = request.get("NextToken")
    if token is not None:
        if not token.isdigit() or int(token) > len(settings):
            raise validation(f"Invalid NextToken: {token}")
        start = int(token)
    page = settings[start : start + limit]
    out: dict = {"ContributorInsightsSummaries": [summary(s) for s in page]}
    if start + limit < len(settings):
        out["NextToken"] = str(start + limit)
    return out
