"""CreateBackup: a full, durable copy of a table's items and definition now (engine/backups.py).

The table may be named by its ARN. A table that does not exist is TableNotFoundException; one that is not ACTIVE
(a replica still loading) is TableInUseException. The answer's BackupStatus is CREATING, as DynamoDB answers.
"""

from __future__ import annotations

from .. import backups
from ..errors import ResourceNotFoundException, TableNotFoundException
from ..validation import Str, check_request

FIELDS = {
    "TableName": Str(required=True, min_length=1, max_length=1024),
    "BackupName": Str(required=True, min_length=3, max_length=255, pattern="[a-zA-Z0-9_.-]+"),
}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    name = request["TableName"]
    try:
        table = engine.table(name, describe=True)
    except ResourceNotFoundException:
        raise TableNotFoundException(f"Table not found: {name}") from None
    if table.status != "ACTIVE":
        raise backups.TableInUseException(f"Table is being created or updated: {name}")
    record = backups.create(engine, table, request["BackupName"])
    return {"BackupDetails": backups.details(record, "CREATING")}
