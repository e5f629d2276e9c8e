"""Request signatures (region/signing.py) against real region processes, through boto3, the aws CLI and raw HTTP.

Why: DynamoDB refuses a request whose SigV4 signature does not match the caller's secret, whose key it does not
know, whose signing date is more than 5 minutes from its clock, or whose credential scope names another region or
service, and a refused request changes nothing. With credentials configured a region does the same; without, it
still refuses the wrong date and the wrong scope (conformance notes R11, R21), and accepts any key.
"""

from __future__ import annotations

import datetime
import hashlib
import http.client
import json
import os
import subprocess
import sys
from unittest import mock
from urllib.parse import urlsplit

import botocore.auth
import pytest
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from conformance.aws_cli import run_aws_cli
from conformance.signing_clock import signed_minutes_ago
from conformance.tables import error_of as refused
from globaltables.region.signing import RequestSigning, UnrecognizedClientException
from globaltables.region.wire import IncompleteSignatureException, InvalidSignatureException
from globaltables.runtime.clock import ManualClock
from globaltables.topology.credentials import AccessKey, CredentialsError, load_credentials, parse_credentials
from region_process import CLIENT_CONFIG, SRC, RegionProcess, make_client

KEY, SECRET = "AKIDTESTBED0001", "kJ8s0mNsecret/4ExAmPlE"
EU_KEY, EU_SECRET = "AKIDTESTBEDEU01", "eu-only-secret-value"
TABLE = "Signed"
AMZ_JSON = "application/x-amz-json-1.0"


@pytest.fixture(scope="module")
def keyed_region(tmp_path_factory):
    """A us-east-1 region process that verifies signatures against a credentials file."""
    workdir = tmp_path_factory.mktemp("signed-region")
    credentials = workdir / "credentials.yaml"
    credentials.write_text(f"{KEY}: {SECRET}\n{EU_KEY}:\n  secret: {EU_SECRET}\n  regions: [eu-west-1]\n")
    process = RegionProcess("us-east-1", workdir, extra_args=("--credentials", str(credentials)))
    process.start()
    good = keyed_client(process.endpoint)
    good.create_table(
        TableName=TABLE,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        yield process
    finally:
        process.stop()


def keyed_client(endpoint: str, key: str = KEY, secret: str = SECRET, region: str = "us-east-1"):
    import boto3

    return boto3.client(
        "dynamodb", region_name=region, endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
        config=CLIENT_CONFIG,
    )  # fmt: skip


def put(client, pk: str):
    return client.put_item(TableName=TABLE, Item={"pk": {"S": pk}, "v": {"N": "1"}})


def absent(endpoint: str, pk: str) -> bool:
    return "Item" not in keyed_client(endpoint).get_item(TableName=TABLE, Key={"pk": {"S": pk}}, ConsistentRead=True)


# ----------------------------------------------------------------------------------------- with credentials


def test_right_keys_work_with_boto3(keyed_region):
    client = keyed_client(keyed_region.endpoint)
    put(client, "good")
    got = client.get_item(TableName=TABLE, Key={"pk": {"S": "good"}}, ConsistentRead=True)
    assert got["Item"] == {"pk": {"S": "good"}, "v": {"N": "1"}}


def test_right_keys_work_with_the_aws_cli(keyed_region, tmp_path):
    out = run_aws_cli(keyed_region.endpoint, tmp_path, "describe-table", "--table-name", TABLE, key=KEY, secret=SECRET)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["Table"]["TableName"] == TABLE
    wrong = run_aws_cli(keyed_region.endpoint, tmp_path, "list-tables", key=KEY, secret="not-the-secret")
    assert wrong.returncode != 0 and "InvalidSignatureException" in wrong.stderr


def test_wrong_secret_is_refused_and_changes_nothing(keyed_region):
    code, message = refused(lambda: put(keyed_client(keyed_region.endpoint, secret="wrong"), "wrong-secret"))
    assert code == "InvalidSignatureException"
    assert message.startswith(
        "The request signature we calculated does not match the signature you provided. Check your AWS Secret "
        "Access Key and signing method. Consult the service documentation for details.\n\n"
        "The Canonical String for this request should have been\n'POST\n/\n\n"
    )
    assert "The String-to-Sign should have been\n'AWS4-HMAC-SHA256\n" in message
    assert SECRET not in message
    assert absent(keyed_region.endpoint, "wrong-secret")


def test_unknown_key_is_refused_and_changes_nothing(keyed_region):
    code, message = refused(lambda: put(keyed_client(keyed_region.endpoint, key="AKIDNOBODY"), "unknown-key"))
    assert (code, message) == ("UnrecognizedClientException", "The security token included in the request is invalid.")
    assert absent(keyed_region.endpoint, "unknown-key")


def test_key_bound_to_another_region_is_refused_here(keyed_region):
    client = keyed_client(keyed_region.endpoint, EU_KEY, EU_SECRET)
    code, _ = refused(lambda: put(client, "eu-key"))
    assert code == "UnrecognizedClientException"
    assert absent(keyed_region.endpoint, "eu-key")


def test_request_signed_20_minutes_ago_is_refused_and_changes_nothing(keyed_region):
    client = keyed_client(keyed_region.endpoint)
    with signed_minutes_ago(20):
        code, message = refused(lambda: put(client, "stale"))
    assert code == "InvalidSignatureException"
    assert message.startswith("Signature expired: ") and message.endswith(" - 5 min.)")
    assert absent(keyed_region.endpoint, "stale")


def test_request_signed_for_another_region_is_refused_and_changes_nothing(keyed_region):
    client = keyed_client(keyed_region.endpoint, region="eu-west-1")
    code, message = refused(lambda: put(client, "other-region"))
    assert (code, message) == (
        "InvalidSignatureException",
        "Credential should be scoped to a valid region, not 'eu-west-1'. ",
    )
    assert absent(keyed_region.endpoint, "other-region")


def test_an_unsigned_request_is_refused(keyed_region):
    headers = {"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": AMZ_JSON}
    status, answer = post(keyed_region.endpoint, b"{}", headers)
    assert (status, answer) == (400, {
        "__type": "com.amazon.coral.service#MissingAuthenticationTokenException",
        "message": "Request is missing Authentication Token",
    })  # fmt: skip


def test_tampered_signed_header_is_refused(keyed_region):
    body = json.dumps({"TableName": TABLE, "Item": {"pk": {"S": "tampered"}}}).encode()
    headers = sign(keyed_region.endpoint, "DynamoDB_20120810.PutItem", body)
    headers["X-Amz-Target"] = "DynamoDB_20120810.DeleteItem"  # signed as PutItem
    status, answer = post(keyed_region.endpoint, body, headers)
    assert status == 400 and answer["__type"] == "com.amazon.coral.service#InvalidSignatureException"
    tampered_body = body.replace(b"tampered", b"tampered-too")
    status, answer = post(
        keyed_region.endpoint, tampered_body, sign(keyed_region.endpoint, "DynamoDB_20120810.PutItem", body)
    )
    assert status == 400 and answer["__type"] == "com.amazon.coral.service#InvalidSignatureException"
    assert absent(keyed_region.endpoint, "tampered") and absent(keyed_region.endpoint, "tampered-too")


def test_presigned_request(keyed_region):
    # A presigned request carries its signature in the query string (aiohttp serves it, not the fast front).
    target = "DynamoDB_20120810.ListTables"
    url = presign(keyed_region.endpoint, target, SECRET)
    status, answer = post(url, b"", {"X-Amz-Target": target, "Content-Type": AMZ_JSON})
    assert status == 200 and TABLE in answer["TableNames"]
    status, answer = post(
        presign(keyed_region.endpoint, target, "wrong"), b"", {"X-Amz-Target": target, "Content-Type": AMZ_JSON}
    )
    assert status == 400 and answer["__type"] == "com.amazon.coral.service#InvalidSignatureException"
    with signed_minutes_ago(10):
        stale = presign(keyed_region.endpoint, target, SECRET, expires=300)
    status, answer = post(stale, b"", {"X-Amz-Target": target, "Content-Type": AMZ_JSON})
    assert status == 400 and answer["message"].startswith("Signature expired: ")


def test_secrets_stay_out_of_the_log(keyed_region):
    refused(lambda: put(keyed_client(keyed_region.endpoint, secret="wrong"), "log-check"))
    log = keyed_region.log_path.read_text(errors="replace")
    assert SECRET not in log and EU_SECRET not in log


# ------------------------------------------------------------------------------------- the checks, unit by unit


def checks(keys=None, now: float = 1_800_000_000.0) -> tuple[RequestSigning, ManualClock]:
    clock = ManualClock(wall_time=now)
    return RequestSigning("us-east-1", clock, keys), clock


def botocore_headers(body: bytes, when: float, key: str = KEY, secret: str = SECRET, region: str = "us-east-1"):
    headers = {"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": AMZ_JSON}
    request = AWSRequest(method="POST", url="http://localhost:8000/", data=body, headers=headers)
    moment = datetime.datetime.fromtimestamp(when, datetime.UTC).replace(tzinfo=None)
    with mock.patch.object(botocore.auth, "get_current_datetime", lambda: moment):
        SigV4Auth(Credentials(key, secret), "dynamodb", region).add_auth(request)
    headers = {name: value for name, value in request.headers.items()}
    headers["Host"] = "localhost:8000"
    return CaseInsensitive(headers)


class CaseInsensitive(dict):
    def get(self, name, default=None):  # type: ignore[override]
        for key, value in self.items():
            if key.lower() == name.lower():
                return value
        return default


def test_window_is_five_minutes_each_way():
    signing, clock = checks()
    headers = botocore_headers(b"{}", clock.wall_time())
    for offset in (-300, 0, 300):
        clock._wall = 1_800_000_000.0 + offset
        signing.verify(headers, "", b"{}")
    clock._wall = 1_800_000_000.0 + 301
    with pytest.raises(InvalidSignatureException) as caught:
        signing.verify(headers, "", b"{}")
    assert caught.value.message == (
        "Signature expired: 20270115T080000Z is now earlier than 20270115T080001Z (20270115T080501Z - 5 min.)"
    )
    clock._wall = 1_800_000_000.0 - 301
    with pytest.raises(InvalidSignatureException) as caught:
        signing.verify(headers, "", b"{}")
    assert caught.value.message == (
        "Signature not yet current: 20270115T080000Z is still later than 20270115T075959Z (20270115T075459Z + 5 min.)"
    )


def test_signature_is_checked_with_botocores_signer():
    keys = {KEY: AccessKey(SECRET)}
    signing, clock = checks(keys)
    signing.verify(botocore_headers(b'{"Limit": 3}', clock.wall_time()), "", b'{"Limit": 3}')
    with pytest.raises(InvalidSignatureException):
        signing.verify(botocore_headers(b'{"Limit": 3}', clock.wall_time()), "", b'{"Limit": 4}')
    with pytest.raises(UnrecognizedClientException):
        signing.verify(botocore_headers(b"{}", clock.wall_time(), key="AKIDOTHER"), "", b"{}")


def test_a_declared_payload_hash_must_be_the_bodys():
    signing, clock = checks({KEY: AccessKey(SECRET)})
    headers = botocore_headers(b"{}", clock.wall_time())
    headers["X-Amz-Content-Sha256"] = hashlib.sha256(b'{"Limit": 1}').hexdigest()
    with pytest.raises(InvalidSignatureException, match="x-amz-content-sha256"):
        signing.verify(headers, "", b"{}")


def test_malformed_credential_scope():
    signing, clock = checks()
    headers = botocore_headers(b"{}", clock.wall_time())
    headers["Authorization"] = headers["Authorization"].replace(f"{KEY}/", f"{KEY}-", 1)
    with pytest.raises(IncompleteSignatureException) as caught:
        signing.verify(headers, "", b"{}")
    assert caught.value.message.startswith("Credential must have exactly 5 slash-delimited elements")


def test_scope_date_must_match_the_request_date():
    signing, clock = checks()
    headers = botocore_headers(b"{}", clock.wall_time())
    headers["Authorization"] = headers["Authorization"].replace("/20270115/", "/20270114/")
    with pytest.raises(InvalidSignatureException) as caught:
        signing.verify(headers, "", b"{}")
    assert caught.value.message == (
        "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
        "'20270114' != '20270115', from '20270115T080000Z'."
    )


def test_credentials_file_rules(tmp_path):
    assert parse_credentials({"A": "s", "B": {"secret": "t", "regions": ["eu-west-1"]}}, "f") == {
        "A": AccessKey("s"), "B": AccessKey("t", frozenset({"eu-west-1"}))
    }  # fmt: skip
    for document, problem in [
        ({}, "non-empty mapping"),
        ({"A": ""}, "credentials.A: the secret must be a non-empty string"),
        ({"A": {"secret": "s", "region": ["x"]}}, "unknown field 'region'"),
        ({"A": {"secret": "s", "regions": []}}, "credentials.A.regions"),
        ({"A/B": "s"}, "not a valid access key id"),
    ]:
        with pytest.raises(CredentialsError, match=problem):
            parse_credentials(document, "f")
    path = tmp_path / "keys.yaml"
    path.write_text("credentials:\n  AKID: the-secret\n")
    assert load_credentials(path) == {"AKID": AccessKey("the-secret")}
    assert "the-secret" not in repr(load_credentials(path))


def test_region_with_a_bad_credentials_file_exits_2(tmp_path):
    path = tmp_path / "keys.yaml"
    path.write_text("AKID: {secret: 42}\n")
    result = subprocess.run(
        [sys.executable, "-m", "globaltables.cli.main", "region", "--name", "us-east-1", "--in-memory",
         "--credentials", str(path)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )  # fmt: skip
    assert result.returncode == 2
    assert f"{path}: credentials.AKID: the secret must be a non-empty string" in result.stderr


# ------------------------------------------------------------------------------------------------- helpers


def sign(endpoint: str, target: str, body: bytes, key: str = KEY, secret: str = SECRET) -> dict:
    request = AWSRequest(
        method="POST", url=endpoint + "/", data=body, headers={"X-Amz-Target": target, "Content-Type": AMZ_JSON}
    )
    SigV4Auth(Credentials(key, secret), "dynamodb", "us-east-1").add_auth(request)
    return dict(request.headers.items())


def presign(endpoint: str, target: str, secret: str, expires: int = 60) -> str:
    request = AWSRequest(method="POST", url=endpoint + "/", headers={"X-Amz-Target": target, "Content-Type": AMZ_JSON})
    SigV4QueryAuth(Credentials(KEY, secret), "dynamodb", "us-east-1", expires=expires).add_auth(request)
    return request.url


def post(url: str, body: bytes, headers: dict) -> tuple[int, dict]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        path = parts.path or "/"
        connection.request("POST", path + (f"?{parts.query}" if parts.query else ""), body=body, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


# ------------------------------------------------------------------------------------------- from a topology


TOPOLOGY = f"""
name: signed
regions: [{{name: us-east-1}}, {{name: eu-west-1}}]
secret_file: secret
tables:
  - TableName: {TABLE}
    AttributeDefinitions: [{{AttributeName: pk, AttributeType: S}}]
    KeySchema: [{{AttributeName: pk, KeyType: HASH}}]
credentials:
  {KEY}: {SECRET}
  {EU_KEY}: {{secret: {EU_SECRET}, regions: [eu-west-1]}}
"""


def test_topology_credentials_bind_a_key_to_its_regions(tmp_path):
    # Why: a team's key scoped to its region is refused in another region of the same testbed.
    (tmp_path / "topology.yaml").write_text(TOPOLOGY)
    (tmp_path / "secret").write_text("replication-secret-for-the-test\n")
    processes = {
        name: RegionProcess(name, tmp_path / name, extra_args=("--topology", str(tmp_path / "topology.yaml")))
        for name in ("us-east-1", "eu-west-1")
    }
    try:
        endpoints = {name: process.start() for name, process in processes.items()}
        eu = keyed_client(endpoints["eu-west-1"], EU_KEY, EU_SECRET, region="eu-west-1")
        put(eu, "from-eu-key")
        code, _ = refused(lambda: put(keyed_client(endpoints["us-east-1"], EU_KEY, EU_SECRET), "eu-key-in-us"))
        assert code == "UnrecognizedClientException"
        for name, endpoint in endpoints.items():
            keyed_client(endpoint, region=name).describe_table(TableName=TABLE)  # the unbound key works everywhere
            code, _ = refused(make_client(endpoint, region=name).list_tables)  # dummy keys do not
            assert code == "UnrecognizedClientException"
        assert absent(endpoints["us-east-1"], "eu-key-in-us")
        for process in processes.values():
            assert SECRET not in process.log_tail(400) and EU_SECRET not in process.log_tail(400)
    finally:
        for process in processes.values():
            process.stop()


def test_the_projects_own_clients_sign_so_a_keyed_region_accepts_them():
    from globaltables.experiment.load import signed_headers

    keys = {KEY: AccessKey(SECRET)}
    signing, clock = checks(keys)
    body = b'{"TableName": "Orders"}'
    headers = CaseInsensitive(
        signed_headers("http://127.0.0.1:8000", "us-east-1", "Scan", body, clock.wall_time(), keys)
    )
    headers["Host"] = "127.0.0.1:8000"
    signing.verify(headers, "", body)
    unkeyed = CaseInsensitive(signed_headers("http://127.0.0.1:8000", "us-east-1", "Scan", body, clock.wall_time()))
    checks()[0].verify(unkeyed, "", body)  # without keys: a well-formed signature of this region and time
    with pytest.raises(UnrecognizedClientException):
        signing.verify(unkeyed, "", body)


def test_the_header_parse_agrees_with_the_whole_match_on_seeded_headers():
    # The credential part of an Authorization header is parsed once and cached; the signature alone is looked at
    # per request (signing.py `_header_parts`). That must give exactly what matching the whole header gives, for
    # headers every signer sends and for the malformed ones: a seeded generator of both.
    import random

    from globaltables.region import signing

    rng = random.Random(20261202)
    good = {
        "algorithm": ["AWS4-HMAC-SHA256"],
        "credential": [f"AKID{n}/20261202/{r}/dynamodb/aws4_request" for n in range(3) for r in ("us-east-1", "eu")],
        "separator": [", ", ","],
        "signed": ["host;x-amz-date", "content-type;host;x-amz-date;x-amz-target", "host"],
        "signature": ["0" * 64, hashlib.sha256(b"x").hexdigest(), "ab-cd", "ab_cd", "é1", "Z"],
        "after": [""],
    }
    bad = {
        "algorithm": ["AWS4-HMAC-SHA1", "aws4-hmac-sha256", ""],
        "credential": ["AKID/20261202/us-east-1/dynamodb", "A/B/C/D/E/F", "a=b/c/d/e/f", "a,b/c/d/e/f", "a b/c/d/e/f"],
        "separator": [" , ", ",  ", ";", ""],
        "signed": ["", "a,b", "h=1", "a b"],
        "signature": ["", "ab=cd", "ab,cd", "ab cd", "Signature=ab", "=", " 0"],
        "after": [" ", ", x", "=", ","],
    }
    matched = 0
    for _ in range(4000):
        faults = rng.random() < 0.5  # half the headers with one or more parts drawn from the malformed ones
        part = {
            name: rng.choice(bad[name] if faults and rng.random() < 0.3 else good[name]) for name in good
        }
        header = (
            f"{part['algorithm']} Credential={part['credential']}{part['separator']}SignedHeaders={part['signed']}"
            f"{rng.choice(good['separator'])}Signature={part['signature']}{part['after']}"
        )
        whole = signing._HEADER.fullmatch(header)
        expected = None
        if whole is not None:
            key_id, day, region, service, terminator, names, signature = whole.groups()
            expected = ((key_id, day, region, service, terminator, tuple(names.split(";"))), signature)
            matched += 1
        assert signing._header_parts(header) == expected, header
    assert 1000 < matched < 3500  # both kinds were drawn, many times over
