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


def backed_up_table(engine, name: str) -> TableDefinition:
    try:
        return engine.table(name, describe=True)
    except ResourceNotFoundException:
        raise TableNotFoundException(f"Table not found: {name}") from None


def description(table: TableDefinition, now: float) -> dict:
    pitr = table.point_in_time_recovery
    if pitr is None:
        recovery: dict = {"PointInTimeRecoveryStatus": "DISABLED"}
    else:
        recovery = {
            "PointInTimeRecoveryStatus": "ENABLED",
            "RecoveryPeriodInDays": pitr["RecoveryPeriodInDays"],
            "EarliestRestorableDateTime": earliest_restorable(pitr, now),
            "LatestRestorableDateTime": latest_restorable(pitr, now),
        }
    return {"ContinuousBackupsStatus": "ENABLED", "PointInTimeRecoveryDescription": recovery}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table = backed_up_table(engine, request["TableName"])
    return {"ContinuousBackupsDescription": description(table, engine.clock.wall_time())}
