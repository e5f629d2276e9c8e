"""ListBackups: backup summaries in creation order, filtered and paged.

Filters (API reference, ListBackups): `TableName` (a name or table ARN; backups of a deleted table stay listed
under its name), `BackupType` USER (the default), SYSTEM, AWS_BACKUP or ALL, `TimeRangeLowerBound` (inclusive) and
`TimeRangeUpperBound` (exclusive) on the creation time. Paging: at most `Limit` (1 to 100) summaries per page; while
more remain, `LastEvaluatedBackupArn` names the last one returned, and `ExclusiveStartBackupArn` resumes after it.
"""

from __future__ import annotations

from .. import backups
from ..errors import validation
from ..table_arns import TABLE_ARN
from ..validation import AnyValue, Int, Str, check_request

FIELDS = {
    "TableName": Str(min_length=1, max_length=1024),
    "Limit": Int(minimum=1, maximum=100),
    "TimeRangeLowerBound": AnyValue(),
    "TimeRangeUpperBound": AnyValue(),
    "ExclusiveStartBackupArn": Str(min_length=37, max_length=1024),
    "BackupType": Str(enum=("USER", "SYSTEM", "AWS_BACKUP", "ALL")),
}
MAX_PAGE = 100


def timestamp(request: dict, member: str) -> float | None:
    value = request.get(member)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise validation(f"Invalid {member}: expected a timestamp (epoch seconds)")
    return float(value)


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table = request.get("TableName")
    if table is not None:
        matched = TABLE_ARN.fullmatch(table)
        table = matched.group(3) if matched else table
    kind = request.get("BackupType") or "USER"
    lower = timestamp(request, "TimeRangeLowerBound")
    upper = timestamp(request, "TimeRangeUpperBound")
    chosen = []
    for record in engine.store.backup_store().records():
        created = record["BackupCreationDateTime"]
        if table is not None and record["Definition"]["name"] != table:
            continue
        if kind != "ALL" and record["BackupType"] != kind:
            continue
        if (lower is not None and created < lower) or (upper is not None and created >= upper):
            continue
        chosen.append(record)
    start = request.get("ExclusiveStartBackupArn")
    if start is not None:
        arns = [record["BackupArn"] for record in chosen]
        chosen = chosen[arns.index(start) + 1 :] if start in arns else []
    limit = request.get("Limit") or MAX_PAGE
    page = chosen[:limit]
    out: dict = {"BackupSummaries": [backups.summary(record) for record in page]}
    if len(chosen) > limit:
        out["LastEvaluatedBackupArn"] = page[-1]["BackupArn"]
    return out
