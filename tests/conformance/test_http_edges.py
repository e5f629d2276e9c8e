"""DynamoDB's HTTP edges, sent as raw signed requests: request content-coding, response compression and its
negotiation, CORS, other paths, and the address DescribeEndpoints names.

The requests are signed with SigV4 over the exact bytes sent (`signed_post`), so every test here also holds against
real DynamoDB (`--aws`). Each test's first docstring line names the DynamoDB rule it checks.
"""

from __future__ import annotations

import gzip
import zlib
from urllib.parse import urlsplit

import orjson
import pytest

from conformance.tables import create_pk_table

SIXTEEN_MIB = 16 * 1024 * 1024


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    name = unique_table_name("Http")
    create_pk_table(dynamodb, name)
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    return name


def put_body(table: str, key: str, **attributes: str) -> bytes:
    item = {"pk": {"S": key}, **{name: {"S": value} for name, value in attributes.items()}}
    return orjson.dumps({"TableName": table, "Item": item})


def stored(dynamodb, table: str, key: str) -> dict | None:
    return dynamodb.get_item(TableName=table, Key={"pk": {"S": key}}, ConsistentRead=True).get("Item")


def decoded(answer) -> bytes:
    coding = answer.headers.get("content-encoding")
    if coding is None:
        return answer.body
    return {"gzip": gzip.decompress, "deflate": zlib.decompress}[coding](answer.body)


# ------------------------------------------------------------------------------------------- request coding


@pytest.mark.parametrize(
    "coding, encode",
    [("gzip", gzip.compress), ("deflate", zlib.compress)],
)
def test_a_compressed_request_body_is_decoded_before_it_is_read(signed_post, dynamodb, table, coding, encode):
    """R2: DynamoDB honours Content-Encoding gzip (RFC 1952) and deflate (the zlib format, RFC 1950)."""
    key = f"coded-{coding}"
    answer = signed_post("PutItem", encode(put_body(table, key, via=coding)), {"Content-Encoding": coding})
    assert answer.status == 200, answer.body
    assert stored(dynamodb, table, key) == {"pk": {"S": key}, "via": {"S": coding}}


def test_concatenated_gzip_members_decode_to_their_concatenation(signed_post, dynamodb, table):
    """R2: a gzip body of several members (RFC 1952 section 2.2) is the concatenation of what they hold."""
    body = put_body(table, "members", via="two members")
    answer = signed_post("PutItem", gzip.compress(body[:20]) + gzip.compress(body[20:]), {"Content-Encoding": "gzip"})
    assert answer.status == 200, answer.body
    assert stored(dynamodb, table, "members") == {"pk": {"S": "members"}, "via": {"S": "two members"}}


@pytest.mark.parametrize(
    "case, coding, make",
    [
        ("unknown coding", "br", lambda body: body),
        ("corrupt gzip", "gzip", lambda body: gzip.compress(body)[:10] + b"\x00garbage" + gzip.compress(body)[10:]),
        ("truncated gzip", "gzip", lambda body: gzip.compress(body)[:-12]),
        ("empty gzip", "gzip", lambda body: b""),
        ("corrupt deflate", "deflate", lambda body: b"\x78\x9c" + body),
        ("truncated deflate", "deflate", lambda body: zlib.compress(body)[:-6]),
        ("empty deflate", "deflate", lambda body: b""),
    ],
)
def test_an_undecodable_body_is_500_and_nothing_is_executed(signed_post, dynamodb, table, case, coding, make):
    """R2: DynamoDB answers 500 to an unknown coding or a corrupt, truncated or empty compressed body, doing nothing."""
    key = f"refused-{case.replace(' ', '-')}"
    answer = signed_post("PutItem", make(put_body(table, key)), {"Content-Encoding": coding})
    assert answer.status == 500, (answer.status, answer.body)
    assert stored(dynamodb, table, key) is None


def test_the_16_mib_limit_applies_to_the_decoded_body(signed_post, dynamodb, table):
    """R2: DynamoDB's 16 MiB request limit counts decoded bytes, so a small gzip body can exceed it (413 or 500)."""
    body = put_body(table, "bomb", big="x" * (SIXTEEN_MIB + 1))
    compressed = gzip.compress(body)
    assert len(compressed) < 100_000
    answer = signed_post("PutItem", compressed, {"Content-Encoding": "gzip"})
    assert answer.status in (413, 500), (answer.status, answer.body[:200])
    assert stored(dynamodb, table, "bomb") is None


def test_a_large_decoded_body_within_the_limit_reaches_validation(signed_post, dynamodb, table):
    """R2 and the 400 KB item limit: a 1 MiB item sent as a 1 KiB gzip body is refused as too large an item."""
    body = gzip.compress(put_body(table, "big", big="x" * 1024 * 1024))
    answer = signed_post("PutItem", body, {"Content-Encoding": "gzip"})
    assert answer.status == 400
    assert orjson.loads(answer.body)["__type"].endswith("#ValidationException")
    assert stored(dynamodb, table, "big") is None


# ------------------------------------------------------------------------------------------ answer coding


@pytest.fixture(scope="module")
def large_item(dynamodb, table):
    """An item whose GetItem answer is about 6 KB: over DynamoDB's 4096-byte compression threshold."""
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "large"}, "text": {"S": "a rather long text " * 300}})
    return orjson.dumps({"TableName": table, "Key": {"pk": {"S": "large"}}, "ConsistentRead": True})


# R3's table of choices DynamoDB made for these Accept-Encoding headers.
NEGOTIATED = [
    ("identity", None), ("", None), ("br", None), ("zstd", None), ("compress", None), ("x-gzip", None),
    ("gzip, deflate", "gzip"), ("GZIP, identity", "gzip"), ("dog, gzip ,, cat", "gzip"),
    ("gzip;q=0.8, deflate;q=0.5", "gzip"), ("br, gzip;q=0, deflate; q = 0.5 , identity;q=0", "deflate"),
    ("br, identity, deflate, gzip", "deflate"), ("*", "gzip"), ("*, deflate", "deflate"),
    ("*, gzip;q=0.5", "deflate"), ("*, deflate;q=0.5", "gzip"), ("*, identity", "gzip"), ("gzip ;q=0", None),
    ("identity;q=0", None), ("*;q=0", None), ("*;q=0.5,identity", "gzip"), ("gzip;q=0.5,identity;q=0.8", "gzip"),
    ("br;q=0.8,identity;q=0.5,*;q=0", None), ('"gzip"', None), ("gzip br", None), ("gzip:q=1", None),
    ("deflate;q=0.5, gzip;q=31", "gzip"), ("gzip;q=31,deflate;q=51", "gzip"), ("deflate;q=0.5, gzip;q=1;q=0.2", "gzip"),
    ("deflate;q=0.5,gzip;q=0.", "deflate"), ("deflate;q=0.5,gzip;q=0.x", "gzip"), ("deflate;q=0.5,gzip;q=0. x", "gzip"),
    ("deflate;q=-0.5,gzip;q=0.2", "gzip"), ("gzip;q= 0;q=1", None), ("gzip;q =0;q=1", "gzip"), ("gzip; q=0;q=1", None),
    ("gzip;nq=0;q=1", None), ("gzip;q=0, gzip;q=1, gzip;q=0", "gzip"), ("br,identity;q=0.5,gzip;q=0.0001", "gzip"),
]  # fmt: skip


@pytest.mark.parametrize("accept, chosen", NEGOTIATED, ids=[repr(accept) for accept, _ in NEGOTIATED])
def test_answers_over_4096_bytes_are_compressed_as_accept_encoding_negotiates(signed_post, large_item, accept, chosen):
    """R3: DynamoDB compresses an answer over 4096 bytes with the coding its Accept-Encoding negotiation picks."""
    answer = signed_post("GetItem", large_item, {"Accept-Encoding": accept})
    assert answer.status == 200
    assert answer.headers.get("content-encoding") == chosen
    assert int(answer.headers["x-amz-crc32"]) == zlib.crc32(answer.body)  # the checksum is of the bytes sent
    assert orjson.loads(decoded(answer))["Item"]["pk"] == {"S": "large"}
    if chosen is not None:
        assert len(answer.body) < len(decoded(answer))


def test_answers_of_4096_bytes_or_less_are_never_compressed(signed_post, table):
    """R3: below DynamoDB's 4096-byte threshold an answer goes out as it is, whatever the client accepts."""
    answer = signed_post("DescribeTable", orjson.dumps({"TableName": table}), {"Accept-Encoding": "gzip, deflate"})
    assert answer.status == 200 and len(answer.body) <= 4096
    assert "content-encoding" not in answer.headers
    assert orjson.loads(answer.body)["Table"]["TableName"] == table


def test_a_150_kb_batch_answer_is_compressed(signed_post, dynamodb, table):
    """R3: large answers such as a 150 KB BatchGetItem are compressed too, and decode to the whole answer."""
    for n in range(2):
        dynamodb.put_item(TableName=table, Item={"pk": {"S": f"wide-{n}"}, "text": {"S": f"{n} " * 37_500}})
    keys = [{"pk": {"S": f"wide-{n}"}} for n in range(2)]
    request = {"RequestItems": {table: {"Keys": keys, "ConsistentRead": True}}}
    answer = signed_post("BatchGetItem", orjson.dumps(request), {"Accept-Encoding": "gzip"})
    assert answer.status == 200 and answer.headers.get("content-encoding") == "gzip"
    assert int(answer.headers["x-amz-crc32"]) == zlib.crc32(answer.body)
    items = orjson.loads(gzip.decompress(answer.body))["Responses"][table]
    assert sorted(item["pk"]["S"] for item in items) == ["wide-0", "wide-1"]
    assert len(answer.body) < 150_000 / 10


# --------------------------------------------------------------------------------------------------- CORS


def test_a_request_with_origin_gets_cors_headers(signed_post):
    """R14: DynamoDB answers any request carrying Origin with Access-Control-Allow-Origin * and Expose-Headers."""
    answer = signed_post("ListTables", b"{}", {"Origin": "https://app.example"})
    assert answer.status == 200
    assert answer.headers["access-control-allow-origin"] == "*"
    assert "x-amzn-RequestId".lower() in answer.headers["access-control-expose-headers"].lower()


def test_an_error_answer_with_origin_gets_cors_headers_too(signed_post):
    """R14: CORS headers go on every answer to a request with Origin, errors included."""
    answer = signed_post("DescribeTable", b'{"TableName": "no-such-table-here"}', {"Origin": "https://app.example"})
    assert answer.status == 400
    assert answer.headers["access-control-allow-origin"] == "*"


def test_without_origin_there_are_no_cors_headers(signed_post):
    """R14: DynamoDB sends no CORS headers to a request without Origin."""
    answer = signed_post("ListTables", b"{}")
    assert answer.status == 200
    assert not [name for name in answer.headers if name.startswith("access-control-")]


def test_a_preflight_echoes_what_it_asks_for(signed_post):
    """R14: DynamoDB answers an OPTIONS preflight with the requested method and headers echoed and a Max-Age."""
    asked = "content-type,x-amz-target,authorization,x-amz-date"
    answer = signed_post(
        "ListTables",
        b"",
        {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
         "Access-Control-Request-Headers": asked},
        method="OPTIONS",
        sign=False,  # browsers send preflights unsigned
    )  # fmt: skip
    assert answer.status == 200
    assert answer.headers["access-control-allow-origin"] == "*"
    assert answer.headers["access-control-allow-methods"] == "POST"
    assert answer.headers["access-control-allow-headers"] == asked
    assert int(answer.headers["access-control-max-age"]) > 0


# ----------------------------------------------------------------------------------------- paths, address


def test_a_post_to_another_path_is_not_an_operation(signed_post):
    """R14: DynamoDB serves its API on / only; a POST elsewhere is 404 (or refused as badly signed)."""
    answer = signed_post("ListTables", b"{}", path="/tables")
    assert answer.status == 404 or (answer.status in (400, 403) and b"Signature" in answer.body), answer


def test_describe_endpoints_names_the_endpoint_itself(dynamodb, region_endpoint):
    """R19: DescribeEndpoints answers the address the client reached (so endpoint discovery stays there)."""
    [endpoint] = dynamodb.describe_endpoints()["Endpoints"]
    assert endpoint["Address"] == urlsplit(region_endpoint).netloc
    assert endpoint["CachePeriodInMinutes"] > 0
