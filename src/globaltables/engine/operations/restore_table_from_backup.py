"""RestoreTableFromBackup: a new table in this region holding a backup's items (rules in engine/backups.py).

RestoreSummary.RestoreDateTime is the backup's creation time ("Point in time or source backup time").
"""

from __future__ import annotations

from .. import backups
from ..schema import TableDefinition
from ..validation import Str, check_request
from .restore_fields import RESTORE_OVERRIDES, TARGET_TABLE_NAME

FIELDS = {
    "TargetTableName": TARGET_TABLE_NAME,
    "BackupArn": Str(required=True, min_length=37, max_length=1024),
    **RESTORE_OVERRIDES,
}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    record = backups.found(engine, request["BackupArn"])
    source = TableDefinition.from_dict(record["Definition"])
    summary = {
        "SourceBackupArn": record["BackupArn"],
        "SourceTableArn": source.arn,
        "RestoreDateTime": record["BackupCreationDateTime"],
    }
    items = engine.store.backup_store().items(record["BackupArn"])
    return backups.restore(engine, source, items, request, summary)
