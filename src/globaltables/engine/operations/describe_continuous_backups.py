"""DescribeContinuousBackups: the table's continuous backups (always ENABLED) and point-in-time recovery settings.

Tools that manage tables read these after every change (Terraform's table resource does), so they are answered as
DynamoDB answers them. Point-in-time recovery is kept with the table and described with its recovery period and
the window RestoreTableToPointInTime reaches (engine/point_in_time.py). A table that does not exist is
TableNotFoundException, as the API model says.
"""

from __future__ import annotations

from ..errors import ResourceNotFoundException, TableNotFoundException
from ..point_in_time import earliest_restorable, latest_restorable
from ..schema import TableDefinition
from ..validation import TableNameField, check_request

FIELDS = {"TableName": TableNameField()}
DEFAULT_RECOVERY_DAYS = 35
MIN_RECOVERY_DAYS, MAX_RECOVERY_DAYS = 1, 35


def backed_up_table(engine, name: str) -> TableDefinition:
    try:
        return engine.table(name, describe=True)
    except ResourceNotFoundException:
        raise TableNotFoundException(f"Table not found: {name}") from None


def stored_setting(table: TableDefinition, now: float) -> tuple[int, float] | None:
    """(recovery period in days, enabled since) of the table's stored point-in-time recovery setting, or None.

    UpdateContinuousBackups stores only what its validation accepts; a setting saved otherwise (by an older version
    that stored `RecoveryPeriodInDays: null`) reads as UpdateContinuousBackups would now have saved it: a period
    outside 1..35 is the default, a missing start is now. A read never fails on what was stored."""
    pitr = table.point_in_time_recovery
    if not isinstance(pitr, dict):
        return None
    days = pitr.get("RecoveryPeriodInDays")
    if type(days) is not int or not MIN_RECOVERY_DAYS <= days <= MAX_RECOVERY_DAYS:
        days = DEFAULT_RECOVERY_DAYS
    since = pitr.get("Since")
    if type(since) not in (int, float):
        since = now
    return days, since


def description(table: TableDefinition, now: float) -> dict:
    setting = stored_setting(table, now)
    if setting is None:
        recovery: dict = {"PointInTimeRecoveryStatus": "DISABLED"}
    else:
        days, since = setting
        pitr = {"RecoveryPeriodInDays": days, "Since": since}
        recovery = {
            "PointInTimeRecoveryStatus": "ENABLED",
            "RecoveryPeriodInDays": days,
            "EarliestRestorableDateTime": earliest_restorable(pitr, now),
            "LatestRestorableDateTime": latest_restorable(pitr, now),
        }
    return {"ContinuousBackupsStatus": "ENABLED", "PointInTimeRecoveryDescription": recovery}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table = backed_up_table(engine, request["TableName"])
    return {"ContinuousBackupsDescription": description(table, engine.clock.wall_time())}
