"""Strong mode (MRSC) with real processes (`globaltables up`) and boto3: what strong mode must show.

Topology (tests/mrsc/conftest.py): replicas A = us-east-1 and B = us-east-2, witness W = us-west-2, 10 ms one way.
Clients make one attempt (no botocore retries), so every RWCE and 500 is seen as the region answered it.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from botocore.exceptions import ClientError

from mrec_cluster import Cluster, wait_until

pytestmark = pytest.mark.timeout(120)

TABLE = "Items"
A, B, W = "us-east-1", "us-east-2", "us-west-2"
ROUND_TRIP_S = 0.020  # the nearest other member is 10 ms away, one way


def key(name: str) -> dict:
    return {"id": {"S": name}}


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def error_code(call) -> str | None:
    """None if `call()` succeeded, else the DynamoDB error code."""
    try:
        call()
    except ClientError as error:
        return error.response["Error"]["Code"]
    return None


def partition(cluster: Cluster, groups: list[list[str]]) -> None:
    """Cut every link between regions of different groups, both ways (grudges held by every receiver)."""
    for group in groups:
        others = [r for g in groups if g is not group for r in g]
        for region in group:
            cluster.faults(region, {"grudges": others})


def heal(cluster: Cluster) -> None:
    for region in (A, B, W):
        cluster.faults(region, {"heal": True})


def test_every_region_reports_strong_mode_and_the_table_describes_it(cluster):
    for region in (A, B, W):
        assert cluster.status(region)["mode"] == "mrsc"
    table = cluster.clients[A].describe_table(TableName=TABLE)["Table"]
    assert table["MultiRegionConsistency"] == "STRONG"
    assert sorted(r["RegionName"] for r in table["Replicas"]) == [A, B]
    assert table["GlobalTableWitnesses"] == [{"RegionName": W, "WitnessStatus": "ACTIVE"}]


def test_witness_serves_no_table_data(cluster):
    witness = cluster.clients[W]
    assert error_code(lambda: witness.get_item(TableName=TABLE, Key=key("x"))) == "ResourceNotFoundException"
    assert error_code(lambda: witness.put_item(TableName=TABLE, Item=key("x"))) == "ResourceNotFoundException"
    assert witness.list_tables()["TableNames"] == []


def test_unsupported_features_are_refused(cluster):
    client = cluster.clients[A]
    name = fresh("refused")
    transact = lambda: client.transact_write_items(TransactItems=[{"Put": {"TableName": TABLE, "Item": key(name)}}])  # noqa: E731
    for call in (
        transact,
        lambda: client.transact_get_items(TransactItems=[{"Get": {"TableName": TABLE, "Key": key(name)}}]),
        lambda: client.update_time_to_live(
            TableName=TABLE, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
        ),
        lambda: client.update_table(
            TableName=TABLE, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
        ),
    ):
        with pytest.raises(ClientError) as caught:
            call()
        assert caught.value.response["Error"]["Code"] == "ValidationException"
        assert "multi-Region strong consistency" in caught.value.response["Error"]["Message"]
    assert "Item" not in client.get_item(TableName=TABLE, Key=key(name), ConsistentRead=True)


def test_acknowledged_write_is_returned_by_a_strong_read_elsewhere(cluster):
    for i in range(5):
        name = fresh("ack")
        started = time.monotonic()
        cluster.clients[A].put_item(TableName=TABLE, Item={**key(name), "n": {"N": str(i)}})
        assert time.monotonic() - started >= ROUND_TRIP_S  # a majority holds it: one round trip, no less
        got = cluster.clients[B].get_item(TableName=TABLE, Key=key(name), ConsistentRead=True)
        assert got["Item"] == {**key(name), "n": {"N": str(i)}}
    # Updates and deletes go the same way.
    cluster.clients[B].update_item(
        TableName=TABLE, Key=key(name), UpdateExpression="SET n = n + :one", ExpressionAttributeValues={":one": {"N": "1"}}
    )
    assert cluster.clients[A].get_item(TableName=TABLE, Key=key(name), ConsistentRead=True)["Item"]["n"] == {"N": "5"}
    old = cluster.clients[A].delete_item(TableName=TABLE, Key=key(name), ReturnValues="ALL_OLD")["Attributes"]
    assert old["n"] == {"N": "5"}
    assert "Item" not in cluster.clients[B].get_item(TableName=TABLE, Key=key(name), ConsistentRead=True)


def test_acknowledged_write_is_returned_by_a_strong_query_and_scan_elsewhere(cluster):
    def query(name):
        return cluster.clients[B].query(
            TableName=TABLE, ConsistentRead=True, KeyConditionExpression="id = :id",
            ExpressionAttributeValues={":id": {"S": name}},
        )["Items"]  # fmt: skip

    def scan(name):
        return cluster.clients[B].scan(
            TableName=TABLE, ConsistentRead=True, FilterExpression="id = :id",
            ExpressionAttributeValues={":id": {"S": name}},
        )["Items"]  # fmt: skip

    for i in range(3):
        name = fresh("range")
        cluster.clients[A].put_item(TableName=TABLE, Item={**key(name), "n": {"N": str(i)}})
        started = time.monotonic()
        assert query(name) == [{**key(name), "n": {"N": str(i)}}]
        assert time.monotonic() - started >= ROUND_TRIP_S  # it synced with another member first
        cluster.clients[A].update_item(
            TableName=TABLE, Key=key(name), UpdateExpression="SET n = :n", ExpressionAttributeValues={":n": {"N": "9"}}
        )
        assert scan(name) == [{**key(name), "n": {"N": "9"}}]
        cluster.clients[A].delete_item(TableName=TABLE, Key=key(name))
        assert query(name) == [] and scan(name) == []


def test_batch_write_commits_every_request(cluster):
    names = [fresh("batch") for _ in range(3)]
    answer = cluster.clients[A].batch_write_item(
        RequestItems={TABLE: [{"PutRequest": {"Item": {**key(n), "v": {"S": n}}}} for n in names]}
    )
    assert answer["UnprocessedItems"] == {}
    for n in names:
        assert cluster.clients[B].get_item(TableName=TABLE, Key=key(n), ConsistentRead=True)["Item"]["v"] == {"S": n}


def race(cluster: Cluster, work_a, work_b) -> None:
    barrier = threading.Barrier(2)
    failures: list[BaseException] = []

    def run(work):
        try:
            barrier.wait(timeout=10)
            work()
        except BaseException as error:  # surfaced by the test thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(work,)) for work in (work_a, work_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures


def test_two_regions_hammering_one_item_conflict_and_converge(cluster):
    name = fresh("hammer")
    codes: dict[str, list[str | None]] = {A: [], B: []}
    deadline = time.monotonic() + 20

    def hammer(region: str):
        client = cluster.clients[region]
        i = 0
        while time.monotonic() < deadline and (i < 60 or "ReplicatedWriteConflictException" not in sum(codes.values(), [])):
            i += 1
            codes[region].append(
                error_code(
                    lambda: client.update_item(
                        TableName=TABLE, Key=key(name), UpdateExpression="SET #by = :r ADD n :one", ExpressionAttributeNames={"#by": "by"},
                        ExpressionAttributeValues={":r": {"S": region}, ":one": {"N": "1"}},
                    )
                )
            )  # fmt: skip

    race(cluster, lambda: hammer(A), lambda: hammer(B))
    every = codes[A] + codes[B]
    assert "ReplicatedWriteConflictException" in every
    assert set(every) <= {None, "ReplicatedWriteConflictException"}
    committed = every.count(None)
    # Both replicas end with the same item, and every acknowledged increment is in it (RWCE changed nothing).
    items = [cluster.clients[r].get_item(TableName=TABLE, Key=key(name), ConsistentRead=True)["Item"] for r in (A, B)]
    assert items[0] == items[1]
    assert items[0]["n"] == {"N": str(committed)}
    wait_until(
        lambda: all(cluster.clients[r].get_item(TableName=TABLE, Key=key(name))["Item"] == items[0] for r in (A, B)),
        10,
        "the eventually consistent reads to agree",
    )


def test_put_if_absent_raced_from_both_regions_succeeds_in_exactly_one(cluster):
    for _ in range(5):
        name = fresh("absent")
        codes: dict[str, str | None] = {}

        def put(region: str):
            codes[region] = error_code(
                lambda: cluster.clients[region].put_item(
                    TableName=TABLE, Item={**key(name), "owner": {"S": region}},
                    ConditionExpression="attribute_not_exists(id)",
                )
            )  # fmt: skip

        race(cluster, lambda: put(A), lambda: put(B))
        winners = [region for region, code in codes.items() if code is None]
        assert len(winners) == 1, codes
        loser = A if winners == [B] else B
        assert codes[loser] in ("ConditionalCheckFailedException", "ReplicatedWriteConflictException")
        for region in (A, B):
            item = cluster.clients[region].get_item(TableName=TABLE, Key=key(name), ConsistentRead=True)["Item"]
            assert item["owner"] == {"S": winners[0]}


def test_writes_commit_through_the_other_replica_while_the_witness_is_cut_off(cluster):
    try:
        partition(cluster, [[A, B], [W]])
        for writer, reader in ((A, B), (B, A)):
            name = fresh("nowitness")
            cluster.clients[writer].put_item(TableName=TABLE, Item={**key(name), "by": {"S": writer}})
            got = cluster.clients[reader].get_item(TableName=TABLE, Key=key(name), ConsistentRead=True)
            assert got["Item"]["by"] == {"S": writer}
    finally:
        heal(cluster)


def test_an_isolated_replica_fails_writes_with_500_while_the_other_commits(cluster):
    mine, theirs = fresh("isolated"), fresh("connected")
    cluster.clients[A].put_item(TableName=TABLE, Item={**key(mine), "v": {"N": "0"}})
    try:
        partition(cluster, [[A], [B, W]])
        code = error_code(lambda: cluster.clients[A].put_item(TableName=TABLE, Item={**key(mine), "v": {"N": "1"}}))
        assert code == "InternalServerError"
        assert error_code(lambda: cluster.clients[A].get_item(TableName=TABLE, Key=key(mine), ConsistentRead=True)) == (
            "InternalServerError"
        )
        # Its eventually consistent reads still answer, from what it holds.
        assert cluster.clients[A].get_item(TableName=TABLE, Key=key(mine))["Item"]["v"] == {"N": "0"}
        cluster.clients[B].put_item(TableName=TABLE, Item={**key(theirs), "v": {"N": "2"}})
        assert cluster.clients[B].get_item(TableName=TABLE, Key=key(theirs), ConsistentRead=True)["Item"]["v"] == {
            "N": "2"
        }
    finally:
        heal(cluster)
    # Healed: A's in-doubt write was resolved one way or the other, the same way everywhere, and A writes again.
    settle_in_doubt(cluster, mine, A)
    assert cluster.clients[B].get_item(TableName=TABLE, Key=key(theirs), ConsistentRead=True)["Item"]["v"] == {"N": "2"}
    assert cluster.clients[A].get_item(TableName=TABLE, Key=key(theirs), ConsistentRead=True)["Item"]["v"] == {"N": "2"}


def settle_in_doubt(cluster, name: str, writer: str) -> None:
    """After a heal: the in-doubt write of "1" over "0" on item `name` is resolved one way or the other, the same way
    at A and B; then `writer`'s put of "3" commits (the item is free again)."""

    def agreed():
        try:
            items = [cluster.clients[r].get_item(TableName=TABLE, Key=key(name), ConsistentRead=True)["Item"] for r in (A, B)]
        except ClientError:
            return False
        return items[0] == items[1] and items[0]["v"] in ({"N": "0"}, {"N": "1"})

    wait_until(agreed, 20, "the in-doubt write to be resolved the same way at both replicas")
    wait_until(
        lambda: error_code(lambda: cluster.clients[writer].put_item(TableName=TABLE, Item={**key(name), "v": {"N": "3"}}))
        is None,
        20,
        f"{writer}'s next write to commit",
        interval=0.2,
    )


def test_a_write_on_an_item_held_by_another_regions_undecided_proposal_is_refused_at_once(cluster):
    """docs/mrsc.md decision 2a, through a region process and boto3. A's proposal is made to stay undecided at B:
    A hears nobody (grudges against B and W), so it never learns B's or W's acceptance, and B does not hear W, so
    its recovery cannot prove the outcome from W's vote; B holds A's proposal, accepted, for as long as the links
    stay cut. A put at B on that item is then refused at once with ReplicatedWriteConflictException (409, the
    developer guide's message, facts §10.1): never proposed, it changes nothing, and after the heal the item holds
    the original value or A's, never B's."""
    name = fresh("held")
    cluster.clients[A].put_item(TableName=TABLE, Item={**key(name), "v": {"N": "0"}})
    try:
        cluster.faults(A, {"grudges": [B, W]})
        cluster.faults(B, {"grudges": [W]})
        # A's client waits write_timeout_ms and is answered 500, in doubt: by then B has held A's proposal for far
        # longer than the one write a fresh acceptance lets wait (retransmit_ms).
        assert error_code(lambda: cluster.clients[A].put_item(TableName=TABLE, Item={**key(name), "v": {"N": "1"}})) == (
            "InternalServerError"
        )
        with pytest.raises(ClientError) as refused:
            cluster.clients[B].put_item(TableName=TABLE, Item={**key(name), "v": {"N": "2"}})
        error = refused.value.response
        assert error["Error"]["Code"] == "ReplicatedWriteConflictException"
        assert error["ResponseMetadata"]["HTTPStatusCode"] == 409
        assert error["Error"]["Message"] == (
            "One or more items in this request are being modified by a request in another Region."
        )
        # Refused without a proposal: B still holds A's, and its local copy is unchanged.
        assert cluster.clients[B].get_item(TableName=TABLE, Key=key(name))["Item"]["v"] == {"N": "0"}
    finally:
        heal(cluster)
    # A's in-doubt write is resolved the same way at both replicas; the item is free again: B's retry is accepted.
    settle_in_doubt(cluster, name, B)
    assert cluster.clients[A].get_item(TableName=TABLE, Key=key(name), ConsistentRead=True)["Item"]["v"] == {"N": "3"}


def test_a_planted_refusal_without_confirmation_is_caught_by_the_checker(cluster):
    """`/control/faults {"planted": ["ccf-without-confirmation"]}` makes A answer ConditionalCheckFailed from its
    local copy without confirming it; with A cut from B, B's committed write has not reached A. The kit's recorder
    records the condition, so the checker reads the refusal as a read of "no item" after the acknowledged write."""
    from globaltables.chaos.checkers import linearizable
    from globaltables.chaos.history import History
    from globaltables.testing.recording import Recorder
    from region_process import make_client

    def scenario(name: str, planted: bool) -> History:
        history = History()
        recorder = Recorder(history, lambda _table, item: {"id": item["id"]})
        clients = {region: make_client(cluster.endpoints[region], region=region) for region in (A, B)}
        for region, client in clients.items():
            recorder.attach(client, region)
        cluster.faults(A, {"planted": ["ccf-without-confirmation"] if planted else []})
        cluster.faults(A, {"grudges": [B]})  # A and B cut from each other; both still reach the witness
        cluster.faults(B, {"grudges": [A]})
        try:
            clients[B].put_item(TableName=TABLE, Item={**key(name), "value": {"S": "v1"}})
            code = error_code(lambda: clients[A].update_item(
                TableName=TABLE, Key=key(name), UpdateExpression="SET #v = :v", ConditionExpression="attribute_exists(id)",
                ExpressionAttributeNames={"#v": "value"}, ExpressionAttributeValues={":v": {"S": "v2"}},
            ))  # fmt: skip
            assert code == ("ConditionalCheckFailedException" if planted else None), code
        finally:
            heal(cluster)
            cluster.faults(A, {"planted": []})
        clients[A].get_item(TableName=TABLE, Key=key(name), ConsistentRead=True)
        return history

    honest = linearizable.check(scenario(fresh("confirmed"), planted=False))
    assert honest.verdict == "valid", honest
    caught = linearizable.check(scenario(fresh("planted"), planted=True))
    assert caught.verdict == "invalid", caught
    assert "refused with ConditionalCheckFailed" in caught.offending[0].detail, caught


def test_planted_bugs_are_refused_by_name(cluster):
    code, answer = cluster.control(f"{cluster.endpoints[A]}/control/faults", {"planted": ["no-such-bug"]})
    assert code == 400 and "ccf-without-confirmation" in str(answer), answer


def test_pipelined_strong_requests_are_answered_in_order_on_one_connection(cluster):
    # The region's HTTP front answers a strong request once its commit or sync is done, and takes the next request
    # of the connection only then: pipelined, a write, a strong read of it, an eventual read and a second write
    # come back in that order, each the answer to its own request.
    import socket
    from urllib.parse import urlsplit

    import orjson

    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    authorization = (
        f"AWS4-HMAC-SHA256 Credential=AKID/{date[:8]}/{A}/dynamodb/aws4_request, "
        "SignedHeaders=host;x-amz-date;x-amz-target, Signature=" + "0" * 64
    )

    def framed(operation: str, body: dict) -> bytes:
        data = orjson.dumps(body)
        return (
            f"POST / HTTP/1.1\r\nHost: test\r\nContent-Type: application/x-amz-json-1.0\r\n"
            f"X-Amz-Target: DynamoDB_20120810.{operation}\r\nAuthorization: {authorization}\r\n"
            f"X-Amz-Date: {date}\r\nContent-Length: {len(data)}\r\n\r\n"
        ).encode() + data

    name = fresh("pipelined")
    requests = [
        framed("PutItem", {"TableName": TABLE, "Item": {**key(name), "v": {"S": "one"}}, "ReturnValues": "ALL_OLD"}),
        framed("GetItem", {"TableName": TABLE, "Key": key(name), "ConsistentRead": True}),
        framed("GetItem", {"TableName": TABLE, "Key": key(name)}),
        framed("PutItem", {"TableName": TABLE, "Item": {**key(name), "v": {"S": "two"}}, "ReturnValues": "ALL_OLD"}),
    ]
    parts = urlsplit(cluster.endpoints[A])
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        started = time.monotonic()
        sock.sendall(b"".join(requests))
        buffer, answers = b"", []
        while len(answers) < len(requests):
            end = buffer.find(b"\r\n\r\n")
            if end >= 0:
                lines = buffer[:end].decode("latin-1").split("\r\n")
                length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length"))
                if len(buffer) >= end + 4 + length:
                    answers.append((int(lines[0].split()[1]), orjson.loads(buffer[end + 4 : end + 4 + length])))
                    buffer = buffer[end + 4 + length :]
                    continue
            chunk = sock.recv(65536)
            assert chunk, "the region closed the connection"
            buffer += chunk
        elapsed = time.monotonic() - started
    assert [status for status, _ in answers] == [200, 200, 200, 200], answers
    assert answers[0][1] == {}  # nothing there before the first write
    assert answers[1][1]["Item"]["v"] == {"S": "one"}
    assert answers[2][1]["Item"]["v"] == {"S": "one"}
    assert answers[3][1]["Attributes"]["v"] == {"S": "one"}
    assert elapsed >= 3 * ROUND_TRIP_S  # two writes and a strong read, one after another: each a round trip
