"""The conformance suite's target: a region process of this worktree, an endpoint already running, or DynamoDB itself.

These tests speak only boto3 and HTTP, so they can check any DynamoDB-compatible endpoint the way they check the
testbed, and the real service the same way (that is how a test here earns its claim to be DynamoDB's behaviour):

    python -m pytest tests/conformance                          # a fresh in-memory region process per module
    python -m pytest tests/conformance --endpoint URL           # an endpoint already running (dummy credentials)
    python -m pytest tests/conformance --aws                    # real DynamoDB, the user's credentials and region
    python -m pytest tests/conformance --request-compression    # every request gzip-compressed (any target)
    python -m pytest tests/conformance --region-store disk      # local region processes on SQLite files

Rules
1. Nothing here imports the product (tests/test_conformance_portable.py checks it), and every client comes from
   `client_factory` (or the `dynamodb`/`streams` fixtures built on it), so the options above reach every request.
2. Tests that need a process of their own (restarts, kill -9, a region started with special flags) are marked
   `local_region` and are skipped against another target.
3. Tables get unique names and are deleted at the end of the session on every target (DynamoDB bills for them).
4. `--request-compression` forces botocore's request compression on for every operation: the operation model's
   `requestcompression` trait (gzip) and `request_min_compression_size_bytes=1`, so even `{}` is sent compressed
   (botocore pull request #2959; the AWS SDKs and Tools reference guide, "Request compression"). The session ends
   with a line counting compressed requests, and fails if any request went out uncompressed.
5. No boto3 call may be answered with a 5xx: DynamoDB answers 500 only to bodies it cannot decode (sent raw, by
   `signed_post`) and to strong-consistency requests it cannot serve, neither of which a client here sends. A test
   during which one was fails in its teardown, naming the operation.
"""

from __future__ import annotations

import http.client
import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config

from region_process import REGION_NAME, RegionProcess

# Retries off, so a test sees the first answer (a retry would hide a wrong status or a checksum error).
BASE_CONFIG = Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=60)
DUMMY_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
TESTBED_ACCOUNT = "000000000000"
GZIP_TRAIT = {"encodings": ["gzip"]}
LOCAL_ONLY = "local_region"


@dataclass
class Target:
    """Where the suite's requests go, and with which credentials."""

    kind: str  # "local", "endpoint" or "aws"
    endpoint: str | None  # None: a local region process per module
    region_name: str
    credentials: dict[str, str] = field(default_factory=dict)  # empty: boto3's own chain (--aws)
    compress_requests: bool = False
    sent: int = 0
    compressed: int = 0
    server_errors: list[str] = field(default_factory=list)  # "<operation>: <status>" of every 5xx answer

    @property
    def local(self) -> bool:
        return self.kind == "local"


_target: Target | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _target
    config.addinivalue_line("markers", f"{LOCAL_ONLY}: needs a region process of its own (skipped elsewhere)")
    endpoint, aws = config.getoption("endpoint"), config.getoption("aws")
    if endpoint and aws:
        raise pytest.UsageError("--endpoint and --aws name two different targets; give one")
    if aws:
        region = boto3.Session().region_name or os.environ.get("AWS_REGION") or REGION_NAME
        _target = Target("aws", f"https://dynamodb.{region}.amazonaws.com", region)
    elif endpoint:
        _target = Target("endpoint", endpoint.rstrip("/"), os.environ.get("AWS_REGION", REGION_NAME), DUMMY_CREDENTIALS)
    else:
        _target = Target("local", None, REGION_NAME, DUMMY_CREDENTIALS)
    _target.compress_requests = config.getoption("request_compression")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    assert _target is not None
    if _target.local:
        return
    skip = pytest.mark.skip(reason=f"needs a region process of its own; the target is {_target.kind}")
    here = Path(__file__).parent
    for item in items:
        if here not in item.path.parents:  # the hook sees the whole session's items
            continue
        if item.get_closest_marker(LOCAL_ONLY) is not None or "region_factory" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if _target is not None and _target.compress_requests:
        terminalreporter.write_line(
            f"request compression: {_target.compressed} of {_target.sent} requests sent gzip-compressed"
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _target is not None and _target.compress_requests and _target.compressed != _target.sent:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def target() -> Target:
    assert _target is not None
    return _target


@pytest.fixture(autouse=True)
def _no_server_errors(target: Target) -> Iterator[None]:
    before = len(target.server_errors)
    yield
    if len(target.server_errors) > before:
        pytest.fail(f"answered with a server error: {', '.join(target.server_errors[before:])}")


@pytest.fixture(scope="session")
def region_name(target: Target) -> str:
    return target.region_name


@pytest.fixture(scope="session")
def account_id(target: Target) -> str:
    """The account in ARNs the target builds."""
    if target.kind != "aws":
        return TESTBED_ACCOUNT
    return boto3.client("sts", region_name=target.region_name).get_caller_identity()["Account"]


@pytest.fixture(scope="module")
def region_args() -> tuple[str, ...]:
    """Extra command-line flags of the module's local region process (a module may override this)."""
    return ()


@pytest.fixture(scope="module")
def region(request: pytest.FixtureRequest, tmp_path_factory, region_args) -> Iterator[RegionProcess]:
    """The module's local region process, on the store `--region-store` names."""
    workdir = tmp_path_factory.mktemp("region")
    disk = request.config.getoption("region_store") == "disk"
    process = RegionProcess(REGION_NAME, workdir, data_dir=workdir / "data" if disk else None, extra_args=region_args)
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def region_endpoint(request: pytest.FixtureRequest, target: Target) -> str:
    """The endpoint URL of the target (a local region process, started once per module, when none is given)."""
    if target.endpoint is not None:
        return target.endpoint
    process: RegionProcess = request.getfixturevalue("region")  # started only when there is no other target
    assert process.endpoint is not None
    return process.endpoint


def force_request_compression(client: Any) -> None:
    """Mark every operation of the client's model with the `requestcompression` trait (gzip)."""
    model = client.meta.service_model
    for name in model.operation_names:
        operation = model.operation_model(name)
        operation._operation_model = {**operation._operation_model, "requestcompression": GZIP_TRAIT}
        assert operation.request_compression == GZIP_TRAIT, "botocore no longer reads the trait where it did"


@pytest.fixture(scope="module")
def client_factory(target: Target, region_endpoint: str) -> Callable[..., Any]:
    """`client_factory("dynamodb", config=None, endpoint=None, region=None)`: a boto3 client on the target, or on
    `endpoint` (a region process a test started itself), signing for `region` (default the target's); every client
    of the suite is made here."""

    def count(request, **_kwargs) -> None:
        coding = request.headers.get("Content-Encoding")
        target.sent += 1
        target.compressed += (coding.decode() if isinstance(coding, bytes) else coding) == "gzip"

    def note_server_error(http_response, model, **_kwargs) -> None:
        if http_response is not None and http_response.status_code >= 500:
            target.server_errors.append(f"{model.name}: {http_response.status_code}")

    def make(
        service: str = "dynamodb", config: Config | None = None, endpoint: str | None = None, region: str | None = None
    ) -> Any:
        merged = BASE_CONFIG if config is None else BASE_CONFIG.merge(config)
        if target.compress_requests:
            merged = merged.merge(Config(request_min_compression_size_bytes=1, disable_request_compression=False))
        client = boto3.client(
            service,
            region_name=region or target.region_name,
            endpoint_url=endpoint or region_endpoint,
            config=merged,
            **target.credentials,
        )
        client.meta.events.register("after-call", note_server_error)
        if target.compress_requests:
            force_request_compression(client)
            client.meta.events.register("before-send", count)
        return client

    return make


@pytest.fixture(scope="module")
def dynamodb(client_factory):
    return client_factory("dynamodb")


@pytest.fixture(scope="module")
def streams(client_factory):
    return client_factory("dynamodbstreams")


_table_counter = itertools.count(1)
_run_id = f"{os.getpid():x}{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="session")
def unique_table_name(target: Target) -> Iterator[Callable[[str], str]]:
    """`unique_table_name("Orders")` -> a table name no other test uses; every such table still there at the end
    of the session is deleted (on any target: DynamoDB bills for them)."""
    made: list[str] = []

    def make(prefix: str = "t") -> str:
        made.append(f"{prefix}-{_run_id}-{next(_table_counter)}")
        return made[-1]

    yield make
    if target.local:  # each local region process is gone, with its memory, at the end of its module
        return
    client = boto3.client(
        "dynamodb", region_name=target.region_name, endpoint_url=target.endpoint, config=BASE_CONFIG,
        **target.credentials,
    )  # fmt: skip
    for name in made:
        try:
            client.delete_table(TableName=name)
        except client.exceptions.ResourceNotFoundException:
            pass
        except Exception as error:  # noqa: BLE001 - e.g. a table still being created: say so, delete the rest
            print(f"could not delete table {name}: {error}")


@dataclass(frozen=True)
class RawAnswer:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes


@pytest.fixture(scope="module")
def signed_post(target: Target, region_endpoint: str) -> Callable[..., RawAnswer]:
    """`signed_post(target_operation, body_bytes, headers={}, path="/")`: one SigV4-signed POST sent as the bytes
    given (compressed or not; the signature covers them) over http.client, and the answer as received, undecoded.
    For what boto3 never sends: chosen Content-Encoding and Accept-Encoding headers, Origin, other paths."""
    session = boto3.Session(**target.credentials) if target.credentials else boto3.Session()
    credentials = session.get_credentials()
    parts = urlsplit(region_endpoint)

    def post(operation: str, body: bytes, headers: dict[str, str] | None = None, path: str = "/",
             method: str = "POST", sign: bool = True) -> RawAnswer:  # fmt: skip
        all_headers = {
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": f"DynamoDB_20120810.{operation}",
            **(headers or {}),
        }
        request = AWSRequest(method=method, url=f"{region_endpoint}{path}", data=body, headers=all_headers)
        if sign:
            SigV4Auth(credentials.get_frozen_credentials(), "dynamodb", target.region_name).add_auth(request)
        connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(parts.hostname, parts.port, timeout=60)
        try:
            connection.putrequest(method, path, skip_accept_encoding=True)
            for name, value in request.headers.items():
                connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            return RawAnswer(
                response.status, {name.lower(): value for name, value in response.getheaders()}, response.read()
            )
        finally:
            connection.close()

    return post
