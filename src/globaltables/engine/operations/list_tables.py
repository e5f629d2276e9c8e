"""ListTables: table names in ascending order, paged by ExclusiveStartTableName/Limit (at most 100 a page).

LastEvaluatedTableName appears only when more names remain after the page.
"""

from __future__ import annotations

from ..validation import TABLE_NAME_PATTERN, Int, Str, check_request

MAX_PAGE = 100

FIELDS = {
    "Limit": Int(minimum=1, maximum=MAX_PAGE),
    "ExclusiveStartTableName": Str(min_length=3, max_length=255, pattern=TABLE_NAME_PATTERN),
}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    limit = request.get("Limit") or MAX_PAGE
    start = request.get("ExclusiveStartTableName")
    # Table names are ASCII, so str order is the byte order DynamoDB lists them in.
    names = sorted(name for name in engine.tables if start is None or name > start)
    response: dict = {"TableNames": names[:limit]}
    if len(names) > limit:
        response["LastEvaluatedTableName"] = names[limit - 1]
    return response
