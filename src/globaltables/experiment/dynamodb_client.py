"""A blocking DynamoDB call from the project's own tools (chaos commands, the chaos target's update-table): one signed
POST of the JSON body, the JSON answer (urllib errors as they come)."""

from __future__ import annotations

import json
import time
import urllib.request

from .load import signed_headers


def dynamodb(endpoint: str, operation: str, body: dict, region: str, credentials=None) -> dict:
    data = json.dumps(body).encode()
    headers = signed_headers(endpoint, region, operation, data, time.time(), credentials)
    request = urllib.request.Request(endpoint, data=data, method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())
