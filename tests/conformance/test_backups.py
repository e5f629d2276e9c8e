"""Backups and point-in-time restore through boto3 and the aws CLI against a region process.

Why: an operator restores with the tools they have (the console, the aws CLI, an SDK), and DynamoDB documents what
each operation answers: backups listed and described with their ARNs and statuses, a restored table with its
RestoreSummary, a point-in-time restore holding exactly the items of that instant (API reference,
RestoreTableToPointInTime: "restores your table data to the state based on the selected date and time").
"""

from __future__ import annotations

import datetime
import time

import pytest
from botocore.exceptions import ClientError

from conformance.aws_cli import aws_cli
from conformance.tables import create_pk_table


def items(dynamodb, table: str) -> dict[str, dict]:
    return {item["pk"]["S"]: item for item in dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]}


def next_second() -> float:
    """The next whole second, once the clock has passed it: every write acknowledged so far is older, every later
    write newer. Restore times are whole seconds (DynamoDB restores "to the state based on the selected date and
    time (day:hour:minute:second)", and SDKs send timestamps in seconds)."""
    moment = float(int(time.time()) + 1)
    while time.time() <= moment:
        time.sleep(moment - time.time() + 0.001)
    return moment


def test_point_in_time_restores_with_the_aws_cli(dynamodb, region_endpoint, unique_table_name, tmp_path):
    source = unique_table_name("pitr")
    create_pk_table(dynamodb, source)
    aws_cli(region_endpoint, tmp_path, "update-continuous-backups", "--table-name", source,
        "--point-in-time-recovery-specification", "PointInTimeRecoveryEnabled=true")  # fmt: skip
    states = []
    for step in range(4):
        dynamodb.put_item(TableName=source, Item={"pk": {"S": f"k{step}"}, "v": {"N": str(step)}})
        if step:
            dynamodb.put_item(TableName=source, Item={"pk": {"S": "k0"}, "v": {"N": str(100 + step)}})  # overwritten
        if step == 2:
            dynamodb.delete_item(TableName=source, Key={"pk": {"S": "k1"}})  # deleted later
        states.append((next_second(), items(dynamodb, source)))
    for n, (moment, expected) in enumerate(states):
        target = f"{source}-at-{n}"
        when = datetime.datetime.fromtimestamp(moment, datetime.UTC).isoformat()
        answer = aws_cli(region_endpoint, tmp_path, "restore-table-to-point-in-time", "--source-table-name", source,
                     "--target-table-name", target, "--restore-date-time", when)  # fmt: skip
        summary = answer["TableDescription"]["RestoreSummary"]
        assert summary["SourceTableArn"].endswith(f":table/{source}") and summary["RestoreInProgress"] is True
        dynamodb.get_waiter("table_exists").wait(TableName=target)
        assert items(dynamodb, target) == expected, f"restore {n}"
    latest = aws_cli(region_endpoint, tmp_path, "restore-table-to-point-in-time", "--source-table-name", source,
                 "--target-table-name", f"{source}-latest", "--use-latest-restorable-time")  # fmt: skip
    assert latest["TableDescription"]["TableName"] == f"{source}-latest"
    assert items(dynamodb, f"{source}-latest") == items(dynamodb, source)
    described = dynamodb.describe_table(TableName=f"{source}-at-1")["Table"]
    assert described["RestoreSummary"]["RestoreInProgress"] is False and described["TableStatus"] == "ACTIVE"


def test_backups_with_the_aws_cli(dynamodb, region_endpoint, unique_table_name, tmp_path):
    source = unique_table_name("bak")
    create_pk_table(dynamodb, source)
    dynamodb.put_item(TableName=source, Item={"pk": {"S": "before"}})
    created = aws_cli(region_endpoint, tmp_path, "create-backup", "--table-name", source, "--backup-name", "nightly")
    arn = created["BackupDetails"]["BackupArn"]
    assert arn.startswith(dynamodb.describe_table(TableName=source)["Table"]["TableArn"] + "/backup/")
    dynamodb.put_item(TableName=source, Item={"pk": {"S": "after"}})
    listed = aws_cli(region_endpoint, tmp_path, "list-backups", "--table-name", source)["BackupSummaries"]
    assert [(s["BackupArn"], s["BackupName"], s["BackupStatus"], s["BackupType"]) for s in listed] == [
        (arn, "nightly", "AVAILABLE", "USER")
    ]
    described = aws_cli(region_endpoint, tmp_path, "describe-backup", "--backup-arn", arn)["BackupDescription"]
    assert described["SourceTableDetails"]["TableName"] == source
    assert described["SourceTableDetails"]["ItemCount"] == 1
    target = f"{source}-restored"
    restored = aws_cli(region_endpoint, tmp_path, "restore-table-from-backup", "--target-table-name", target,
                   "--backup-arn", arn)["TableDescription"]  # fmt: skip
    assert restored["RestoreSummary"]["SourceBackupArn"] == arn
    dynamodb.get_waiter("table_exists").wait(TableName=target)
    assert list(items(dynamodb, target)) == ["before"]
    deleted = aws_cli(region_endpoint, tmp_path, "delete-backup", "--backup-arn", arn)["BackupDescription"]
    assert deleted["BackupDetails"]["BackupStatus"] == "DELETED"
    assert aws_cli(region_endpoint, tmp_path, "list-backups", "--table-name", source)["BackupSummaries"] == []


def test_restore_errors_change_nothing(dynamodb, unique_table_name):
    source = unique_table_name("err")
    create_pk_table(dynamodb, source)
    with pytest.raises(ClientError) as caught:
        dynamodb.restore_table_to_point_in_time(
            SourceTableName=source, TargetTableName=f"{source}-x", UseLatestRestorableTime=True
        )
    assert caught.value.response["Error"]["Code"] == "PointInTimeRecoveryUnavailableException"
    dynamodb.update_continuous_backups(
        TableName=source, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
    )
    with pytest.raises(ClientError) as caught:
        dynamodb.restore_table_to_point_in_time(
            SourceTableName=source, TargetTableName=f"{source}-x", RestoreDateTime=datetime.datetime(2020, 1, 1)
        )
    assert caught.value.response["Error"]["Code"] == "InvalidRestoreTimeException"
    with pytest.raises(ClientError) as caught:
        dynamodb.restore_table_to_point_in_time(
            SourceTableName=source, TargetTableName=source, UseLatestRestorableTime=True
        )
    assert caught.value.response["Error"] == {
        "Code": "TableAlreadyExistsException",
        "Message": f"Table already exists: {source}",
    }
    with pytest.raises(ClientError) as caught:
        dynamodb.describe_backup(BackupArn=f"arn:aws:dynamodb:us-east-1:000000000000:table/{source}/backup/0-00000000")
    assert caught.value.response["Error"]["Code"] == "BackupNotFoundException"
    assert f"{source}-x" not in dynamodb.list_tables()["TableNames"]
