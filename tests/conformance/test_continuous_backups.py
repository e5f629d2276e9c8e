"""DescribeContinuousBackups and UpdateContinuousBackups through boto3 against a real region process: continuous
backups always ENABLED, point-in-time recovery kept and described with its restorable window (restores themselves:
test_backups.py), TableNotFoundException for a table that does not exist, and the recovery period's limits."""

import datetime

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from conformance.tables import create_pk_table

NO_CLIENT_VALIDATION = Config(retries={"total_max_attempts": 1}, parameter_validation=False)


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    return create_pk_table(dynamodb, unique_table_name("Pitr"))


def test_point_in_time_recovery_is_off_until_turned_on_and_then_described(dynamodb, table):
    described = dynamodb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    assert described == {
        "ContinuousBackupsStatus": "ENABLED",
        "PointInTimeRecoveryDescription": {"PointInTimeRecoveryStatus": "DISABLED"},
    }
    updated = dynamodb.update_continuous_backups(
        TableName=table,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 7},
    )["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
    assert updated["PointInTimeRecoveryStatus"] == "ENABLED" and updated["RecoveryPeriodInDays"] == 7
    described = dynamodb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    recovery = described["PointInTimeRecoveryDescription"]
    assert recovery["PointInTimeRecoveryStatus"] == "ENABLED" and recovery["RecoveryPeriodInDays"] == 7
    assert isinstance(recovery["EarliestRestorableDateTime"], datetime.datetime)
    assert recovery["EarliestRestorableDateTime"] <= recovery["LatestRestorableDateTime"]
    dynamodb.update_continuous_backups(
        TableName=table, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False}
    )
    recovery = dynamodb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    assert recovery["PointInTimeRecoveryDescription"] == {"PointInTimeRecoveryStatus": "DISABLED"}


def test_a_missing_table_is_table_not_found(dynamodb, unique_table_name):
    with pytest.raises(ClientError) as caught:
        dynamodb.describe_continuous_backups(TableName=unique_table_name("Missing"))
    assert caught.value.response["Error"]["Code"] == "TableNotFoundException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


@pytest.mark.parametrize("days", [0, 36])
def test_the_recovery_period_is_one_to_thirty_five_days(client_factory, table, days):
    unchecked = client_factory(config=NO_CLIENT_VALIDATION)  # boto3 would refuse 0 itself
    with pytest.raises(ClientError) as caught:
        unchecked.update_continuous_backups(
            TableName=table,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": days},
        )
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert "recoveryPeriodInDays" in caught.value.response["Error"]["Message"]
