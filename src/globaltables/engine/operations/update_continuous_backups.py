"""UpdateContinuousBackups: turn point-in-time recovery on (with a recovery period of 1 to 35 days, 35 by default)
or off; the answer is the new ContinuousBackupsDescription (describe_continuous_backups.py). Turning it on again
with another period keeps the window already covered. The request is validated completely before anything is
saved (`RecoveryPeriodInDays: null` is an absent period: the default)."""

from __future__ import annotations

from ..schema import TableDefinition
from ..validation import Bool, Int, Struct, TableNameField, check_request
from .describe_continuous_backups import (
    DEFAULT_RECOVERY_DAYS,
    MAX_RECOVERY_DAYS,
    MIN_RECOVERY_DAYS,
    backed_up_table,
    description,
    stored_setting,
)

FIELDS = {
    "TableName": TableNameField(),
    "PointInTimeRecoverySpecification": Struct(
        {
            "PointInTimeRecoveryEnabled": Bool(required=True),
            "RecoveryPeriodInDays": Int(minimum=MIN_RECOVERY_DAYS, maximum=MAX_RECOVERY_DAYS),
        },
        required=True,
    ),
}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    specification = request["PointInTimeRecoverySpecification"]
    table = backed_up_table(engine, request["TableName"])
    now = engine.clock.wall_time()
    new = TableDefinition.from_dict(table.to_dict())
    if specification["PointInTimeRecoveryEnabled"]:
        current = stored_setting(table, now)
        since = current[1] if current is not None else now
        days = specification.get("RecoveryPeriodInDays", DEFAULT_RECOVERY_DAYS)  # a null member was removed
        new.point_in_time_recovery = {"RecoveryPeriodInDays": days, "Since": since}
    else:
        new.point_in_time_recovery = None
    engine.save_table(new)
    return {"ContinuousBackupsDescription": description(new, now)}
