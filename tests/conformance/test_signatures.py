"""The signing checks DynamoDB applies without knowing any key (conformance notes R11 and R21), through boto3.

Why: a client whose clock is more than 5 minutes off, or that signs for another region or service, is refused by
DynamoDB with InvalidSignatureException; a testbed that served it would hide a bug the real service reports (in a
multi-region testbed, writes silently landing in the wrong region). Any key is accepted.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from conformance.signing_clock import signed_minutes_ago
from conformance.tables import error_of as refused

AMZ_JSON = "application/x-amz-json-1.0"


def test_any_key_is_accepted(client_factory):
    # R11: without a key store the service cannot check keys; a region without credentials configured does not.
    client_factory().list_tables()


def test_a_request_signed_20_minutes_ago_is_refused(client_factory):
    # R11: "Signature expired: <date> is now earlier than <limit> (<now> - 5 min.)".
    client = client_factory()
    with signed_minutes_ago(20):
        code, message = refused(client.list_tables)
    assert code == "InvalidSignatureException"
    assert message.startswith("Signature expired: ") and message.endswith(" - 5 min.)")


def test_a_request_signed_20_minutes_ahead_is_refused(client_factory):
    # R11: "Signature not yet current: <date> is still later than <limit> (<now> + 5 min.)".
    client = client_factory()
    with signed_minutes_ago(-20):
        code, message = refused(client.list_tables)
    assert code == "InvalidSignatureException"
    assert message.startswith("Signature not yet current: ") and message.endswith(" + 5 min.)")


def test_a_request_signed_for_another_region_is_refused(client_factory, unique_table_name):
    # R21: a client configured for eu-west-1 pointed at us-east-1's endpoint writes nothing.
    name = unique_table_name("scoped")
    code, message = refused(lambda: client_factory(region="eu-west-1").create_table(
        TableName=name, AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST"))  # fmt: skip
    assert (code, message) == (
        "InvalidSignatureException",
        "Credential should be scoped to a valid region, not 'eu-west-1'. ",
    )
    assert name not in client_factory().list_tables()["TableNames"]


def test_a_request_signed_for_another_service_is_refused(region_endpoint):
    # R21: the service in the credential scope must be dynamodb.
    headers = {"X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": AMZ_JSON}
    request = AWSRequest(method="POST", url=region_endpoint + "/", data=b"{}", headers=headers)
    SigV4Auth(Credentials("testing", "testing"), "s3", "us-east-1").add_auth(request)
    parts = urlsplit(region_endpoint)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("POST", "/", body=b"{}", headers=dict(request.headers.items()))
        response = connection.getresponse()
        status, answer = response.status, json.loads(response.read())
    finally:
        connection.close()
    assert status == 400
    assert answer == {
        "__type": "com.amazon.coral.service#InvalidSignatureException",
        "message": "Credential should be scoped to correct service: 'dynamodb'. ",
    }
