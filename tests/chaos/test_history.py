"""The Jepsen-style history: invoke/complete invariants, error classification, faults, JSONL round trip."""

from __future__ import annotations

import orjson
import pytest

from globaltables.chaos.history import FIELDS, History, Op, completion_type_for_error, key_id
from globaltables.runtime.clock import ManualClock


def test_invoke_then_ok_fail_info_with_clock_times_and_version():
    clock = ManualClock(wall_time=1000.0, monotonic=5.0)
    history = History(clock)
    put = history.invoke(1, "us-east-1", "put", "Orders", "k1", "w-1")
    clock.advance(0.25)
    done = history.ok(put, version="0000000001700000000000.0000/us-east-1")
    assert (put.type, put.mono, put.wall) == ("invoke", 5.0, 1000.0)
    assert (done.type, done.mono, done.wall, done.value) == ("ok", 5.25, 1000.25, "w-1")  # write repeats its value
    assert (done.region, done.table, done.key, done.f) == ("us-east-1", "Orders", "k1", "put")
    get = history.invoke(2, "eu-west-1", "get", "Orders", "k1")
    history.ok(get, value="w-1", version="0000000001700000000000.0000/us-east-1")
    cond = history.invoke(1, "us-east-1", "put", "Orders", "k1", "w-2")
    history.error(cond, "ConditionalCheckFailedException")
    slow = history.invoke(1, "us-east-1", "delete", "Orders", "k1")
    history.error(slow, "ReadTimeout")
    assert [op.type for op in history] == ["invoke", "ok", "invoke", "ok", "invoke", "fail", "invoke", "info"]
    assert [op.index for op in history] == list(range(8))
    assert [(inv.index, done.index if done else None) for inv, done in history.pairs()] == [
        (0, 1),
        (2, 3),
        (4, 5),
        (6, 7),
    ]


def test_one_outstanding_invocation_per_process():
    history = History()
    first = history.invoke("c1", "a", "put", "T", "k", "v1")
    with pytest.raises(ValueError, match="outstanding"):
        history.invoke("c1", "a", "put", "T", "k", "v2")
    history.info(first, "Timeout")
    with pytest.raises(ValueError, match="not the outstanding"):
        history.ok(first)
    with pytest.raises(ValueError, match="completion type"):
        history.complete(history.invoke("c1", "a", "get", "T", "k"), "maybe")


def test_errors_are_definite_only_when_they_prove_nothing_applied():
    for error in ("ConditionalCheckFailedException", "ValidationException", "ReplicatedWriteConflictException"):
        assert completion_type_for_error(error) == "fail"
    for error in ("InternalServerError", "ServiceUnavailable", "ReadTimeoutError", "ConnectionResetError", "?"):
        assert completion_type_for_error(error) == "info"


def test_faults_share_the_timeline_and_unfinished_invocations_pair_with_none():
    history = History()
    history.fault("partition", {"grudges": {"b": ["a"]}}, mono=1.0, wall=2.0)
    pending = history.invoke("c1", "a", "put", "T", "k", "v1", mono=1.5, wall=2.5)
    history.fault("heal", mono=3.0, wall=4.0)
    assert [op.process for op in history.faults()] == ["nemesis", "nemesis"]
    assert history.faults()[0].type == "info"
    assert history.pairs() == [(pending, None)]
    assert history.outstanding() == [pending]


def test_jsonl_round_trip_keeps_every_field_in_a_stable_schema(tmp_path):
    history = History(ManualClock())
    key = {"customerId": {"S": "c1"}, "sk": {"S": "o#1"}}
    put = history.invoke(7, "us-east-1", "put", "Orders", key, "w-1")
    history.ok(put, version="0000000001700000000000.0001/us-east-1")
    history.fault("skew", {"offset_ms": 500}, region="eu-west-1")
    history.invoke(8, "eu-west-1", "update", "Orders", key, "w-2")
    path = tmp_path / "history.jsonl"
    history.write_jsonl(path)
    lines = path.read_bytes().splitlines()
    assert len(lines) == 4
    assert all(list(orjson.loads(line)) == list(FIELDS) for line in lines)
    loaded = History.read_jsonl(path)
    assert loaded.ops == history.ops
    assert [op.index for op in loaded.outstanding()] == [3]
    # The canonical key string does not depend on attribute order.
    assert key_id(loaded.ops[0].key) == key_id({"sk": {"S": "o#1"}, "customerId": {"S": "c1"}})
    # Unknown fields from a newer writer are ignored.
    extended = orjson.loads(lines[0]) | {"future_field": 1}
    assert Op.from_dict(extended) == loaded.ops[0]
