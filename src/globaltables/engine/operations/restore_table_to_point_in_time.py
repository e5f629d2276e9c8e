"""RestoreTableToPointInTime: a new table in this region holding the source's items at an instant of its
point-in-time recovery window (engine/point_in_time.py; the new table's rules in engine/backups.py).

The source is named by `SourceTableName` or `SourceTableArn`; the instant by `RestoreDateTime` (epoch seconds) or
`UseLatestRestorableTime`. A source that does not exist is TableNotFoundException, one without point-in-time
recovery PointInTimeRecoveryUnavailableException, an instant outside [EarliestRestorableDateTime,
LatestRestorableDateTime] InvalidRestoreTimeException; each changes nothing.
"""

from __future__ import annotations

from .. import backups, point_in_time
from ..errors import ResourceNotFoundException, TableNotFoundException, validation
from ..table_arns import TABLE_ARN
from ..table_description import epoch
from ..validation import AnyValue, Bool, Str, TableNameField, check_request
from .restore_fields import RESTORE_OVERRIDES, TARGET_TABLE_NAME

FIELDS = {
    "SourceTableArn": Str(min_length=1, max_length=1024),
    "SourceTableName": TableNameField(required=False),
    "TargetTableName": TARGET_TABLE_NAME,
    "UseLatestRestorableTime": Bool(),
    "RestoreDateTime": AnyValue(),
    **RESTORE_OVERRIDES,
}


def source_name(engine, request: dict) -> str:
    name, arn = request.get("SourceTableName"), request.get("SourceTableArn")
    if name is None and arn is None:
        raise validation("Either SourceTableArn or SourceTableName must be specified")
    if name is not None and arn is not None:
        raise validation("Only one of SourceTableArn or SourceTableName can be specified")
    if arn is not None:
        matched = TABLE_ARN.fullmatch(arn)
        if matched is None or matched.group(1) != engine.region or matched.group(2) != engine.account:
            raise TableNotFoundException(f"Table not found: {arn}")
        return matched.group(3)
    return name


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    name = source_name(engine, request)
    latest = request.get("UseLatestRestorableTime") is True
    moment = request.get("RestoreDateTime")
    if latest and moment is not None:
        raise validation("Only one of RestoreDateTime or UseLatestRestorableTime can be specified")
    if moment is not None and (isinstance(moment, bool) or not isinstance(moment, (int, float))):
        raise validation("Invalid RestoreDateTime: expected a timestamp (epoch seconds)")
    if not latest and moment is None:
        raise validation("Either RestoreDateTime or UseLatestRestorableTime must be specified")
    try:
        source = engine.table(name, describe=True)
    except ResourceNotFoundException:
        raise TableNotFoundException(f"Table not found: {name}") from None
    pitr = source.point_in_time_recovery
    if pitr is None:
        raise backups.PointInTimeRecoveryUnavailableException(
            f"Point in time recovery is not enabled for table '{name}'"
        )
    now = engine.clock.wall_time()
    earliest, last = point_in_time.earliest_restorable(pitr, now), point_in_time.latest_restorable(pitr, now)
    moment = last if latest else float(moment)
    if not earliest <= moment <= last:
        raise backups.InvalidRestoreTimeException(
            "An invalid restore time was specified. RestoreDateTime must be between EarliestRestorableDateTime and "
            "LatestRestorableDateTime."
        )
    if request["TargetTableName"] in engine.tables:
        raise backups.TableAlreadyExistsException(f"Table already exists: {request['TargetTableName']}")
    items = point_in_time.items_at(engine, source, moment)
    summary = {"SourceTableArn": source.arn, "RestoreDateTime": epoch(moment)}
    return backups.restore(engine, source, items, request, summary)
