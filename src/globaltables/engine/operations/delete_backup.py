"""DeleteBackup: remove a backup and its items; the answer describes it with BackupStatus DELETED."""

from __future__ import annotations

from .. import backups
from ..validation import Str, check_request

FIELDS = {"BackupArn": Str(required=True, min_length=37, max_length=1024)}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    record = backups.found(engine, request["BackupArn"])
    engine.store.backup_store().delete(record["BackupArn"])
    return {"BackupDescription": backups.description(record, "DELETED")}
