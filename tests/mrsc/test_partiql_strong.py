"""PartiQL on a strong-mode (MRSC) table with real processes (`globaltables up`) and boto3: a PartiQL write is the
item write it stands for, so it takes the commit protocol (acknowledged once another member holds it; a racing
write elsewhere is ReplicatedWriteConflictException), and a consistent SELECT is a strong read.

Topology (tests/mrsc/conftest.py): replicas A = us-east-1 and B = us-east-2, witness W = us-west-2, 10 ms one way.
Clients make one attempt (no botocore retries), so every RWCE is seen as the region answered it.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from botocore.exceptions import ClientError

pytestmark = pytest.mark.timeout(120)

TABLE = "Items"
A, B = "us-east-1", "us-east-2"
ROUND_TRIP_S = 0.020  # the nearest other member is 10 ms away, one way
RWCE = "ReplicatedWriteConflictException"


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def code_of(call) -> str | None:
    try:
        call()
    except ClientError as error:
        return error.response["Error"]["Code"]
    return None


def strong_select(client, name: str) -> list[dict]:
    return client.execute_statement(
        Statement=f'SELECT * FROM "{TABLE}" WHERE id = ?', Parameters=[{"S": name}], ConsistentRead=True
    )["Items"]


def test_an_acknowledged_partiql_write_is_returned_by_a_strong_read_elsewhere(cluster):
    # Why: a PartiQL write on a strong table is acknowledged only once another member holds it (commit protocol).
    name = fresh("pql")
    started = time.monotonic()
    cluster.clients[A].execute_statement(Statement=f"INSERT INTO \"{TABLE}\" VALUE {{'id': '{name}', 'n': 1}}")
    assert time.monotonic() - started >= ROUND_TRIP_S
    assert strong_select(cluster.clients[B], name) == [{"id": {"S": name}, "n": {"N": "1"}}]
    cluster.clients[B].execute_statement(Statement=f"UPDATE \"{TABLE}\" SET n = n + 1 WHERE id = '{name}'")
    got = cluster.clients[A].get_item(TableName=TABLE, Key={"id": {"S": name}}, ConsistentRead=True)["Item"]
    assert got["n"] == {"N": "2"}
    cluster.clients[A].execute_statement(Statement=f"DELETE FROM \"{TABLE}\" WHERE id = '{name}'")
    assert strong_select(cluster.clients[B], name) == []


def test_a_partiql_insert_of_a_key_another_region_wrote_is_duplicate(cluster):
    # Why: the INSERT's condition is checked against the latest version, wherever it was written.
    name = fresh("dup")
    cluster.clients[A].put_item(TableName=TABLE, Item={"id": {"S": name}, "v": {"S": "a"}})
    statement = f"INSERT INTO \"{TABLE}\" VALUE {{'id': '{name}', 'v': 'b'}}"
    assert code_of(lambda: cluster.clients[B].execute_statement(Statement=statement)) == "DuplicateItemException"
    assert strong_select(cluster.clients[A], name) == [{"id": {"S": name}, "v": {"S": "a"}}]


def test_a_partiql_write_racing_an_item_api_write_gets_replicated_write_conflict(cluster):
    # Why: both forms of a write share the commit protocol, so a race between them is refused with RWCE (on either
    # side: racing proposals are ranked, docs/mrsc.md, so which side loses varies), and a refused write changes
    # nothing (every acknowledged increment of both sides is in the final item, in both regions).
    name = fresh("race")
    cluster.clients[A].put_item(TableName=TABLE, Item={"id": {"S": name}, "n": {"N": "0"}})
    codes: dict[str, list[str | None]] = {A: [], B: []}
    deadline = time.monotonic() + 20
    barrier = threading.Barrier(2)

    def partiql_side():
        client = cluster.clients[A]
        barrier.wait(timeout=10)
        while time.monotonic() < deadline and (len(codes[A]) < 40 or RWCE not in codes[A] + codes[B]):
            statement = f"UPDATE \"{TABLE}\" SET n = n + 1 WHERE id = '{name}'"
            codes[A].append(code_of(lambda: client.execute_statement(Statement=statement)))

    def item_api_side():
        client = cluster.clients[B]
        barrier.wait(timeout=10)
        while time.monotonic() < deadline and (len(codes[A]) < 40 or RWCE not in codes[A] + codes[B]):
            codes[B].append(
                code_of(
                    lambda: client.update_item(
                        TableName=TABLE, Key={"id": {"S": name}}, UpdateExpression="ADD n :one",
                        ExpressionAttributeValues={":one": {"N": "1"}},
                    )
                )
            )  # fmt: skip

    threads = [threading.Thread(target=work) for work in (partiql_side, item_api_side)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    every = codes[A] + codes[B]
    assert RWCE in every, "the two sides never raced"
    assert None in codes[A], "no PartiQL write committed"
    assert set(every) <= {None, RWCE}
    items = [strong_select(cluster.clients[region], name) for region in (A, B)]
    assert items[0] == items[1] == [{"id": {"S": name}, "n": {"N": str(every.count(None))}}]


def test_a_partiql_transaction_on_a_strong_table_is_refused_like_transact_write_items(cluster):
    # Why: transactions are not supported on MRSC tables (facts §10.3); PartiQL's are TransactWriteItems.
    name = fresh("tx")
    with pytest.raises(ClientError) as caught:
        cluster.clients[A].execute_transaction(
            TransactStatements=[{"Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'id': '{name}'}}"}]
        )
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert "multi-Region strong consistency" in caught.value.response["Error"]["Message"]
    assert strong_select(cluster.clients[A], name) == []


def test_a_partiql_batch_on_a_strong_table_commits_each_write_and_reads_strongly(cluster):
    # Why: each statement of a batch is its item operation under the commit protocol; a batch SELECT with
    # ConsistentRead is a strong GetItem, so it sees writes acknowledged in the other replica.
    names = [fresh("pqlbatch") for _ in range(3)]
    answer = cluster.clients[A].batch_execute_statement(
        Statements=[{"Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'id': ?, 'v': 1}}", "Parameters": [{"S": n}]}
                    for n in names]
    )  # fmt: skip
    assert answer["Responses"] == [{"TableName": TABLE}] * 3
    reads = cluster.clients[B].batch_execute_statement(
        Statements=[{"Statement": f"SELECT v FROM \"{TABLE}\" WHERE id = '{n}'", "ConsistentRead": True} for n in names]
    )
    assert reads["Responses"] == [{"TableName": TABLE, "Item": {"v": {"N": "1"}}}] * 3
