"""DescribeEndpoints: where SDKs with endpoint discovery should send this region's requests.

The engine does not know how it is reached; the region server sets `engine.endpoint_address` (host:port) so
discovering clients stay on the testbed. Without it the answer is the Region's public name, as DynamoDB gives.
"""

from __future__ import annotations

CACHE_PERIOD_MINUTES = 1440


def handle(engine, request: dict) -> dict:
    address = getattr(engine, "endpoint_address", None) or f"dynamodb.{engine.region}.amazonaws.com"
    return {"Endpoints": [{"Address": address, "CachePeriodInMinutes": CACHE_PERIOD_MINUTES}]}
