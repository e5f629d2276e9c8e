"""The region's HTTP front (region/http_front.py), over raw sockets against a real region process.

The front answers plain DynamoDB POSTs itself and hands any other connection to aiohttp; from outside, both must
look the same: the same status, body and headers, whichever of the two answered. These tests speak HTTP by hand
to reach the cases http.client and botocore never produce: pipelining, a connection switching paths, the same
request with and without a header that sends it to aiohttp.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

import orjson
import pytest



def signed_now() -> tuple[str, str]:
    """(X-Amz-Date, Authorization): a well-formed signature for us-east-1 at the moment of the request (the region
    checks the signing date against a 5-minute window, so it is taken when the request is built, not at import)."""
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    authorization = (
        f"AWS4-HMAC-SHA256 Credential=AKID/{date[:8]}/us-east-1/dynamodb/aws4_request, "
        "SignedHeaders=host;x-amz-date;x-amz-target, Signature=" + "0" * 64
    )
    return date, authorization

TIMEOUT_S = 30


def request(target: str, body: bytes, extra: str = "", path: str = "/", method: str = "POST") -> bytes:
    date, authorization = signed_now()
    return (
        f"{method} {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/x-amz-json-1.0\r\n"
        f"X-Amz-Target: DynamoDB_20120810.{target}\r\nAuthorization: {authorization}\r\n"
        f"X-Amz-Date: {date}\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


class Wire:
    """One raw keep-alive connection; `answers(n)` reads n Content-Length framed answers."""

    def __init__(self, endpoint: str) -> None:
        parts = urlsplit(endpoint)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=TIMEOUT_S)
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answers(self, count: int) -> list[tuple[int, dict[str, str], bytes]]:
        out = []
        while len(out) < count:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                lines = self.buffer[:end].decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers["content-length"])
                if len(self.buffer) >= end + 4 + length:
                    body = self.buffer[end + 4 : end + 4 + length]
                    self.buffer = self.buffer[end + 4 + length :]
                    out.append((int(lines[0].split()[1]), headers, body))
                    continue
            chunk = self.sock.recv(65536)
            assert chunk, "the server closed the connection"
            self.buffer += chunk
        return out

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def wire(region_endpoint):
    connection = Wire(region_endpoint)
    yield connection
    connection.close()


def test_pipelined_requests_are_answered_in_order(wire):
    bodies = [orjson.dumps({"Limit": n}) for n in range(1, 6)]
    wire.send(b"".join(request("ListTables", body) for body in bodies) + request("ListTables", b"not json"))
    answers = wire.answers(6)
    assert [status for status, _, _ in answers] == [200] * 5 + [400]
    ids = [headers["x-amzn-requestid"] for _, headers, _ in answers]
    assert len(set(ids)) == 6


def test_a_request_split_across_many_packets_is_reassembled(wire):
    data = request("ListTables", b'{"Limit": 3}')
    for i in range(0, len(data), 7):
        wire.send(data[i : i + 7])
    [(status, _, body)] = wire.answers(1)
    assert status == 200 and "TableNames" in orjson.loads(body)


def test_a_connection_handed_to_aiohttp_keeps_serving_every_path(wire):
    """POST (front), then GET / (aiohttp takes the connection), then POST and GET elsewhere on the same one."""
    wire.send(request("ListTables", b"{}"))
    wire.send(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
    wire.send(request("ListTables", b"{}"))
    wire.send(request("ListTables", b"{}", path="/nowhere", method="GET"))
    (s1, _, _), (s2, _, health), (s3, _, _), (s4, _, _) = wire.answers(4)
    assert (s1, s2, s3, s4) == (200, 200, 200, 404)
    assert health.startswith(b"healthy: ")


@pytest.mark.parametrize(
    "extra",
    [
        "Connection: keep-alive\r\n",  # any Connection header goes to aiohttp
        "x-amz-target: DynamoDB_20120810.ListTables\r\n",  # a repeated header goes to aiohttp
        "Bad Header: x\r\n",  # not a token: aiohttp refuses it
    ],
)
def test_requests_the_front_does_not_serve_get_aiohttps_answer(region_endpoint, extra):
    wire = Wire(region_endpoint)
    try:
        wire.send(request("ListTables", b"{}", extra=extra))
        [(status, headers, body)] = wire.answers(1)
    finally:
        wire.close()
    if extra.startswith("Bad"):
        assert status == 400
    else:
        assert status == 200 and "TableNames" in orjson.loads(body)


def test_front_and_aiohttp_frame_answers_identically(region_endpoint):
    """The same requests, once served by the front and once (with `Connection: keep-alive`) by aiohttp: the same
    statuses, bodies and header names in the same order."""
    cases = [("ListTables", b'{"Limit": 2}'), ("DescribeTable", b'{"TableName": "x"}'), ("ListTables", b"[")]
    seen = []
    for extra in ("", "Connection: keep-alive\r\n"):
        wire = Wire(region_endpoint)
        try:
            for target, body in cases:
                wire.send(request(target, body, extra=extra))
            seen.append([(status, list(headers), body) for status, headers, body in wire.answers(len(cases))])
        finally:
            wire.close()
    assert seen[0] == seen[1]
    assert seen[0][0][1] == ["x-amzn-requestid", "x-amz-crc32", "content-type", "content-length", "date", "server"]


def test_chunked_upload_is_served_by_aiohttp(wire):
    body = b'{"Limit": 4}'
    head = request("ListTables", b"").replace(b"Content-Length: 0\r\n", b"Transfer-Encoding: chunked\r\n")
    wire.send(head + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
    [(status, _, answer)] = wire.answers(1)
    assert status == 200 and "TableNames" in orjson.loads(answer)


def test_writes_queued_for_group_commit_keep_the_connections_order(region_endpoint, wire, unique_table_name):
    """A pipelined PutItem goes to the group committer (region/group_commit.py); the GetItem behind it waits for it
    and reads it; a request aiohttp must serve (GET /) takes the connection only once the owed answers are
    written; and the connection goes on serving after the hand-over."""
    from region_process import make_client

    client = make_client(region_endpoint)
    table = unique_table_name("pipelined")
    client.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})
    item = {"pk": {"S": "a"}, "n": {"N": "1"}}
    wire.send(
        request("PutItem", orjson.dumps({"TableName": table, "Item": item}))
        + request("GetItem", orjson.dumps({"TableName": table, "Key": {"pk": {"S": "a"}}}))
        + b"GET / HTTP/1.1\r\nHost: test\r\n\r\n"
        + request("DeleteItem", orjson.dumps({"TableName": table, "Key": {"pk": {"S": "a"}},
                                               "ReturnValues": "ALL_OLD"}))
    )  # fmt: skip
    (s1, _, put), (s2, _, got), (s3, _, health), (s4, _, deleted) = wire.answers(4)
    assert (s1, s2, s3, s4) == (200, 200, 200, 200)
    assert orjson.loads(put) == {}
    assert orjson.loads(got) == {"Item": item}
    assert health.startswith(b"healthy: ")
    assert orjson.loads(deleted) == {"Attributes": item}


def test_like_requests_of_one_turn_are_answered_as_one_by_one(region_endpoint, wire, unique_table_name):
    """PutItems, then GetItems, pipelined in one packet reach the committer in one loop turn and run as batches
    (region/group_commit.py rule 6: each phase for all of them); their answers, failures included, are those the
    same requests get sent one at a time, in order."""
    from region_process import make_client

    client = make_client(region_endpoint)
    tables = [unique_table_name("batched"), unique_table_name("single")]
    for table in tables:
        client.create_table(
            TableName=table,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
    for table in tables:
        client.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})

    def requests_for(table: str) -> list[bytes]:
        items = [{"pk": {"S": f"k{n}"}, "n": {"N": str(n)}} for n in range(4)]
        puts = [orjson.dumps({"TableName": table, "Item": item}) for item in items]
        puts.insert(2, orjson.dumps({"TableName": table, "Item": {"n": {"N": "9"}}}))  # no key: ValidationException
        puts.insert(3, b"{not json")  # SerializationException
        gets = [orjson.dumps({"TableName": table, "Key": {"pk": {"S": f"k{n}"}}}) for n in range(5)]  # k4: absent
        gets.insert(1, orjson.dumps({"TableName": table, "Key": {"pk": {"S": "k1"}}, "ProjectionExpression": "#x"}))
        gets.insert(3, orjson.dumps({"TableName": table, "Key": {"pk": {"S": "k2"}}, "ConsistentRead": True,
                                     "ReturnConsumedCapacity": "TOTAL"}))  # fmt: skip
        return [request("PutItem", body) for body in puts] + [request("GetItem", body) for body in gets]

    batched = requests_for(tables[0])
    wire.send(b"".join(batched))
    together = wire.answers(len(batched))
    alone = []
    single = Wire(region_endpoint)
    try:
        for data in requests_for(tables[1]):
            single.send(data)
            alone.extend(single.answers(1))
    finally:
        single.close()

    def comparable(answer, table: str):
        status, headers, body = answer
        text = body.decode().replace(table, "TABLE")
        return status, headers.get("x-amzn-errortype"), orjson.loads(text) if text else None

    assert [comparable(a, tables[0]) for a in together] == [comparable(a, tables[1]) for a in alone]
    statuses = [status for status, _, _ in together]
    assert statuses.count(400) == 3 and statuses.count(200) == len(batched) - 3
    assert orjson.loads(together[-2][2]) == {"Item": {"pk": {"S": "k3"}, "n": {"N": "3"}}}
    assert len({headers["x-amzn-requestid"] for _, headers, _ in together}) == len(batched)
