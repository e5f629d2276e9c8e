"""The control API's one client (region/control_client.py), blocking and async, against a small local server that
answers as a region's control API does: the secret travels in its header only, a body makes a POST, and every
failure names route, region and status without ever showing the secret."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import aiohttp
import pytest

from globaltables.region.control_client import AsyncControlClient, ControlClient, ControlError, control_request
from globaltables.runtime.transport import SECRET_HEADER

SECRET = "control-client-test-secret"


class _Handler(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.seen.append((self.command, self.path, headers, body))  # type: ignore[attr-defined]
        if self.headers.get(SECRET_HEADER) != SECRET:
            status, data = 401, b'{"error": "the control API requires the topology\'s shared secret"}'
        elif self.path == "/control/refuse":
            status, data = 409, b'{"error": "ResourceInUseException: no", "type": "ResourceInUseException"}'
        elif self.path == "/control/garbled":
            status, data = 200, b"<html>not json</html>"
        elif self.path == "/control/plain-failure":
            status, data = 500, b"Internal Server Error"
        else:
            status, data = (
                200,
                json.dumps({"method": self.command, "echo": json.loads(body) if body else None}).encode(),
            )
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:  # quiet
        pass


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield httpd, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_body_makes_a_post_of_json_and_none_a_get_with_the_secret_in_its_header_only(server):
    httpd, endpoint = server
    client = ControlClient(SECRET, timeout_s=10)
    assert client.call(endpoint, "/control/status") == {"method": "GET", "echo": None}
    assert client.call(endpoint + "/", "/control/faults", {"heal": True}) == {"method": "POST", "echo": {"heal": True}}
    (get_method, get_path, get_headers, _), (post_method, post_path, _, post_body) = httpd.seen
    assert (get_method, get_path, post_method, post_path) == ("GET", "/control/status", "POST", "/control/faults")
    assert get_headers[SECRET_HEADER] == SECRET and json.loads(post_body) == {"heal": True}
    assert all(SECRET not in path for _, path, _, _ in httpd.seen)
    request = control_request(endpoint, "/control/status", SECRET)
    assert SECRET not in repr(request) and SECRET not in request.url and SECRET not in repr(client)
    with pytest.raises(ValueError, match="a control route is a path"):
        control_request(endpoint, "control/status", SECRET)


def test_a_refusal_names_route_region_endpoint_and_status_and_keeps_the_answer(server):
    _, endpoint = server
    with pytest.raises(ControlError) as refused:
        ControlClient("not-the-secret").call(endpoint, "/control/faults", {"heal": True}, region="eu-west-1")
    error = refused.value
    assert (error.status, error.route, error.region, error.endpoint) == (401, "/control/faults", "eu-west-1", endpoint)
    assert str(error) == (f"eu-west-1 ({endpoint}): POST /control/faults: HTTP 401: the control API requires the "
                          "topology's shared secret")  # fmt: skip
    assert "not-the-secret" not in str(error) and isinstance(error, OSError)
    with pytest.raises(ControlError) as conflict:
        ControlClient(SECRET).call(endpoint, "/control/refuse", {"op": "join"})
    assert conflict.value.status == 409 and conflict.value.answer["type"] == "ResourceInUseException"
    with pytest.raises(ControlError, match=r"HTTP 500: Internal Server Error") as plain:
        ControlClient(SECRET).call(endpoint, "/control/plain-failure")
    assert plain.value.answer == {}


def test_no_secret_at_all_sends_no_header(server):
    httpd, endpoint = server
    with pytest.raises(ControlError) as refused:
        ControlClient(None).call(endpoint, "/control/status")
    assert refused.value.status == 401 and SECRET_HEADER not in httpd.seen[-1][2]


def test_nothing_usable_answering_is_a_control_error_without_a_status(server):
    _, endpoint = server
    with pytest.raises(ControlError) as garbled:
        ControlClient(SECRET).call(endpoint, "/control/garbled", region="us-east-1")
    assert garbled.value.status is None and "the answer is not JSON" in str(garbled.value)
    nowhere = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(ControlError) as down:
        ControlClient(SECRET, timeout_s=5).call(nowhere, "/control/status", region="us-east-1")
    assert down.value.status is None and str(down.value).startswith(
        f"us-east-1 ({nowhere}): GET /control/status: no answer"
    )


async def test_the_async_flavour_sends_and_fails_the_same(server):
    httpd, endpoint = server
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        client = AsyncControlClient(session, SECRET)
        assert await client.call(endpoint, "/control/status") == {"method": "GET", "echo": None}
        assert await client.call(endpoint, "/control/faults", {"heal": True}) == {
            "method": "POST",
            "echo": {"heal": True},
        }
        assert httpd.seen[-1][2][SECRET_HEADER] == SECRET and SECRET not in repr(client)
        with pytest.raises(ControlError) as refused:
            await AsyncControlClient(session, "wrong").call(endpoint, "/control/status", region="ap-southeast-1")
        with pytest.raises(ControlError) as sync:
            ControlClient("wrong").call(endpoint, "/control/status", region="ap-southeast-1")
        assert str(refused.value) == str(sync.value) and refused.value.status == 401
        with pytest.raises(ControlError) as garbled:
            await client.call(endpoint, "/control/garbled")
        assert garbled.value.status is None
        nowhere = f"http://127.0.0.1:{_closed_port()}"
        with pytest.raises(ControlError) as down:
            await client.call(nowhere, "/control/status", region="us-east-1")
        assert down.value.status is None and isinstance(down.value, OSError)


async def test_a_step_refused_by_a_region_is_refused_and_any_other_failure_a_control_error(server):
    from globaltables.region.control_steps import Refused, post_control

    _, endpoint = server
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        assert await post_control(session, endpoint, "eu-west-1", "/control/step", SECRET, {"op": "join"}) == {
            "method": "POST", "echo": {"op": "join"}
        }  # fmt: skip
        with pytest.raises(Refused, match="ResourceInUseException: no"):
            await post_control(session, endpoint, "eu-west-1", "/control/refuse", SECRET, {"op": "join"})
        with pytest.raises(ControlError, match="HTTP 401"):
            await post_control(session, endpoint, "eu-west-1", "/control/step", "wrong", {"op": "join"})
        with pytest.raises(LookupError):
            await post_control(session, None, "eu-west-1", "/control/step", SECRET, {"op": "join"})
