"""DescribeBackup: a backup's details, its source table at backup time and that table's features (backups.py)."""

from __future__ import annotations

from .. import backups
from ..validation import Str, check_request

FIELDS = {"BackupArn": Str(required=True, min_length=37, max_length=1024)}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    return {"BackupDescription": backups.description(backups.found(engine, request["BackupArn"]))}
