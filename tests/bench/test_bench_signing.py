"""The benchmarks' clients sign requests a region accepts now: dated when sent, scoped to the region they go to.

Why: a region refuses a signing date outside 5 minutes of its clock and a credential scope naming another region
(region/signing.py), so a bench whose client signs once, with a fixed date or for one region only, fails the
moment it is run ("Signature expired", "Credential should be scoped to a valid region"). Running every bench end
to end takes most of a minute here (three-region topologies started and stopped), so this checks each bench's
signing helper against the region's own check instead, in process: `RequestSigning` with the system clock for
"now", and with a manual clock for a request sent long after the client was made.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from botocore.awsrequest import AWSResponse

from globaltables.region.http_front import Headers
from globaltables.region.signing import RequestSigning
from globaltables.region.wire import InvalidSignatureException
from globaltables.runtime.clock import ManualClock, SystemClock
from globaltables.topology.credentials import AccessKey

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(name: str) -> ModuleType:
    """bench/<name>.py as a module (bench/ on the path for the modules it imports by plain name)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    module_name = f"bench_{name}"
    if module_name not in sys.modules:  # registered before it runs: its dataclasses look their module up
        spec = importlib.util.spec_from_file_location(module_name, BENCH / f"{name}.py")
        sys.modules[module_name] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[module_name]


def head_headers(head: bytes) -> Headers:
    """The headers of a pre-framed request head (request line first, up to a trailing `Content-Length: `)."""
    lines = head.decode("latin-1").split("\r\n")[1:]
    return Headers({name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)})


def accepts(region: str, headers: Headers, clock=None, keys=None, body: bytes = b"") -> None:
    RequestSigning(region, clock or SystemClock(), keys).verify(headers, "", body)


# ------------------------------------------------------------------------------------ the raw HTTP client


def test_sigv4_header_lines_are_accepted_now_by_their_region_only():
    sigv4 = load("_sigv4")
    headers = head_headers(b"POST / HTTP/1.1\r\n" + sigv4.header_lines("eu-west-1", time.time()))
    accepts("eu-west-1", headers)
    with pytest.raises(
        InvalidSignatureException, match="Credential should be scoped to a valid region, not 'eu-west-1'"
    ):
        accepts("us-east-1", headers)


def test_region_throughput_client_dates_each_request_when_it_is_sent():
    bench = load("region_throughput")
    client = bench.Client("127.0.0.1", 8000)
    accepts(bench.REGION, head_headers(client.prefix("PutItem")))
    # Half an hour later, the same client (its request heads are cached) signs with the new time.
    later = time.time() + 1800
    client.signer.clock = lambda: later
    head = client.prefix("PutItem")
    accepts(bench.REGION, head_headers(head), ManualClock(wall_time=later))
    with pytest.raises(InvalidSignatureException, match="Signature not yet current"):
        accepts(bench.REGION, head_headers(head))
    assert head.startswith(b"POST / HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n") and head.endswith(b"Content-Length: ")
    assert b"X-Amz-Target: DynamoDB_20120810.PutItem\r\n" in head


def test_replication_clients_sign_for_the_region_they_talk_to():
    bench = load("replication")
    topology = SimpleNamespace(
        endpoints={region: f"http://127.0.0.1:{9000 + n}" for n, region in enumerate(bench.REGIONS)}
    )
    for region in bench.REGIONS:
        client = bench.client_of(topology, region)
        accepts(region, head_headers(client.prefix("BatchWriteItem")))
        assert client.port == int(topology.endpoints[region].rsplit(":", 1)[1])


# --------------------------------------------------------------------------------------------- botocore


class _Body:
    def stream(self):
        return iter([b"{}"])


def test_mrsc_latency_raw_clients_sign_for_the_region_they_talk_to():
    bench = load("mrsc_latency")
    for region in bench.REGIONS:
        client = bench.RawClient(region, "http://127.0.0.1:9", connect=False)
        data = client.frame("GetItem", {"TableName": "Items", "Key": {"id": {"S": "k"}}})
        head, _, body = data.partition(b"\r\n\r\n")
        accepts(region, head_headers(head), body=body)
        assert b"X-Amz-Target: DynamoDB_20120810.GetItem\r\n" in head and int(head_headers(head)["content-length"]) == len(body)


def test_mrsc_latency_boto3_clients_sign_for_the_region_they_talk_to():
    bench = load("mrsc_latency")
    for region in bench.REGIONS:
        client = bench.Boto3Client(region, "http://127.0.0.1:9").client
        sent = []

        def answer(request, sent=sent, **_):  # what the client would send; nothing goes on the wire
            sent.append(request)
            return AWSResponse(request.url, 200, {}, _Body())

        client.meta.events.register("before-send.dynamodb.GetItem", answer)
        client.get_item(TableName="Items", Key={"id": {"S": "k"}})
        (request,) = sent
        headers = Headers({
            name.lower(): value.decode() if isinstance(value, bytes) else value for name, value in request.headers.items()
        })  # fmt: skip
        accepts(region, headers, body=request.body)


def test_signing_bench_requests_are_accepted_now_with_their_key():
    bench = load("signing")
    ((headers, body),) = bench.requests(1)
    accepts("us-east-1", headers, keys={bench.KEY: AccessKey(bench.SECRET)}, body=body)
