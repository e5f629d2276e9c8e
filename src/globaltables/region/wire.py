"""The DynamoDB JSON 1.0 wire protocol: which requests reach the engine, and how every answer is framed.

This module knows no web framework: it turns (method, path, headers, body bytes) into (status, body bytes) and
adds the framing headers. `app.py` is the thin aiohttp shell around it.

Theory of operation: a request passes the same checks, in the same order, as it does at DynamoDB (the order dynalite
established against the live service; its tests are the record):
 1. `GET /` is the health check: 200 `healthy: <host> ` (DynamoDB answers `healthy: dynamodb.<region>.amazonaws.com `,
    i.e. its own host name). An `OPTIONS` request with `Origin` is a CORS preflight: 200, empty, with
    `cors_headers`. Any other method or path (a POST to `/x` included), and a POST whose Content-Type is neither
    `application/x-amz-json-1.0` nor `application/json`, gets 404 `<UnknownOperationException/>` (the body is XML
    at DynamoDB too, because no JSON protocol was selected).
 2. A body over 16 MiB (DynamoDB's request limit) is refused with 413 before it is read. Then it is decoded as
    its `Content-Encoding` says (content_coding.py): 500 for a coding DynamoDB does not accept or a body that does
    not decode, 413 for one over 16 MiB decoded; either way nothing is executed.
 3. The body must be JSON: otherwise 400 SerializationException. An empty body is an empty input structure, as in
    every AWS JSON protocol (boto3 always sends at least `{}`).
 4. The target must be `DynamoDB_20120810.<Operation>` naming an operation of DynamoDB's API (or
    `DynamoDBStreams_20120810.<Operation>`): otherwise 400 UnknownOperationException, without a message.
 5. Authentication: a request with neither an `Authorization` header nor a presigned query string gets
    MissingAuthenticationTokenException; an `Authorization` header lacking a SigV4 part gets
    IncompleteSignatureException with DynamoDB's text. Then the region's signing checks (signing.py, one call in
    `authenticate` for every HTTP path): the signing date within 5 minutes of the region's clock and a credential
    scope naming this region and `dynamodb`, always; the signature itself only when the region has credentials
    configured, so by default boto3 and the aws CLI work with dummy keys.
 6. The engine answers, or raises a DynamoError whose `to_body()` and `status` are sent as they are. Any other
    exception is a bug: the client gets a generic 500 InternalServerError, the traceback goes to the server log.

Every answer carries `x-amzn-RequestId` (fresh per request), `x-amz-crc32` (zlib CRC32 of the exact body bytes
sent, compressed or not; botocore retries and finally fails a response whose checksum does not match) and a
Content-Type (`application/json` when the request used it, as DynamoDB does; `application/x-amz-json-1.0`
otherwise). An answer over 4 KiB is compressed when the request's Accept-Encoding allows (content_coding.py). A
request with `Origin` gets CORS headers on every answer.
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import string
import zlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qs

import orjson

from ..engine.engine import DYNAMODB_OPERATIONS
from ..engine.errors import (
    SERVICE_NAMESPACE,
    DynamoError,
    MissingAuthenticationTokenException,
    SerializationException,
    UnknownOperationException,
)

log = logging.getLogger("globaltables.region")

# DynamoDB refuses request bodies over 16 MiB (dynalite measured the exact boundary: 16 MiB passes, one more byte
# does not). BatchWriteItem's own 16 MB limit on item data fits inside it.
MAX_REQUEST_BYTES = 16 * 1024 * 1024

AMZ_JSON = "application/x-amz-json-1.0"
PLAIN_JSON = "application/json"
JSON_MEDIA_TYPES = frozenset({AMZ_JSON, PLAIN_JSON})

DYNAMODB_SERVICE = "DynamoDB_20120810"
STREAMS_SERVICE = "DynamoDBStreams_20120810"

NOT_FOUND_BODY = b"<UnknownOperationException/>\n"
INTERNAL_ERROR_BODY = orjson.dumps(
    {"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "Internal server error"}
)


# ----------------------------------------------------------------------------------------- protocol-level errors


class IncompleteSignatureException(DynamoError):
    namespace = SERVICE_NAMESPACE


class InvalidSignatureException(DynamoError):
    namespace = SERVICE_NAMESPACE


class RequestEntityTooLargeException(DynamoError):
    """DynamoDB answers an oversized request with a bare 413; the JSON body here tells the client why."""

    namespace = SERVICE_NAMESPACE
    status = 413


def bare(error_class: type[DynamoError]) -> DynamoError:
    """An error with no message member: DynamoDB sends SerializationException and UnknownOperationException so."""
    return error_class()


TOO_LARGE = RequestEntityTooLargeException(f"Request body must not exceed {MAX_REQUEST_BYTES} bytes")


# ----------------------------------------------------------------------------------------------- request ids


class RequestIds:
    """DynamoDB-shaped request ids: 52 characters of [0-9A-Z], unique per request.

    A random per-process prefix plus a counter: unique across processes and restarts (the prefix has 206 bits of
    randomness) and far cheaper than drawing randomness per request.
    """

    ALPHABET = string.digits + string.ascii_uppercase

    def __init__(self) -> None:
        self._prefix = "".join(secrets.choice(self.ALPHABET) for _ in range(40))
        self._counter = itertools.count(1)

    def next(self) -> str:
        return f"{self._prefix}{next(self._counter) % (1 << 48):012X}"


# ------------------------------------------------------------------------------------------------ the checks


def media_type(content_type: str | None) -> str | None:
    """The request's JSON media type (parameters such as `;charset=` ignored), or None if it is not one."""
    if not content_type:
        return None
    if content_type in JSON_MEDIA_TYPES:  # the common case, exactly as botocore sends it
        return content_type
    media = content_type.split(";", 1)[0].strip().lower()
    return media if media in JSON_MEDIA_TYPES else None


def decode_body(raw: bytes) -> Any:
    """The request's JSON document; an empty body is an empty input structure."""
    if not raw:
        return {}
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise bare(SerializationException) from None


def split_target(target: str | None) -> tuple[str, str]:
    """(service, operation) of an `X-Amz-Target` header naming an operation of a service served here.

    An operation DynamoDB does not have is refused here, before authentication, as DynamoDB does; operations it has
    but globaltables does not implement reach the engine, which refuses them with a message saying so.
    """
    if target:
        service, dot, operation = target.partition(".")
        if service == DYNAMODB_SERVICE:
            if operation in DYNAMODB_OPERATIONS:
                return service, operation
        elif service == STREAMS_SERVICE and dot and operation and "." not in operation:
            return service, operation
    raise bare(UnknownOperationException)


_AUTH_PARAMETERS = ("Credential", "Signature", "SignedHeaders")
_QUERY_AUTH_PARAMETERS = ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "X-Amz-SignedHeaders", "X-Amz-Date")
_AUTH_SEPARATORS = re.compile(r"[, ]")
# What every SigV4 signer (botocore, the SDKs) sends; matching it settles the common case in well under a microsecond.
_COMPLETE_SIGV4 = re.compile(r"AWS4-HMAC-SHA256 Credential=[^=, ]+, ?SignedHeaders=[^=, ]+, ?Signature=[^=, ]+")


def check_authentication(headers: Mapping[str, str], query_string: str) -> None:
    """Require a complete SigV4 authorization (header or presigned query); the signature is not verified."""
    authorization = headers.get("Authorization")
    if (
        authorization is not None
        and not query_string
        and _COMPLETE_SIGV4.fullmatch(authorization)
        and (headers.get("X-Amz-Date") or headers.get("Date"))
    ):
        return
    query = parse_qs(query_string, keep_blank_values=True) if "X-Amz-Algorithm" in query_string else None
    if authorization and query is not None:
        raise InvalidSignatureException(
            "Found both 'X-Amz-Algorithm' as a query-string param and 'Authorization' as HTTP header."
        )
    if not authorization and query is None:
        raise MissingAuthenticationTokenException("Request is missing Authentication Token")
    problems = []
    if authorization:
        parameters = {}
        for part in _AUTH_SEPARATORS.split(authorization)[1:]:
            name, _, value = part.strip().partition("=")
            parameters[name] = value.split("=", 1)[0]
        problems = [
            f"Authorization header requires '{p}' parameter." for p in _AUTH_PARAMETERS if not parameters.get(p)
        ]
        if not headers.get("X-Amz-Date") and not headers.get("Date"):
            problems.append("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
        if problems:
            problems.append(f"Authorization={authorization}")
    else:
        assert query is not None
        problems = [
            f"AWS query-string parameters must include '{p}'."
            for p in _QUERY_AUTH_PARAMETERS
            if not query.get(p, [""])[0]
        ]
        if problems:
            problems.append("Re-examine the query-string parameters.")
    if problems:
        raise IncompleteSignatureException(" ".join(problems))


def authenticate(headers: Mapping[str, str], query_string: str, raw: bytes, signing: Any, path: str = "/") -> None:
    """Step 5: the authorization's shape, then the region's signing checks (`signing.RequestSigning`, or None for
    hosts without a real clock: the simulator), over the body bytes exactly as sent. The common shape of header is
    parsed once, for both (`common_authorization`)."""
    if signing is None:
        check_authentication(headers, query_string)
        return
    auth = signing.common_authorization(headers, query_string)
    if auth is None:
        check_authentication(headers, query_string)
    signing.verify(headers, query_string, raw, path, auth)


# ---------------------------------------------------------------------------------------------- the dispatch


def answer(
    engine: Any,
    headers: Mapping[str, str],
    query_string: str,
    raw: bytes,
    signing: Any = None,
    path: str = "/",
    signed: bytes | None = None,
) -> tuple[int, bytes, str | None]:
    """(status, body, item version) for a POST whose media type and size have been accepted. Never raises. `raw`:
    the JSON body (decoded if it came compressed); `signed`: the bytes as sent, which the signature covers (default
    `raw`). The version (engine/answer.py) is the one the operation wrote or read, None for any error."""
    try:
        request = decode_body(raw)
        service, operation = split_target(headers.get("X-Amz-Target"))
        authenticate(headers, query_string, raw if signed is None else signed, signing, path)
        if service == DYNAMODB_SERVICE:
            response, version = engine.execute(operation, request, encoded=True)  # only serialised
        else:
            handle_streams = getattr(engine, "handle_streams", None)
            if handle_streams is None:
                raise UnknownOperationException(f"{operation} is not supported by globaltables")
            response, version = handle_streams(operation, request), None
        return 200, success_body(operation, response), version
    except DynamoError as error:
        return (*error_answer(error), None)
    except Exception:
        log.exception("internal error answering %s", headers.get("X-Amz-Target"))
        return 500, INTERNAL_ERROR_BODY, None


def answer_many(
    engine: Any, operation: str, posts: list[tuple[Mapping[str, str], bytes, bytes]], signing: Any = None
) -> list[tuple[int, bytes, str | None]]:
    """`answer` for POSTs to `/` with no query string whose target is DynamoDB's `operation` (the requests of one
    event-loop turn, region/group_commit.py), each given as (headers, JSON body, bytes as sent). The same steps in
    the same order per request, but each step for every request before the next (the engine's phases too,
    `Engine.execute_many`); the answers are those `answer` gives one by one, in order. Never raises."""
    answers: list[tuple[int, bytes, str | None] | None] = [None] * len(posts)
    requests: list[Any] = []
    placed: list[int] = []
    for index, (headers, raw, signed) in enumerate(posts):
        try:
            request = decode_body(raw)
            authenticate(headers, "", signed, signing)
        except DynamoError as error:
            answers[index] = (*error_answer(error), None)
            continue
        except Exception:
            log.exception("internal error answering %s", headers.get("X-Amz-Target"))
            answers[index] = (500, INTERNAL_ERROR_BODY, None)
            continue
        requests.append(request)
        placed.append(index)
    if requests:
        for index, (response, version) in zip(placed, engine.execute_many(operation, requests, True), strict=True):
            if isinstance(response, DynamoError):
                answers[index] = (*error_answer(response), None)
            elif isinstance(response, Exception):
                log.error("internal error answering %s", operation, exc_info=response)
                answers[index] = (500, INTERNAL_ERROR_BODY, None)
            else:
                try:
                    answers[index] = (200, success_body(operation, response), version)
                except Exception:
                    log.exception("internal error answering %s", operation)
                    answers[index] = (500, INTERNAL_ERROR_BODY, None)
    return answers  # type: ignore[return-value]


# Operations whose success DynamoDB answers with an empty body (HTTP 200, Content-Length 0), not "{}".
EMPTY_BODY_OPERATIONS = frozenset({"TagResource", "UntagResource"})


def success_body(operation: str, response: Any) -> bytes:
    return b"" if operation in EMPTY_BODY_OPERATIONS else orjson.dumps(response)


def error_answer(error: DynamoError) -> tuple[int, bytes]:
    body = error.to_body()
    try:
        return error.status, orjson.dumps(body)
    except orjson.JSONEncodeError:
        pass
    try:
        # A message quoting request bytes that are not UTF-8 (a header aiohttp kept as surrogate escapes): the
        # client gets its text with those bytes replaced.
        return error.status, orjson.dumps({k: _printable(v) for k, v in body.items()})
    except Exception:  # an error carrying something unserialisable is a bug: a generic 500, the trace in the log
        log.exception("cannot serialise %r", error)
        return 500, INTERNAL_ERROR_BODY


def _printable(value: Any) -> Any:
    return value.encode("utf-8", "replace").decode("utf-8") if isinstance(value, str) else value


def health_body(host: str | None) -> bytes:
    return f"healthy: {host or 'localhost'} ".encode()


# CORS, as DynamoDB's endpoints answer browsers (and as AWS's JSON services answer a preflight: the headers the
# browser may read, and a two-day cache).
CORS_EXPOSE_HEADERS = "x-amzn-RequestId,x-amzn-ErrorType,x-amzn-ErrorMessage,Date"
CORS_MAX_AGE_S = "172800"


def cors_headers(headers: Mapping[str, str], preflight: bool = False) -> Mapping[str, str]:
    """The CORS headers of an answer to a request carrying `Origin` (any method, any path); a preflight (OPTIONS)
    also echoes the method and headers it asks for and says how long the browser may cache that."""
    if not preflight:
        return CORS_ANSWER_HEADERS
    cors = {"Access-Control-Allow-Origin": "*"}
    if preflight:
        method = headers.get("Access-Control-Request-Method")
        if method is not None:
            cors["Access-Control-Allow-Methods"] = method
        requested = headers.get("Access-Control-Request-Headers")
        if requested is not None:
            cors["Access-Control-Allow-Headers"] = requested
        cors["Access-Control-Max-Age"] = CORS_MAX_AGE_S
    cors["Access-Control-Expose-Headers"] = CORS_EXPOSE_HEADERS
    return cors


CORS_ANSWER_HEADERS = MappingProxyType(
    {"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": CORS_EXPOSE_HEADERS}
)


def framing(request_id: str, body: bytes, content_type: str) -> dict[str, str]:
    """The headers every answer carries."""
    return {
        "x-amzn-RequestId": request_id,
        "x-amz-crc32": str(zlib.crc32(body)),
        "Content-Type": content_type,
    }
