"""The engine's side of MREC replication (engine/replica.py): versions, tombstones, LWW apply and positions.

Two engines stand for two regions; records are shipped by hand through the ReplicaPort, so each rule of
docs/replication.md is checked without any network.
"""


from global_engines import REGIONS, TABLE
from global_engines import global_engine as make_region
from globaltables.engine.engine import Engine
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.replication.hlc import HybridLogicalClock, Version
from globaltables.replication.messages import Ship, decode, encode
from globaltables.replication.versions import HlcVersionSource
from globaltables.runtime.clock import ManualClock


def key(k):
    return {"pk": {"S": k}}


def put(engine, k, value, **extra):
    return engine.execute("PutItem", {"TableName": TABLE, "Item": {**key(k), "v": {"S": value}}, **extra}).version


def get(engine, k):
    return engine.handle("GetItem", {"TableName": TABLE, "Key": key(k)}).get("Item")


def version_read(engine, k):
    """The version a GetItem of the item reports."""
    return engine.execute("GetItem", {"TableName": TABLE, "Key": key(k)}).version


def ship(source, dest):
    """Every pending record of every lane from source to dest, through the replication codec as a link ships them;
    the applied positions after."""
    positions = {}
    for lane in range(source.replica.lanes(TABLE)):
        after = dest.replica.applied_position(source.region, TABLE, lane)
        records = wire(source.replica.local_records(TABLE, lane, after, 10_000), lane, after)
        positions[lane], _won = dest.replica.apply_replicated(source.region, TABLE, lane, records)
    return positions


def wire(records, lane, after):
    """Records as a peer receives them: encoded as a link ships them, then decoded."""
    return list(decode(encode(Ship(TABLE, lane, 0, after, tuple(records)))).records) if records else []


def test_a_write_replicates_with_its_version(regions):
    a, b, *_ = regions
    version = put(a, "o-1", "first")
    assert version is not None and Version.parse(version).region == "us-east-1"
    ship(a, b)
    assert get(b, "o-1") == {**key("o-1"), "v": {"S": "first"}}
    # The origin's item size travels with the record: both regions count the same bytes.
    assert b.store.table_stats(TABLE) == a.store.table_stats(TABLE) == (1, 11)
    assert version_read(b, "o-1") == version
    described = b.handle("DescribeTable", {"TableName": TABLE})["Table"]
    assert described["GlobalTableVersion"] == "2019.11.21"
    assert [r["RegionName"] for r in described["Replicas"]] == REGIONS


def test_concurrent_writes_converge_on_the_greater_version(regions):
    a, b, clock_a, clock_b = regions
    version_a = put(a, "o-2", "from-a")
    version_b = put(b, "o-2", "from-b")
    ship(a, b)
    ship(b, a)
    winner = "from-a" if version_a > version_b else "from-b"
    assert get(a, "o-2")["v"]["S"] == get(b, "o-2")["v"]["S"] == winner


def test_a_write_that_saw_another_wins_whatever_the_clocks_say(regions):
    a, b, clock_a, clock_b = regions
    clock_a.advance(5)  # a's clock runs five seconds ahead
    put(a, "o-3", "early")
    ship(a, b)
    later = put(b, "o-3", "later")  # b has seen a's write: its stamp must exceed a's
    ship(b, a)
    assert get(a, "o-3")["v"]["S"] == "later"
    assert version_read(a, "o-3") == later


def test_delete_leaves_a_tombstone_that_stops_an_older_write(regions):
    a, b, *_ = regions
    put(b, "o-4", "old")  # an older write, still in flight to a
    put(a, "o-4", "newer")
    a.handle("DeleteItem", {"TableName": TABLE, "Key": key("o-4")})
    ship(b, a)  # b's older put arrives after the delete: it must not resurrect the item
    assert get(a, "o-4") is None
    ship(a, b)
    assert get(b, "o-4") is None
    assert a.handle("Scan", {"TableName": TABLE})["Count"] == 0  # tombstones are invisible
    # A put-if-absent sees the tombstoned key as absent.
    a.handle(
        "PutItem",
        {
            "TableName": TABLE,
            "Item": {**key("o-4"), "v": {"S": "again"}},
            "ConditionExpression": "attribute_not_exists(pk)",
        },
    )
    ship(a, b)
    assert get(b, "o-4")["v"]["S"] == "again"


def test_applying_twice_changes_nothing(regions):
    a, b, *_ = regions
    for i in range(20):
        put(a, f"k{i}", str(i))
    first = ship(a, b)
    stream_arn = b.handle("DescribeTable", {"TableName": TABLE})["Table"]["LatestStreamArn"]
    records_before = stream_records(b, stream_arn)
    for lane in range(a.replica.lanes(TABLE)):
        records = wire(a.replica.local_records(TABLE, lane, 0, 10_000), lane, 0)
        applied, won = b.replica.apply_replicated(a.region, TABLE, lane, records)
        assert applied == first[lane] and won == []
    assert stream_records(b, stream_arn) == records_before
    assert len(records_before) == 20


def stream_records(engine, arn):
    shard = engine.handle_streams("DescribeStream", {"StreamArn": arn})["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = engine.handle_streams(
        "GetShardIterator", {"StreamArn": arn, "ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}
    )["ShardIterator"]
    return engine.handle_streams("GetRecords", {"ShardIterator": iterator})["Records"]


def test_a_losing_version_leaves_no_stream_record(regions):
    a, b, *_ = regions
    put(a, "o-5", "loses")
    put(b, "o-5", "wins")  # b's clock equals a's, but b's write comes later in HLC order? make sure by receive rule
    ship(b, a)
    ship(a, b)
    winner = get(a, "o-5")
    assert winner == get(b, "o-5")
    arn = b.handle("DescribeTable", {"TableName": TABLE})["Table"]["LatestStreamArn"]
    events = [r["dynamodb"]["NewImage"]["v"]["S"] for r in stream_records(b, arn)]
    if winner["v"]["S"] == "wins":
        assert events == ["wins"]  # a's older version arrived and lost: no record
    else:
        assert events == ["wins", "loses"]


def test_unchanged_write_keeps_its_version_and_ships_nothing(regions):
    a, b, *_ = regions
    first = put(a, "o-6", "same")
    second = put(a, "o-6", "same")
    assert second == first
    lane_records = [a.replica.local_records(TABLE, lane, 0, 100) for lane in range(a.replica.lanes(TABLE))]
    assert sum(len(r) for r in lane_records) == 1


def test_wall_clock_write_behind_the_stored_version_loses_everywhere(make_store):
    (a, clock_a) = make_region("us-east-1", mode="wall", store=make_store())
    (b, clock_b) = make_region("eu-west-1", offset_s=-2, mode="wall", store=make_store())
    put(a, "o-7", "a-first")
    ship(a, b)
    # b's clock is two seconds behind: its later write gets a smaller stamp, is acknowledged, and loses at b too.
    version_b = put(b, "o-7", "b-later")
    assert version_b is not None
    assert get(b, "o-7")["v"]["S"] == "a-first"
    ship(b, a)
    assert get(a, "o-7")["v"]["S"] == "a-first"


def test_log_is_kept_until_every_peer_acknowledges(regions):
    a, b, clock_a, _ = regions
    for i in range(8):
        put(a, f"t{i}", "x")
    clock_a.advance(3 * 24 * 3600)  # far beyond stream retention
    assert a.trim_change_log() == 0  # b has acknowledged nothing: every record stays
    positions = ship(a, b)
    for lane, pos in positions.items():
        a.replica.save_acked(b.region, TABLE, lane, pos)
    assert a.trim_change_log() == 8
    assert all(a.replica.log_start(TABLE, lane) > 1 for lane in positions if positions[lane])


def test_positions_survive_a_restart(tmp_path):
    path = tmp_path / "region.db"
    a, _ = make_region("us-east-1")
    put(a, "r-1", "x")
    b, clock = make_region("eu-west-1", store=SqliteStore(path))
    positions = ship(a, b)
    b.store.close()
    reopened = Engine(SqliteStore(path), clock, region="eu-west-1", versions=b.versions)
    for lane, pos in positions.items():
        assert reopened.replica.applied_position("us-east-1", TABLE, lane) == pos
    assert reopened.handle("GetItem", {"TableName": TABLE, "Key": key("r-1")})["Item"]["v"] == {"S": "x"}


def test_a_restarted_region_stamps_above_everything_it_holds(tmp_path):
    path = tmp_path / "region.db"
    engine, _ahead = make_region("us-east-1", offset_s=100, store=SqliteStore(path))
    before = put(engine, "f-1", "written while the clock ran ahead")
    engine.store.close()
    behind = ManualClock(wall_time=1_700_000_000.0)  # after the restart the wall clock is 100 s earlier
    restarted = Engine(
        SqliteStore(path),
        behind,
        region="us-east-1",
        versions=HlcVersionSource(HybridLogicalClock(behind, max_offset_ms=500), "us-east-1"),
    )
    after = put(restarted, "f-2", "a different item")
    assert after > before


def test_a_replicated_ttl_deletion_applies_only_where_the_item_has_expired(regions):
    a, b, clock_a, clock_b = regions
    for engine in (a, b):
        engine.handle(
            "UpdateTimeToLive",
            {"TableName": TABLE, "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "expires"}},
        )
    past = str(int(clock_a.wall_time()) - 10)
    for k in ("ttl-still-expired", "ttl-extended"):
        a.handle("PutItem", {"TableName": TABLE, "Item": {**key(k), "expires": {"N": past}}})
    ship(a, b)
    # b extends one item's expiry; the update has not reached a when a's sweeper deletes both.
    future = str(int(clock_b.wall_time()) + 3600)
    b.handle(
        "UpdateItem",
        {
            "TableName": TABLE,
            "Key": key("ttl-extended"),
            "UpdateExpression": "SET expires = :f",
            "ExpressionAttributeValues": {":f": {"N": future}},
        },
    )
    clock_a.advance(1)
    assert a.sweep_expired(100) == 2
    ship(a, b)
    assert get(b, "ttl-still-expired") is None
    assert get(b, "ttl-extended")["expires"] == {"N": future}
    ship(b, a)  # b re-wrote the item above a's TTL tombstone: a takes it back, and both regions agree
    assert get(a, "ttl-extended") == get(b, "ttl-extended")
    assert get(a, "ttl-extended")["expires"] == {"N": future}
    assert get(a, "ttl-still-expired") is None


def test_tombstones_are_purged_after_their_retention(regions):
    a, b, clock_a, _ = regions
    put(a, "gone", "x")
    a.handle("DeleteItem", {"TableName": TABLE, "Key": key("gone")})
    assert a.store.get_record(TABLE, *a.tables[TABLE].key.encode(key("gone")))[1] is not None
    clock_a.advance(a.tombstone_retention_s - 1)
    a.trim_change_log()
    assert a.store.get_record(TABLE, *a.tables[TABLE].key.encode(key("gone")))[2] is True  # still kept
    clock_a.advance(2)
    a.trim_change_log()
    assert a.store.get_record(TABLE, *a.tables[TABLE].key.encode(key("gone"))) == (None, None, False)


def modelled_region(name, offset_s=0.0):
    """Region `name` with modelled capacity (its on-demand table draws write units for replicated records)."""
    clock = ManualClock(wall_time=1_700_000_000.0 + offset_s)
    engine = Engine(
        SqliteStore(None), clock, region=name, versions=HlcVersionSource(HybridLogicalClock(clock, 500), name),
        capacity="modelled",
    )  # fmt: skip
    engine.handle("CreateTable", {
        "TableName": TABLE, "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    engine.replica.make_global(TABLE, REGIONS)
    return engine, clock


def test_a_batch_read_ahead_in_chunks_decides_as_one_read_would():
    """Short of capacity, apply_replicated reads the stored records a chunk at a time: keys written again later in
    the batch, across chunks, and keys a newer local write holds, end as with unlimited capacity (one read), and
    every change replaces the image the batch's earlier records left (the stream's old images)."""
    source, _ = make_region(REGIONS[1])
    lane = 0
    for n in range(1200):
        put(source, f"k{n}", f"first-{n}")
    before = wire(source.replica.local_records(TABLE, lane, 0, 10_000), lane, 0)
    for round_ in range(3):  # keys written three times: a lane's batch holds each key once per ~300 records
        for n in range(1200):
            put(source, f"k{n}", f"{round_}-{n}")
    records = wire(source.replica.local_records(TABLE, lane, before[-1].pos, 10_000), lane, before[-1].pos)
    assert len(records) > 2 * 256
    outcomes = []
    for capacity in ("modelled", "unlimited"):
        dest, _ = modelled_region(REGIONS[0], offset_s=3600.0)
        if capacity == "unlimited":
            dest.throughput = None
        dest.replica.apply_replicated(source.region, TABLE, lane, before)  # every key is held here already
        for n in range(0, 1200, 7):  # newer here: every replicated record of these keys loses
            put(dest, f"k{n}", "local")
        applied, won = dest.replica.apply_replicated(source.region, TABLE, lane, records)
        items = dest.handle("Scan", {"TableName": TABLE})["Items"]
        log = dest.change_log.store.read(dest.store.table_id(TABLE), 0, None, 100_000)
        changes = [(record.old, record.new) for record in log]
        outcomes.append((applied, len(won), sorted((i["pk"]["S"], i["v"]["S"]) for i in items), changes))
    assert outcomes[0] == outcomes[1]
    applied, won, items, changes = outcomes[0]
    assert applied == records[-1].pos and 0 < won < len(records)
    values = {value.split("-")[0] for _key, value in items}
    assert values == {"local", "2"}  # the newer local writes, and the last round of every other key
    assert any(old["v"]["S"].startswith("0-") and new["v"]["S"].startswith("1-") for old, new in changes if old)
