"""What request signature checks cost on the request path, in process (no HTTP): µs per PutItem through
`wire.answer` with no signing checks (the baseline, measured in the same run), the default checks (signing window
and credential scope, region/signing.py) and full SigV4 verification against a configured key.

Each request is signed once by botocore beforehand, as a client would; only the region's side is timed.

Usage: python bench/signing.py [REQUESTS]   (default 20,000 per variant)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from botocore.auth import SigV4Auth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402

from globaltables.engine.engine import Engine  # noqa: E402
from globaltables.engine.storage.sqlite_store import SqliteStore  # noqa: E402
from globaltables.region import wire  # noqa: E402
from globaltables.region.http_front import Headers  # noqa: E402
from globaltables.region.signing import AccessKey, RequestSigning  # noqa: E402
from globaltables.runtime.clock import SystemClock  # noqa: E402

KEY, SECRET = "AKIDBENCH", "bench-secret"


def requests(count: int) -> list[tuple[Headers, bytes]]:
    out = []
    for n in range(count):
        body = json.dumps({"TableName": "Bench", "Item": {"pk": {"S": f"p{n % 1000}"}, "v": {"N": str(n)}}}).encode()
        request = AWSRequest(method="POST", url="http://127.0.0.1:8000/", data=body,
                             headers={"X-Amz-Target": "DynamoDB_20120810.PutItem",
                                      "Content-Type": "application/x-amz-json-1.0"})  # fmt: skip
        SigV4Auth(Credentials(KEY, SECRET), "dynamodb", "us-east-1").add_auth(request)
        headers = Headers({name.lower(): value for name, value in request.headers.items()})
        headers["host"] = "127.0.0.1:8000"
        out.append((headers, body))
    return out


def run(signing, batch: list[tuple[Headers, bytes]]) -> float:
    engine = Engine(SqliteStore(None), SystemClock())
    engine.handle("CreateTable", {
        "TableName": "Bench", "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    began = time.perf_counter()
    for headers, body in batch:
        status, answer = wire.answer(engine, headers, "", body, signing)
        assert status == 200, answer
    return (time.perf_counter() - began) / len(batch) * 1e6


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    batch = requests(count)
    clock = SystemClock()
    variants = {
        "no checks (baseline)": None,
        "default (window, scope)": RequestSigning("us-east-1", clock),
        "verified (SigV4, botocore)": RequestSigning("us-east-1", clock, {KEY: AccessKey(SECRET)}),
    }
    baseline = None
    for name, signing in variants.items():
        micros = run(signing, batch)
        baseline = baseline or micros
        print(f"{name:28s} {micros:8.1f} µs/request   x{micros / baseline:.2f}")


if __name__ == "__main__":
    main()
