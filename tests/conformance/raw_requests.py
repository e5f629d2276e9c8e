"""DynamoDB requests sent as raw JSON over HTTP, signed as botocore signs them, for bodies boto3 would refuse or
rewrite on the client side (unknown AttributeValue members, nulls, JSON of the wrong type)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AMZ_JSON = "application/x-amz-json-1.0"


def raw_call(endpoint: str, operation: str, body: dict | bytes, region: str = "us-east-1") -> tuple[int, dict]:
    """POST one operation; the HTTP status and the decoded JSON answer."""
    status, payload = raw_post(endpoint, operation, body, region)
    return status, (json.loads(payload) if payload else {})


def raw_post(endpoint: str, operation: str, body: dict | bytes, region: str = "us-east-1") -> tuple[int, bytes]:
    """POST one operation; the HTTP status and the answer's bytes as sent."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = AWSRequest(
        method="POST",
        url=endpoint + "/",
        data=data,
        headers={"X-Amz-Target": f"DynamoDB_20120810.{operation}", "Content-Type": AMZ_JSON},
    )
    SigV4Auth(Credentials("testing", "testing"), "dynamodb", region).add_auth(request)
    parts = urlsplit(endpoint)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.request("POST", "/", body=data, headers=dict(request.headers.items()))
        response = connection.getresponse()
        payload = response.read()
    finally:
        connection.close()
    return response.status, payload


def error_type(answer: dict) -> str:
    """The error name of a DynamoDB error body ("com.amazon.coral.validate#ValidationException" -> its last part)."""
    return answer.get("__type", "").rpartition("#")[2]


def error_message(answer: dict) -> str:
    return answer.get("message", answer.get("Message", ""))
