"""Engine.commit as a pipeline (engine/engine.py): stamp, then items + indexes + change log in one transaction,
then the after-commit listeners with the CommitResult; and Engine.execute's Answer.

Why these matter: replication learns of local commits only through the listener (replication/hosted.py), so a
listener told of a write that did not commit would ship nothing, and one not told of a write that did would leave
it unshipped until some unrelated trigger."""

from __future__ import annotations

import pytest

from global_engines import TABLE, global_engine
from globaltables.engine.errors import ConditionalCheckFailedException, ValidationException
from globaltables.engine.storage.records import ItemWrite
from globaltables.replication.messages import Ship, decode, encode


def key(k: str) -> dict:
    return {"pk": {"S": k}}


def put_request(k: str, value: str, **extra) -> dict:
    return {"TableName": TABLE, "Item": {**key(k), "v": {"S": value}}, **extra}


def listen(engine) -> list:
    heard: list = []
    engine.add_commit_listener(heard.append)
    return heard


def test_a_listener_hears_of_a_write_after_its_transaction_committed():
    engine, _clock = global_engine("us-east-1")
    seen_inside: list = []

    def listener(result) -> None:
        # Step 3 runs after the commit: the item and its change-log record are already durable.
        write = result.writes[0]
        seen_inside.append((engine.store.get(TABLE, write.pk, write.sk), engine.replica.log_end(TABLE, lane)))

    pk = engine.table(TABLE).key.key_from_item(key("a"))[0]
    lane = engine.replica.lane_of(TABLE, pk)
    engine.add_commit_listener(listener)
    answer = engine.execute("PutItem", put_request("a", "x"))
    assert seen_inside == [({**key("a"), "v": {"S": "x"}}, 1)]
    assert answer.response == {} and answer.version is not None


def test_the_commit_result_holds_the_committed_writes_and_where_they_came_from():
    engine, _clock = global_engine("us-east-1")
    other, _ = global_engine("eu-west-1")
    heard = listen(other)
    engine.handle("PutItem", put_request("a", "x"))
    local = listen(engine)
    engine.handle("PutItem", put_request("b", "y"))
    assert [(r.originated_here, len(r.local_writes)) for r in local] == [(True, 1)]
    for lane in range(engine.replica.lanes(TABLE)):
        records = engine.replica.local_records(TABLE, lane, 0, 100)
        if records:  # through the codec, as a link ships them
            ship = decode(encode(Ship(TABLE, lane, 1, 0, tuple(records))))
            other.replica.apply_replicated("us-east-1", TABLE, lane, list(ship.records))
    # Replicated applies commit too, but nothing of theirs originated here: replication has nothing to ship.
    assert heard and all(not result.originated_here and result.local_writes == [] for result in heard)
    assert sum(len(result.writes) for result in heard) == 2


def test_writes_that_commit_nothing_tell_no_listener():
    engine, _clock = global_engine("us-east-1")
    engine.handle("PutItem", put_request("a", "x"))
    heard = listen(engine)
    engine.handle("PutItem", put_request("a", "x"))  # unchanged item of a global table: dropped when stamped
    with pytest.raises(ConditionalCheckFailedException):
        engine.handle("PutItem", put_request("a", "y", ConditionExpression="attribute_not_exists(pk)"))
    engine.handle("DeleteItem", {"TableName": TABLE, "Key": key("never")})  # nothing to delete
    assert engine.commit([]).writes == []
    assert heard == []


def test_a_write_an_index_refuses_rolls_back_before_the_change_log_and_tells_no_listener():
    engine, _clock = global_engine("us-east-1")
    engine.handle(
        "UpdateTable",
        {
            "TableName": TABLE,
            "AttributeDefinitions": [{"AttributeName": "g", "AttributeType": "S"}],
            "GlobalSecondaryIndexUpdates": [
                {"Create": {"IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                            "Projection": {"ProjectionType": "ALL"}}}
            ],
        },
    )  # fmt: skip
    while engine.background_step():
        pass
    heard = listen(engine)
    ends = [engine.replica.log_end(TABLE, lane) for lane in range(engine.replica.lanes(TABLE))]
    with pytest.raises(ValidationException):
        engine.handle("PutItem", {"TableName": TABLE, "Item": {**key("a"), "g": {"N": "1"}}})
    assert [engine.replica.log_end(TABLE, lane) for lane in range(engine.replica.lanes(TABLE))] == ends
    assert engine.handle("GetItem", {"TableName": TABLE, "Key": key("a")}) == {}
    assert heard == []


def test_a_ttl_deletion_is_a_local_commit():
    engine, clock = global_engine("us-east-1")
    engine.handle(
        "UpdateTimeToLive",
        {"TableName": TABLE, "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "expires"}},
    )
    engine.handle("PutItem", {"TableName": TABLE, "Item": {**key("a"), "expires": {"N": str(int(clock.wall_time()))}}})
    clock.advance(10)
    heard = listen(engine)
    while True:
        engine.sweep_expired()
        if engine.ttl.pass_complete:
            break
    assert [(r.originated_here, [w.service for w in r.writes]) for r in heard] == [(True, [True])]


def test_a_removed_listener_hears_nothing_more():
    engine, _clock = global_engine("us-east-1")
    heard = listen(engine)
    engine.handle("PutItem", put_request("a", "x"))
    engine.remove_commit_listener(heard.append)
    engine.handle("PutItem", put_request("a", "y"))
    assert len(heard) == 1


def test_listeners_run_in_registration_order():
    engine, _clock = global_engine("us-east-1")
    order: list[str] = []
    engine.add_commit_listener(lambda _result: order.append("first"))
    engine.add_commit_listener(lambda _result: order.append("second"))
    engine.commit([ItemWrite(TABLE, *engine.table(TABLE).key.key_from_item(key("a")), {**key("a")}, 5, None)])
    assert order == ["first", "second"]
