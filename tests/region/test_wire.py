"""The DynamoDB JSON 1.0 wire protocol of a real region process, spoken raw (http.client) and through boto3.

What DynamoDB does with requests it cannot take is part of its API: clients and conformance suites rely on the
status, the `__type` and the framing headers. The expectations follow dynalite's connection tests (recorded against
the live service) and ../shared/reference/dynamodb-facts.md §4.
"""

from __future__ import annotations

import http.client
import json
import re
import time
import zlib
from urllib.parse import urlsplit

import orjson
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from globaltables.region import wire

AMZ_JSON = "application/x-amz-json-1.0"
SERIALIZATION = "com.amazon.coral.service#SerializationException"
UNKNOWN_OPERATION = "com.amazon.coral.service#UnknownOperationException"
REQUEST_ID = re.compile(r"[0-9A-Z]{52}")


class Answer:
    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def json(self):
        return orjson.loads(self.body)

    @property
    def type(self) -> str:
        return self.json.get("__type", "")

    def __repr__(self) -> str:
        return f"<{self.status} {self.body[:300]!r}>"


def raw(endpoint: str, body: bytes = b"", headers: dict | None = None, method: str = "POST", path: str = "/") -> Answer:
    parts = urlsplit(endpoint)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()


def signed(endpoint: str, target: str, body: bytes, content_type: str = AMZ_JSON) -> dict:
    """Headers of a request signed as botocore signs it (with dummy credentials)."""
    request = AWSRequest(
        method="POST", url=endpoint + "/", data=body, headers={"X-Amz-Target": target, "Content-Type": content_type}
    )
    SigV4Auth(Credentials("testing", "testing"), "dynamodb", "us-east-1").add_auth(request)
    return dict(request.headers.items())


def call(endpoint: str, operation: str, body: bytes | dict, content_type: str = AMZ_JSON) -> Answer:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()  # json: orjson refuses ints over 64 bits
    target = f"DynamoDB_20120810.{operation}"
    return raw(endpoint, data, signed(endpoint, target, data, content_type))


def assert_framed(answer: Answer, content_type: str = AMZ_JSON) -> None:
    """The headers every DynamoDB answer carries, with a checksum of the exact body bytes."""
    assert REQUEST_ID.fullmatch(answer.headers["x-amzn-RequestId"]), answer.headers
    assert answer.headers["x-amz-crc32"] == str(zlib.crc32(answer.body))
    assert answer.headers["Content-Type"] == content_type
    assert int(answer.headers["Content-Length"]) == len(answer.body)


# ---------------------------------------------------------------------------------------------- bad requests


@pytest.mark.parametrize("body", [b"{", b'{"TableName": ', b"not json", b'{"a":1}}', b"\xff\xfe", b"[" * 5000])
def test_unparseable_body_is_serialization_exception(region_endpoint, body):
    answer = call(region_endpoint, "ListTables", body)
    assert answer.status == 400, answer
    assert answer.json == {"__type": SERIALIZATION}  # DynamoDB sends no message here
    assert_framed(answer)


@pytest.mark.parametrize("body", [b"[]", b'"PutItem"', b"1", b"null", b"true"])
def test_body_that_is_not_an_object_is_serialization_exception(region_endpoint, body):
    answer = call(region_endpoint, "PutItem", body)
    assert answer.status == 400, answer
    assert answer.type == SERIALIZATION
    assert_framed(answer)


@pytest.mark.parametrize(
    "target",
    ["DynamoDB_20120810.NoSuchOperation", "DynamoDB_20120810", "DynamoDB_20120810.", "DynamoDB_20111205.ListTables",
     "Foo.ListTables", "ListTables", "DynamoDB_20120810.ListTables.Extra", ""],
)  # fmt: skip
def test_unknown_target_is_unknown_operation(region_endpoint, target):
    answer = raw(region_endpoint, b"{}", signed(region_endpoint, target, b"{}"))
    assert answer.status == 400, answer
    assert answer.type == UNKNOWN_OPERATION
    assert_framed(answer)


def test_missing_target_is_unknown_operation(region_endpoint):
    answer = raw(region_endpoint, b"{}", {"Content-Type": AMZ_JSON})
    assert (answer.status, answer.json) == (400, {"__type": UNKNOWN_OPERATION})
    assert_framed(answer)


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/xml", "application/x-amz-json-1.1"])
def test_wrong_content_type_is_not_found(region_endpoint, content_type):
    # No JSON protocol was selected, so DynamoDB answers a bare 404 with an XML body, whatever the target.
    headers = {"X-Amz-Target": "DynamoDB_20120810.ListTables"}
    if content_type:
        headers["Content-Type"] = content_type
    answer = raw(region_endpoint, b"{}", headers)
    assert (answer.status, answer.body) == (404, b"<UnknownOperationException/>\n")
    assert_framed(answer)


@pytest.mark.parametrize("method,path", [("PUT", "/"), ("DELETE", "/"), ("GET", "/health"), ("GET", "/index.html")])
def test_other_methods_and_paths_are_not_found(region_endpoint, method, path):
    answer = raw(region_endpoint, b"", {}, method=method, path=path)
    assert answer.status == 404
    assert_framed(answer)


def test_health_check(region_endpoint):
    answer = raw(region_endpoint, method="GET")
    host = urlsplit(region_endpoint).netloc
    # DynamoDB answers "healthy: dynamodb.<region>.amazonaws.com ": its own host name, which is ours here.
    assert answer.status == 200
    assert answer.body.decode().strip() == f"healthy: {host}"
    assert_framed(answer, "text/plain")


def test_missing_authentication(region_endpoint):
    headers = {"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": AMZ_JSON}
    answer = raw(region_endpoint, b"{}", headers)
    assert answer.status == 400
    assert answer.json == {
        "__type": "com.amazon.coral.service#MissingAuthenticationTokenException",
        "message": "Request is missing Authentication Token",
    }
    assert_framed(answer)


def test_incomplete_signature(region_endpoint):
    headers = {"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": AMZ_JSON, "Authorization": "AWS4-"}
    answer = raw(region_endpoint, b"{}", headers)
    assert answer.status == 400
    assert answer.json == {
        "__type": "com.amazon.coral.service#IncompleteSignatureException",
        "message": "Authorization header requires 'Credential' parameter. "
        "Authorization header requires 'Signature' parameter. "
        "Authorization header requires 'SignedHeaders' parameter. "
        "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. "
        "Authorization=AWS4-",
    }


def test_any_signature_is_accepted(region_endpoint):
    # Without credentials configured signatures are not verified: a made-up one of this region and time passes
    # authentication (and then fails on the missing table name).
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    headers = {
        "X-Amz-Target": "DynamoDB_20120810.GetItem",
        "Content-Type": AMZ_JSON,
        "X-Amz-Date": date,
        "Authorization": f"AWS4-HMAC-SHA256 Credential=anyone/{date[:8]}/us-east-1/dynamodb/aws4_request, "
        "SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=0123",
    }
    answer = raw(region_endpoint, b"{}", headers)
    assert answer.status == 400, answer
    assert answer.type == "com.amazon.coral.validate#ValidationException"


def test_empty_body_is_an_empty_input(region_endpoint):
    answer = call(region_endpoint, "GetItem", b"")
    assert answer.status == 400, answer
    assert answer.type == "com.amazon.coral.validate#ValidationException"


def test_plain_json_content_type_is_accepted_and_echoed(region_endpoint):
    answer = call(region_endpoint, "GetItem", b"{", content_type="application/json")
    assert answer.type == SERIALIZATION
    assert_framed(answer, "application/json")
    answer = call(region_endpoint, "GetItem", b"{", content_type="application/x-amz-json-1.0; charset=utf-8")
    assert answer.type == SERIALIZATION
    assert_framed(answer)


def test_streams_target_is_routed(region_endpoint):
    # Until streams exist the operation is refused, but as an operation of a known service, never a bare 404/500.
    data = b"{}"
    answer = raw(region_endpoint, data, signed(region_endpoint, "DynamoDBStreams_20120810.ListStreams", data))
    assert answer.status in (200, 400), answer
    if answer.status == 400:
        assert answer.type == UNKNOWN_OPERATION and "ListStreams" in answer.json["message"]
    assert_framed(answer)


# ------------------------------------------------------------------------------------------------ body limits


def test_request_over_16_mib_is_refused_with_413(region_endpoint):
    body = b'{"TableName": "x", "pad": "' + b"x" * wire.MAX_REQUEST_BYTES + b'"}'
    answer = call(region_endpoint, "GetItem", body)
    assert answer.status == 413, answer
    assert answer.type.endswith("#RequestEntityTooLargeException")
    assert_framed(answer)
    assert call(region_endpoint, "GetItem", b"{").type == SERIALIZATION  # and the region is fine


def test_request_of_exactly_16_mib_is_read(region_endpoint):
    prefix, suffix = b'{"TableName": "x", "pad": "', b'"}'
    body = prefix + b"x" * (wire.MAX_REQUEST_BYTES - len(prefix) - len(suffix)) + suffix
    assert len(body) == wire.MAX_REQUEST_BYTES
    answer = call(region_endpoint, "GetItem", body)
    assert answer.status == 400, answer  # refused by the operation, not by the size check
    assert answer.type != SERIALIZATION and "TooLarge" not in answer.type


def test_declared_oversize_is_refused_without_reading_the_body(region_endpoint):
    parts = urlsplit(region_endpoint)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest("POST", "/")
        for name, value in signed(region_endpoint, "DynamoDB_20120810.PutItem", b"{}").items():
            if name.lower() != "content-length":
                connection.putheader(name, value)
        connection.putheader("Content-Length", str(wire.MAX_REQUEST_BYTES + 1))
        connection.endheaders()  # no body follows: the answer must not wait for one
        response = connection.getresponse()
        assert response.status == 413
        response.read()
    finally:
        connection.close()


# ---------------------------------------------------------------------------------------------------- framing


def test_every_answer_is_framed_and_request_ids_are_fresh(region_endpoint):
    answers = [
        call(region_endpoint, "GetItem", b"{"),
        call(region_endpoint, "GetItem", {"TableName": "no-such-table", "Key": {"k": {"S": "1"}}}),
        call(region_endpoint, "NoSuchOperation", {}),
        raw(region_endpoint, b"{}", {"Content-Type": AMZ_JSON, "X-Amz-Target": "DynamoDB_20120810.GetItem"}),
    ]
    for answer in answers:
        assert_framed(answer)
    ids = [answer.headers["x-amzn-RequestId"] for answer in answers]
    assert len(set(ids)) == len(ids)


# ------------------------------------------------------------------------------------ nothing malformed is a 500

MALFORMED_BODIES = [
    {},
    {"TableName": 1},
    {"TableName": None},
    {"TableName": {"S": "x"}},
    {"TableName": ["x"]},
    {"TableName": "x" * 300},
    {"TableName": "bad name!"},
    {"TableName": "tbl", "Key": "k"},
    {"TableName": "tbl", "Key": {"k": "v"}},
    {"TableName": "tbl", "Key": {"k": {"S": 1}}},
    {"TableName": "tbl", "Key": {"k": {"N": "NaN"}}},
    {"TableName": "tbl", "Key": {"k": {"N": "1e99999"}}},
    {"TableName": "tbl", "Key": {"k": {"B": "not base64!"}}},
    {"TableName": "tbl", "Key": {"k": {"S": "a", "N": "1"}}},
    {"TableName": "tbl", "Key": {"k": {}}},
    {"TableName": "tbl", "Key": {"k": {"SS": []}}},
    {"TableName": "tbl", "Key": {"k": {"L": "x"}}},
    {"TableName": "tbl", "Key": {"k": {"M": []}}},
    {"TableName": "tbl", "Key": {"k": {"BOOL": "yes"}}},
    {"TableName": "tbl", "Key": {"k": {"NULL": False}}},
    {"TableName": "tbl", "Item": []},
    {"TableName": "tbl", "Item": {"k": {"S": "a"}, "": {"S": "b"}}},
    {"TableName": "tbl", "Limit": "ten"},
    {"TableName": "tbl", "Limit": -1},
    {"TableName": "tbl", "Limit": 2**70},
    {"TableName": "tbl", "Limit": 1.5},
    {"TableName": "tbl", "ExclusiveStartKey": 5},
    {"TableName": "tbl", "ConditionExpression": "((((", "Key": {"k": {"S": "a"}}},
    {"TableName": "tbl", "UpdateExpression": "SET", "Key": {"k": {"S": "a"}}},
    {"TableName": "tbl", "KeyConditionExpression": "k = :v", "ExpressionAttributeValues": {":v": "x"}},
    {"TableName": "tbl", "ExpressionAttributeNames": {"#a": 5}, "ProjectionExpression": "#a"},
    {"TableName": "tbl", "ReturnValues": 7},
    {"TableName": "tbl", "KeySchema": "x", "AttributeDefinitions": {}},
    {"TableName": "tbl", "KeySchema": [{"AttributeName": "k"}], "AttributeDefinitions": [None]},
    {"TableName": "tbl", "BillingMode": ["PAY_PER_REQUEST"]},
    {"TableName": "tbl", "ProvisionedThroughput": {"ReadCapacityUnits": "1"}},
    {"TableName": "tbl", "GlobalSecondaryIndexes": [{}]},
    {"ExclusiveStartTableName": 3, "Limit": "x"},
]
OPERATIONS = [
    "CreateTable", "DescribeTable", "ListTables", "UpdateTable", "DeleteTable",
    "PutItem", "GetItem", "UpdateItem", "DeleteItem", "Query", "Scan",
]  # fmt: skip


@pytest.mark.parametrize("operation", OPERATIONS)
def test_malformed_requests_never_get_a_500(region_endpoint, operation):
    failures = []
    for body in MALFORMED_BODIES:
        answer = call(region_endpoint, operation, body)
        if answer.status >= 500 or b"Traceback" in answer.body:
            failures.append((body, answer))
        assert_framed(answer)
    assert not failures, failures


# ----------------------------------------------------------------------------------------------- through boto3


def test_boto3_list_tables(dynamodb, unique_table_name):
    response = dynamodb.list_tables()
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert REQUEST_ID.fullmatch(response["ResponseMetadata"]["RequestId"])
    assert isinstance(response["TableNames"], list)


def test_boto3_create_and_describe_table(dynamodb, unique_table_name):
    name = unique_table_name("wire")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})
    table = dynamodb.describe_table(TableName=name)["Table"]
    assert table["TableName"] == name and table["TableStatus"] == "ACTIVE"
    assert name in dynamodb.list_tables()["TableNames"]


def test_boto3_error_is_parsed_with_code_and_request_id(dynamodb):
    with pytest.raises(ClientError) as caught:
        dynamodb.get_item(TableName="no-such-table", Key={"k": {"S": "1"}})
    error = caught.value.response
    assert error["Error"]["Code"] == "ResourceNotFoundException"
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert REQUEST_ID.fullmatch(error["ResponseMetadata"]["RequestId"])


def test_an_operation_globaltables_lacks_is_refused_by_name(dynamodb):
    with pytest.raises(ClientError) as caught:
        dynamodb.list_exports()
    error = caught.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["Error"]["Message"] == "ListExports is not supported by globaltables"


@pytest.fixture(scope="module")
def fuzz_table(dynamodb, unique_table_name):
    name = unique_table_name("fuzz")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})
    dynamodb.put_item(TableName=name, Item={"k": {"S": "a"}, "v": {"N": "1"}})
    return name


def test_refused_requests_on_a_real_table_change_nothing(region_endpoint, dynamodb, fuzz_table):
    # Some of these bodies are valid for some operations (DynamoDB ignores members an operation does not define),
    # so only the refused ones are held to "changes nothing".
    failures = []
    for operation in ["PutItem", "GetItem", "UpdateItem", "DeleteItem", "Query", "Scan", "UpdateTable"]:
        for body in MALFORMED_BODIES:
            if body.get("TableName") != "tbl":
                continue
            before = dynamodb.scan(TableName=fuzz_table, ConsistentRead=True)["Items"]
            answer = call(region_endpoint, operation, {**body, "TableName": fuzz_table})
            if answer.status >= 500:
                failures.append((operation, body, answer))
            elif answer.status >= 400 and dynamodb.scan(TableName=fuzz_table, ConsistentRead=True)["Items"] != before:
                failures.append((operation, body, answer, "changed the table"))
    assert not failures, failures


# ------------------------------------------------------------------------------------- the protocol, in-process


class ExplodingEngine:
    def execute(self, operation, request, encoded=False):
        raise RuntimeError("secret internal detail")


def test_unexpected_exception_is_a_generic_500_without_traceback(caplog):
    headers = signed("http://127.0.0.1:1", "DynamoDB_20120810.ListTables", b"{}")
    status, body, version = wire.answer(ExplodingEngine(), headers, "", b"{}")
    assert version is None
    assert status == 500
    assert orjson.loads(body) == {
        "__type": "com.amazonaws.dynamodb.v20120810#InternalServerError",
        "message": "Internal server error",
    }
    assert b"secret" not in body
    assert "secret internal detail" in caplog.text  # the traceback is in the server log


def test_request_ids_look_like_dynamodbs_and_never_repeat():
    ids = wire.RequestIds()
    drawn = [ids.next() for _ in range(1000)] + [wire.RequestIds().next()]
    assert all(REQUEST_ID.fullmatch(i) for i in drawn)
    assert len(set(drawn)) == len(drawn)


@pytest.mark.parametrize(
    "query,message",
    [
        ("X-Amz-Algorithm=AWS4-HMAC-SHA256", (
            "AWS query-string parameters must include 'X-Amz-Credential'. "
            "AWS query-string parameters must include 'X-Amz-Signature'. "
            "AWS query-string parameters must include 'X-Amz-SignedHeaders'. "
            "AWS query-string parameters must include 'X-Amz-Date'. Re-examine the query-string parameters."
        )),
        ("X-Amz-Algorithm=a&X-Amz-Credential=b&X-Amz-Signature=c&X-Amz-SignedHeaders=d&X-Amz-Date=e", None),
    ],
)  # fmt: skip
def test_presigned_query_string_authentication(query, message):
    if message is None:
        wire.check_authentication({}, query)
        return
    with pytest.raises(wire.IncompleteSignatureException) as caught:
        wire.check_authentication({}, query)
    assert caught.value.message == message


def test_header_and_query_authentication_together_is_invalid():
    with pytest.raises(wire.InvalidSignatureException):
        wire.check_authentication({"Authorization": "AWS4-HMAC-SHA256 x"}, "X-Amz-Algorithm=AWS4-HMAC-SHA256")


def test_unknown_operation_is_refused_before_authentication(region_endpoint):
    headers = {"X-Amz-Target": "DynamoDB_20120810.NoSuchOperation", "Content-Type": AMZ_JSON}
    answer = raw(region_endpoint, b"{}", headers)
    assert (answer.status, answer.json) == (400, {"__type": UNKNOWN_OPERATION})
