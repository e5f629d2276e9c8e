"""Backups and restores in the engine (engine/backups.py, engine/point_in_time.py), on both stores.

Why: a restore is what an operator relies on after a bad write reached every region, so it must be exact. Point in
time recovery is checked at several instants of a seeded workload on a global table whose replica is also changed
by replicated writes (overwrites and deletes from the other region), against two reconstructions of the source:
the full scans taken as the workload ran, and the table's stream (its change history) folded forward.
"""

from __future__ import annotations

from engine_calls import call, error_of, pk_table
from global_engines import TABLE
from globaltables.engine.engine import Engine
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.replication.messages import Ship, decode, encode
from globaltables.runtime.clock import ManualClock
from globaltables.runtime.rng import Rng

DAY = 86400.0


def ship(source, dest):
    """Every pending record of `TABLE` from source to dest, through the replication codec as a link ships them."""
    for lane in range(source.replica.lanes(TABLE)):
        after = dest.replica.applied_position(source.region, TABLE, lane)
        records = source.replica.local_records(TABLE, lane, after, 10_000)
        if records:
            records = list(decode(encode(Ship(TABLE, lane, 0, after, tuple(records)))).records)
            dest.replica.apply_replicated(source.region, TABLE, lane, records)


def streams(engine, operation, request):
    return engine.handle_streams(operation, request)


def enable_pitr(engine, table=TABLE, days=None):
    spec = {"PointInTimeRecoveryEnabled": True}
    if days is not None:
        spec["RecoveryPeriodInDays"] = days
    call(engine, "UpdateContinuousBackups", {"TableName": table, "PointInTimeRecoverySpecification": spec})


def items_of(engine, table) -> dict[str, dict]:
    out, start = {}, None
    while True:
        request = {"TableName": table, "ConsistentRead": True}
        if start:
            request["ExclusiveStartKey"] = start
        page = call(engine, "Scan", request)
        out.update({item["pk"]["S"]: item for item in page["Items"]})
        start = page.get("LastEvaluatedKey")
        if not start:
            return out


def stream_fold(engine, table, moment: float) -> dict[str, dict]:
    """The table's items at `moment` from its change history: the stream's records up to it, applied in order."""
    arn = call(engine, "DescribeTable", {"TableName": table})["Table"]["LatestStreamArn"]
    shards = streams(engine, "DescribeStream", {"StreamArn": arn})["StreamDescription"]["Shards"]
    state: dict[str, dict] = {}
    records = []
    for shard in shards:
        start = {"StreamArn": arn, "ShardId": shard["ShardId"], "ShardIteratorType": "TRIM_HORIZON"}
        iterator = streams(engine, "GetShardIterator", start)["ShardIterator"]
        while iterator:
            page = streams(engine, "GetRecords", {"ShardIterator": iterator})
            records += page["Records"]
            if not page["Records"]:
                break
            iterator = page.get("NextShardIterator")
    records.sort(key=lambda r: int(r["dynamodb"]["SequenceNumber"]))
    for record in records:
        change = record["dynamodb"]
        if change["ApproximateCreationDateTime"] > moment:
            break
        pk = change["Keys"]["pk"]["S"]
        if record["eventName"] == "REMOVE":
            state.pop(pk, None)
        else:
            state[pk] = change["NewImage"]
    return state


def test_point_in_time_restore_is_exact_at_every_instant_of_a_seeded_workload(regions):
    a, b, clock_a, clock_b = regions
    enable_pitr(a)
    rng = Rng("pitr-workload")
    snapshots: list[tuple[float, dict]] = []
    for step in range(120):
        clock_a.advance(1.0)
        clock_b.advance(1.0)
        writer = a if rng.random() < 0.6 else b
        pk = {"pk": {"S": f"k{rng.randrange(12)}"}}
        roll = rng.random()
        if roll < 0.55:
            call(
                writer,
                "PutItem",
                {"TableName": TABLE, "Item": {**pk, "v": {"N": str(step)}, "by": {"S": writer.region}}},
            )
        elif roll < 0.8:
            call(writer, "UpdateItem", {"TableName": TABLE, "Key": pk, "UpdateExpression": "ADD n :one",
                                        "ExpressionAttributeValues": {":one": {"N": "1"}}})  # fmt: skip
        else:
            call(writer, "DeleteItem", {"TableName": TABLE, "Key": pk})
        if step % 7 == 6:
            ship(b, a)  # replicated overwrites and deletes land in us-east-1
            ship(a, b)
        if step % 30 == 29:
            a.trim_change_log()  # retention runs; the recovery window keeps what it needs
        snapshots.append((clock_a.wall_time(), items_of(a, TABLE)))
    ship(b, a)
    replicated = sum(
        1 for _, items in snapshots for item in items.values() if item.get("by", {}).get("S") == "eu-west-1"
    )
    assert replicated > 0  # the history really holds writes from the other region

    instants = sorted(rng.sample(range(len(snapshots)), 6)) + [0, len(snapshots) - 1]
    for n, index in enumerate(sorted(set(instants))):
        moment, expected = snapshots[index]
        if index < len(snapshots) - 1:
            moment += 0.5  # between two steps: the state after step `index` (the last one is now)
        target = f"Restored-{n}"
        answer = call(a, "RestoreTableToPointInTime", {"SourceTableName": TABLE, "TargetTableName": target,
                                                        "RestoreDateTime": moment})  # fmt: skip
        summary = answer["TableDescription"]["RestoreSummary"]
        assert summary == {"SourceTableArn": a.table_arn(TABLE), "RestoreDateTime": moment, "RestoreInProgress": True}
        restored = items_of(a, target)
        assert restored == expected, f"restore at step {index}"
        assert restored == stream_fold(a, TABLE, moment), f"change history at step {index}"


def test_restore_window_and_its_errors(make_store):
    clock = ManualClock()
    engine = Engine(make_store(), clock)
    create(engine, "Source")
    assert error_of(
        engine, "RestoreTableToPointInTime", pitr_request("Source", "Target1", clock.wall_time())
    ).type_name == ("PointInTimeRecoveryUnavailableException")
    enable_pitr(engine, "Source", days=1)
    start = clock.wall_time()
    put(engine, "Source", "a")
    clock.advance(3 * DAY)
    put(engine, "Source", "b")
    engine.trim_change_log()
    now = clock.wall_time()
    window = call(engine, "DescribeContinuousBackups", {"TableName": "Source"})["ContinuousBackupsDescription"]
    recovery = window["PointInTimeRecoveryDescription"]
    assert (recovery["EarliestRestorableDateTime"], recovery["LatestRestorableDateTime"]) == (now - DAY, now)
    for moment in (start, now - DAY - 1, now + 1):
        error = error_of(engine, "RestoreTableToPointInTime", pitr_request("Source", "Target1", moment))
        assert error.type_name == "InvalidRestoreTimeException"
    call(engine, "RestoreTableToPointInTime", pitr_request("Source", "Target1", now - DAY))
    assert sorted(items_of(engine, "Target1")) == ["a"]
    call(engine, "RestoreTableToPointInTime", {"SourceTableName": "Source", "TargetTableName": "Target2",
                                               "UseLatestRestorableTime": True})  # fmt: skip
    assert sorted(items_of(engine, "Target2")) == ["a", "b"]
    assert error_of(engine, "RestoreTableToPointInTime", pitr_request("Source", "Target2", now)).message == (
        "Table already exists: Target2"
    )
    assert error_of(engine, "RestoreTableToPointInTime", pitr_request("Nope", "Target3", now)).type_name == (
        "TableNotFoundException"
    )
    both = {**pitr_request("Source", "Target3", now), "UseLatestRestorableTime": True}
    assert error_of(engine, "RestoreTableToPointInTime", both).type_name == "ValidationException"
    neither = {"SourceTableName": "Source", "TargetTableName": "Target3"}
    assert error_of(engine, "RestoreTableToPointInTime", neither).type_name == "ValidationException"
    assert "Target3" not in engine.tables
    by_arn = {"SourceTableArn": engine.table_arn("Source"), "TargetTableName": "Target4", "RestoreDateTime": now}
    call(engine, "RestoreTableToPointInTime", by_arn)
    assert sorted(items_of(engine, "Target4")) == ["a", "b"]


def test_retention_keeps_the_recovery_window_and_trims_what_is_older(make_store):
    clock = ManualClock()
    engine = Engine(make_store(), clock, stream_retention_s=3600.0)
    create(engine, "Source")
    enable_pitr(engine, "Source", days=2)
    for n in range(4):
        put(engine, "Source", f"day{n}")
        clock.advance(DAY)
    engine.trim_change_log()
    tid = engine.store.table_id("Source")
    kept = list(engine.change_log.store.read(tid, 0, None, 100))
    assert [r.new["pk"]["S"] for r in kept] == ["day2", "day3"]  # within two days; the rest is trimmed
    call(engine, "RestoreTableToPointInTime", pitr_request("Source", "Back", clock.wall_time() - 2 * DAY + 1))
    assert sorted(items_of(engine, "Back")) == ["day0", "day1", "day2"]


def test_a_restored_global_table_is_a_new_regional_table(regions):
    a, _b, _clock_a, _clock_b = regions
    enable_pitr(a)
    call(a, "PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "x"}}})
    backup = call(a, "CreateBackup", {"TableName": TABLE, "BackupName": "before"})["BackupDetails"]
    for target, operation, request in [
        ("FromBackup", "RestoreTableFromBackup", {"BackupArn": backup["BackupArn"]}),
        ("FromTime", "RestoreTableToPointInTime", {"SourceTableName": TABLE, "UseLatestRestorableTime": True}),
    ]:
        call(a, operation, {**request, "TargetTableName": target})
        table = call(a, "DescribeTable", {"TableName": target})["Table"]
        assert "Replicas" not in table and "GlobalTableVersion" not in table and "StreamSpecification" not in table
        assert a.tables[target].replicas == [] and a.tables[target].point_in_time_recovery is None
        assert table["TableStatus"] == "ACTIVE" and table["RestoreSummary"]["RestoreInProgress"] is False
        assert items_of(a, target) == {"x": {"pk": {"S": "x"}}}
    assert error_of(
        a, "RestoreTableFromBackup", {"BackupArn": backup["BackupArn"], "TargetTableName": TABLE}
    ).type_name == ("TableAlreadyExistsException")


# ---------------------------------------------------------------------------------------------- on-demand backups


def test_backup_lifecycle_filters_and_paging(make_store):
    clock = ManualClock()
    engine = Engine(make_store(), clock)
    create(engine, "Alpha")
    create(engine, "Bravo")
    arns = []
    for n in range(5):
        clock.advance(10)
        table = "Alpha" if n % 2 == 0 else "Bravo"
        put(engine, table, f"item{n}")
        details = call(engine, "CreateBackup", {"TableName": table, "BackupName": f"nightly-{n}"})["BackupDetails"]
        assert details["BackupStatus"] == "CREATING" and details["BackupType"] == "USER"
        assert details["BackupArn"].startswith(engine.table_arn(table) + "/backup/")
        arns.append(details["BackupArn"])
    listed = call(engine, "ListBackups", {})["BackupSummaries"]
    assert [s["BackupArn"] for s in listed] == arns and {s["BackupStatus"] for s in listed} == {"AVAILABLE"}
    alpha = call(engine, "ListBackups", {"TableName": engine.table_arn("Alpha")})["BackupSummaries"]
    assert [s["BackupName"] for s in alpha] == ["nightly-0", "nightly-2", "nightly-4"]
    created = [s["BackupCreationDateTime"] for s in listed]
    ranged = call(engine, "ListBackups", {"TimeRangeLowerBound": created[1], "TimeRangeUpperBound": created[3]})
    assert [s["BackupName"] for s in ranged["BackupSummaries"]] == ["nightly-1", "nightly-2"]
    pages, start = [], None
    while True:
        request = {"Limit": 2, **({"ExclusiveStartBackupArn": start} if start else {})}
        page = call(engine, "ListBackups", request)
        pages.append([s["BackupName"] for s in page["BackupSummaries"]])
        start = page.get("LastEvaluatedBackupArn")
        if start is None:
            break
    assert pages == [["nightly-0", "nightly-1"], ["nightly-2", "nightly-3"], ["nightly-4"]]
    assert call(engine, "ListBackups", {"BackupType": "SYSTEM"})["BackupSummaries"] == []

    described = call(engine, "DescribeBackup", {"BackupArn": arns[2]})["BackupDescription"]
    assert described["BackupDetails"]["BackupStatus"] == "AVAILABLE"
    assert described["SourceTableDetails"]["TableName"] == "Alpha"
    assert described["SourceTableDetails"]["ItemCount"] == 2  # item0 and item2 when it was taken
    deleted = call(engine, "DeleteBackup", {"BackupArn": arns[2]})["BackupDescription"]
    assert deleted["BackupDetails"]["BackupStatus"] == "DELETED"
    for operation in ("DescribeBackup", "DeleteBackup"):
        error = error_of(engine, operation, {"BackupArn": arns[2]})
        assert (error.type_name, error.message) == ("BackupNotFoundException", f"Backup not found: {arns[2]}")
    error = error_of(engine, "CreateBackup", {"TableName": "Nope", "BackupName": "x-1"})
    assert (error.type_name, error.message) == ("TableNotFoundException", "Table not found: Nope")


def test_a_backup_keeps_its_moment_and_outlives_its_table(make_store):
    clock = ManualClock()
    engine = Engine(make_store(), clock)
    create(engine, "Source", with_index=True)
    enable_pitr(engine, "Source")
    put(engine, "Source", "kept", g="blue")
    arn = call(engine, "CreateBackup", {"TableName": "Source", "BackupName": "snap"})["BackupDetails"]["BackupArn"]
    put(engine, "Source", "later", g="blue")
    call(engine, "DeleteItem", {"TableName": "Source", "Key": {"pk": {"S": "kept"}}})
    call(engine, "DeleteTable", {"TableName": "Source"})
    system = call(engine, "ListBackups", {"BackupType": "SYSTEM"})["BackupSummaries"]
    assert [s["BackupName"] for s in system] == ["Source$DeletedTableBackup"]
    assert system[0]["BackupExpiryDateTime"] == system[0]["BackupCreationDateTime"] + 35 * DAY
    call(engine, "RestoreTableFromBackup", {"BackupArn": arn, "TargetTableName": "Again"})
    assert sorted(items_of(engine, "Again")) == ["kept"]
    by_index = call(engine, "Query", {"TableName": "Again", "IndexName": "by-g", "KeyConditionExpression": "g = :g",
                                      "ExpressionAttributeValues": {":g": {"S": "blue"}}})  # fmt: skip
    assert [i["pk"]["S"] for i in by_index["Items"]] == ["kept"]
    call(engine, "RestoreTableFromBackup", {"BackupArn": system[0]["BackupArn"], "TargetTableName": "Deleted"})
    assert sorted(items_of(engine, "Deleted")) == ["later"]


def test_restore_overrides(make_store):
    engine = Engine(make_store(), ManualClock())
    create(engine, "Source", with_index=True)
    put(engine, "Source", "a", g="red")
    arn = call(engine, "CreateBackup", {"TableName": "Source", "BackupName": "snap"})["BackupDetails"]["BackupArn"]
    answer = call(engine, "RestoreTableFromBackup", {
        "BackupArn": arn, "TargetTableName": "Lean", "GlobalSecondaryIndexOverride": [],
        "BillingModeOverride": "PROVISIONED",
        "ProvisionedThroughputOverride": {"ReadCapacityUnits": 7, "WriteCapacityUnits": 3},
    })["TableDescription"]  # fmt: skip
    assert "GlobalSecondaryIndexes" not in answer
    assert answer["AttributeDefinitions"] == [{"AttributeName": "pk", "AttributeType": "S"}]
    assert answer["ProvisionedThroughput"]["ReadCapacityUnits"] == 7
    assert answer["BillingModeSummary"]["BillingMode"] == "PROVISIONED"
    assert answer["RestoreSummary"]["SourceBackupArn"] == arn
    kept = call(engine, "RestoreTableFromBackup", {"BackupArn": arn, "TargetTableName": "Same"})["TableDescription"]
    assert [i["IndexName"] for i in kept["GlobalSecondaryIndexes"]] == ["by-g"]
    assert kept["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    # An on-demand source restored as PROVISIONED needs capacity: CreateTable's own rule, and nothing is created.
    bad = {"BackupArn": arn, "TargetTableName": "Bad", "BillingModeOverride": "PROVISIONED"}
    error = error_of(engine, "RestoreTableFromBackup", bad)
    assert (error.type_name, error.message) == ("ValidationException", (
        "One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified "
        "when BillingMode is PROVISIONED"))  # fmt: skip
    assert "Bad" not in engine.tables


def test_backups_survive_a_restart(tmp_path):
    path = tmp_path / "region.db"
    engine = Engine(SqliteStore(path), ManualClock())
    create(engine, "Source")
    put(engine, "Source", "durable")
    arn = call(engine, "CreateBackup", {"TableName": "Source", "BackupName": "snap"})["BackupDetails"]["BackupArn"]
    engine.store.close()
    reopened = Engine(SqliteStore(path), ManualClock())
    assert (
        call(reopened, "DescribeBackup", {"BackupArn": arn})["BackupDescription"]["BackupDetails"]["BackupName"]
        == "snap"
    )
    call(reopened, "RestoreTableFromBackup", {"BackupArn": arn, "TargetTableName": "Back"})
    assert sorted(items_of(reopened, "Back")) == ["durable"]


# -------------------------------------------------------------------------------------------------- helpers


def create(engine, name, with_index=False):
    request = pk_table(name)
    if with_index:
        request["AttributeDefinitions"].append({"AttributeName": "g", "AttributeType": "S"})
        request["GlobalSecondaryIndexes"] = [
            {"IndexName": "by-g", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
             "Projection": {"ProjectionType": "ALL"}}
        ]  # fmt: skip
    call(engine, "CreateTable", request)
    while engine.background_step():
        pass


def engine_item(pk, g=None):
    return {"pk": {"S": pk}, **({"g": {"S": g}} if g else {})}


def put(engine, table, pk, g=None):
    call(engine, "PutItem", {"TableName": table, "Item": engine_item(pk, g)})


def pitr_request(source, target, moment):
    return {"SourceTableName": source, "TargetTableName": target, "RestoreDateTime": moment}


def test_point_in_time_history_survives_a_restart(tmp_path):
    path = tmp_path / "region.db"
    clock = ManualClock()
    engine = Engine(SqliteStore(path), clock)
    create(engine, "Source")
    enable_pitr(engine, "Source")
    put(engine, "Source", "first")
    clock.advance(10)
    moment = clock.wall_time()
    clock.advance(10)
    call(engine, "DeleteItem", {"TableName": "Source", "Key": {"pk": {"S": "first"}}})
    put(engine, "Source", "second")
    engine.store.close()
    reopened = Engine(SqliteStore(path), clock)
    put(reopened, "Source", "third")
    call(reopened, "RestoreTableToPointInTime", pitr_request("Source", "Before", moment))
    assert sorted(items_of(reopened, "Before")) == ["first"]


def test_a_restored_strong_table_is_a_new_regional_table(make_store):
    from globaltables.engine.strong import make_strong

    engine = Engine(make_store(), ManualClock())
    create(engine, "Strong")
    make_strong(engine, "Strong", ["us-east-1", "us-east-2", "us-west-2"], None)
    enable_pitr(engine, "Strong")
    arn = call(engine, "CreateBackup", {"TableName": "Strong", "BackupName": "snap"})["BackupDetails"]["BackupArn"]
    call(engine, "RestoreTableFromBackup", {"BackupArn": arn, "TargetTableName": "Plain"})
    call(engine, "RestoreTableToPointInTime", {"SourceTableName": "Strong", "TargetTableName": "PlainToo",
                                               "UseLatestRestorableTime": True})  # fmt: skip
    for name in ("Plain", "PlainToo"):
        table = call(engine, "DescribeTable", {"TableName": name})["Table"]
        assert "MultiRegionConsistency" not in table and "Replicas" not in table
        assert engine.tables[name].strong is None


def test_restore_keeps_or_drops_local_secondary_indexes(make_store):
    engine = Engine(make_store(), ManualClock())
    call(engine, "CreateTable", {
        "TableName": "Orders",
        "AttributeDefinitions": [{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "day")],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "LocalSecondaryIndexes": [{"IndexName": "by-day", "Projection": {"ProjectionType": "KEYS_ONLY"},
                                   "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                                                 {"AttributeName": "day", "KeyType": "RANGE"}]}],
        "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    call(engine, "PutItem", {"TableName": "Orders", "Item": {"pk": {"S": "c"}, "sk": {"S": "1"}, "day": {"S": "mon"}}})
    arn = call(engine, "CreateBackup", {"TableName": "Orders", "BackupName": "snap"})["BackupDetails"]["BackupArn"]
    kept = call(engine, "RestoreTableFromBackup", {"BackupArn": arn, "TargetTableName": "Kept"})["TableDescription"]
    assert [index["IndexName"] for index in kept["LocalSecondaryIndexes"]] == ["by-day"]
    query = {"TableName": "Kept", "IndexName": "by-day", "KeyConditionExpression": "pk = :c AND #d = :d",
             "ExpressionAttributeNames": {"#d": "day"},
             "ExpressionAttributeValues": {":c": {"S": "c"}, ":d": {"S": "mon"}}}  # fmt: skip
    assert call(engine, "Query", query)["Count"] == 1
    request = {"BackupArn": arn, "TargetTableName": "Dropped", "LocalSecondaryIndexOverride": []}
    dropped = call(engine, "RestoreTableFromBackup", request)["TableDescription"]
    assert "LocalSecondaryIndexes" not in dropped
    assert [d["AttributeName"] for d in dropped["AttributeDefinitions"]] == ["pk", "sk"]
