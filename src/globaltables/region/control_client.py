"""The one client of the control API: calls to a region's or a supervisor's `/control/...` routes, behind the
topology's shared secret.

Every caller (another region posting a step, the `up` supervisor waiting for links, `run`, `chaos`, `check`, the
pytest kit, tests and benchmarks) builds its request with `control_request` and reads the answer with
`control_answer`, through `ControlClient` (blocking, urllib) or `AsyncControlClient` (an aiohttp session the caller
owns). It lives in the region layer, the lowest one every caller may import (region/ calls other regions itself).

Rules:
1. A call with a body is a POST of that body as JSON; one without is a GET. The answer is JSON.
2. The secret travels in its header only (`runtime.transport.SECRET_HEADER`): never in a URL, and never in a repr or
   an error message, so neither a log line nor a traceback shows it.
3. Every failure is a `ControlError` naming the route, the region (when the caller named it), the endpoint and the
   HTTP status (None when nothing usable answered: unreachable, timed out, not JSON). It is an OSError, as urllib's
   URLError is, so that code treating any network trouble alike needs no separate clause for it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from ..runtime.transport import SECRET_HEADER

DETAIL_LIMIT = 500  # characters of a refusal's body kept in its error message


class ControlError(OSError):
    """A control call failed. `status`: the HTTP status of a refusal, or None when nothing usable answered;
    `answer`: the refusal's JSON object ({} when it had none)."""

    def __init__(
        self, request: ControlRequest, region: str | None, status: int | None, detail: str, answer: Any = None
    ) -> None:
        who = f"{region} ({request.endpoint})" if region else request.endpoint
        what = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"{who}: {request.method} {request.route}: {what}: {detail}")
        self.route = request.route
        self.endpoint = request.endpoint
        self.region = region
        self.status = status
        self.answer = answer if isinstance(answer, dict) else {}


@dataclass(frozen=True)
class ControlRequest:
    method: str
    endpoint: str  # scheme://host:port of the region or supervisor
    route: str  # the path, /control/...
    data: bytes | None
    headers: dict[str, str] = field(repr=False)  # the secret is in here: never shown

    @property
    def url(self) -> str:
        return self.endpoint + self.route


def control_request(endpoint: str, route: str, secret: str | None, body: Any = None) -> ControlRequest:
    """The request for `route` at `endpoint`: GET without a body, else a POST of `body` as JSON. `secret=None` sends
    no secret at all (only tests of the guard want that)."""
    if not route.startswith("/"):
        raise ValueError(f"a control route is a path: {route!r}")
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers[SECRET_HEADER] = secret
    data = None if body is None else json.dumps(body).encode()
    return ControlRequest("GET" if body is None else "POST", endpoint.rstrip("/"), route, data, headers)


def control_answer(request: ControlRequest, region: str | None, status: int, data: bytes) -> Any:
    """The decoded JSON answer of a 2xx; ControlError for any other status, or an answer that is not JSON."""
    try:
        answer = json.loads(data) if data else {}
    except ValueError:
        answer = None
    if 200 <= status < 300:
        if answer is None:
            raise ControlError(request, region, None, f"the answer is not JSON: {_text(data)}")
        return answer
    detail = answer.get("error") if isinstance(answer, dict) and isinstance(answer.get("error"), str) else None
    raise ControlError(request, region, status, detail or _text(data) or "(no body)", answer)


def _text(data: bytes) -> str:
    text = data.decode(errors="replace").strip()
    return text if len(text) <= DETAIL_LIMIT else text[:DETAIL_LIMIT] + "..."


class ControlClient:
    """Blocking calls (urllib), `timeout_s` each."""

    def __init__(self, secret: str | None, timeout_s: float = 10.0) -> None:
        self._secret = secret
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"ControlClient(timeout_s={self.timeout_s})"

    def call(self, endpoint: str, route: str, body: Any = None, *, region: str | None = None) -> Any:
        """GET `route` (or POST `body` to it) at `endpoint`; its JSON answer, or ControlError. `region`: whom the
        call is to or about, for the error."""
        request = control_request(endpoint, route, self._secret, body)
        sent = urllib.request.Request(request.url, data=request.data, method=request.method, headers=request.headers)
        try:
            with urllib.request.urlopen(sent, timeout=self.timeout_s) as response:
                status, data = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, data = error.code, error.read()
        except (urllib.error.URLError, OSError) as error:  # refused, reset, timed out (TimeoutError is an OSError)
            raise ControlError(request, region, None, str(getattr(error, "reason", error))) from None
        return control_answer(request, region, status, data)


class AsyncControlClient:
    """Calls through the caller's aiohttp session (its timeouts apply, or `timeout_s` per call when given)."""

    def __init__(self, session: aiohttp.ClientSession, secret: str | None, timeout_s: float | None = None) -> None:
        self.session = session
        self._secret = secret
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"AsyncControlClient(timeout_s={self.timeout_s})"

    async def call(self, endpoint: str, route: str, body: Any = None, *, region: str | None = None) -> Any:
        """As ControlClient.call."""
        request = control_request(endpoint, route, self._secret, body)
        timeout = aiohttp.ClientTimeout(total=self.timeout_s) if self.timeout_s is not None else None
        try:
            async with self.session.request(
                request.method, request.url, data=request.data, headers=request.headers,
                **({"timeout": timeout} if timeout is not None else {}),
            ) as response:  # fmt: skip
                status, data = response.status, await response.read()
        except (aiohttp.ClientError, OSError) as error:  # TimeoutError is an OSError
            raise ControlError(request, region, None, str(error) or type(error).__name__) from None
        return control_answer(request, region, status, data)
