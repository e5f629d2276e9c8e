"""Request signatures (AWS Signature Version 4) checked as DynamoDB checks them, by the region's own clock.

Why: a testbed that accepts any signature cannot show a user that their clock skew, their region setting or their
keys would be refused by the real service. Two levels:

- **Always** (no key store needed, conformance notes R11 and R21): the signing date must lie within
  `SIGNING_WINDOW_S` of the region's clock, and the credential scope must be well formed and name this region, the
  `dynamodb` service and the `aws4_request` terminator. A client configured for eu-west-1 pointed at us-east-1's
  endpoint is refused instead of writing silently into the wrong region.
- **With credentials configured** (`globaltables region --credentials FILE`, or a topology's `credentials:`): the
  access key must be known (and, when the key names its regions, allowed in this one), and the signature must be
  the one the key's secret gives. The expected signature is computed by botocore's own signer (`SigV4Auth`: its
  canonical request, string to sign and signing-key derivation), so the check is exactly what every SDK signs.
  Secrets live only in memory; they are never logged and never part of an answer.

Rules, in the order applied (the signing date is checked before credentials, as DynamoDB does):
1. The authorization comes from the `Authorization` header or a presigned query string (`X-Amz-Algorithm`,
   `X-Amz-Credential`, `X-Amz-Date`, `X-Amz-Expires`, `X-Amz-SignedHeaders`, `X-Amz-Signature`); wire.py has
   already refused an incomplete one.
2. The credential is `<key>/<YYYYMMDD>/<region>/<service>/aws4_request`: five parts, or IncompleteSignature.
3. The request time is `X-Amz-Date` (ISO 8601 basic, `20261201T093000Z`) or else the `Date` header (RFC 1123).
   Outside now ± 5 minutes: InvalidSignatureException "Signature expired: ..." / "Signature not yet current: ...".
   A presigned request is valid from its date for `X-Amz-Expires` seconds (1 to 604800).
4. The scope's date must be the request time's day; its region this region; its service `dynamodb`.
5. Only with credentials: an unknown key (or one bound to other regions) is UnrecognizedClientException; `host`
   must be signed; a signature that differs is InvalidSignatureException with the canonical request and string to
   sign DynamoDB reports.

Sources: the SigV4 specification (IAM user guide, "Create a signed AWS API request"; query-string authentication
in the Amazon S3 API reference "Authenticating Requests: Using Query Parameters"). The texts are AWS's, as clients
recorded them from DynamoDB: "Signature expired: 20160610T180547Z is now earlier than 20160610T180612Z
(20160610T181112Z - 5 min.)" (DynamoDB, aws/aws-sdk-js-v3#7605 reports the 5-minute window in 2025), "Credential
should be scoped to a valid region, not '<region>'. " (conformance notes R21), "Credential should be scoped to
correct service: 'dynamodb'. " (arnemolland/sigv4#15), the signature mismatch with its canonical string (boto/boto
#1552), "The security token included in the request is invalid." (UnrecognizedClientException).
"""

from __future__ import annotations

import calendar
import functools
import hashlib
import hmac
import re
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import NamedTuple
from urllib.parse import parse_qsl

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

from ..engine.errors import SERVICE_NAMESPACE, DynamoError
from ..runtime.clock import Clock
from ..topology.credentials import AccessKey
from .wire import IncompleteSignatureException, InvalidSignatureException

SERVICE = "dynamodb"  # the signing name of both DynamoDB and DynamoDB Streams (botocore's service models)
TERMINATOR = "aws4_request"
ALGORITHM = "AWS4-HMAC-SHA256"
SIGNING_WINDOW_S = 5 * 60
MAX_PRESIGNED_EXPIRES_S = 7 * 24 * 3600

INVALID_TOKEN = "The security token included in the request is invalid."
SIGNATURE_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access "
    "Key and signing method. Consult the service documentation for details."
)


# What every SigV4 signer sends (botocore, the SDKs): one match parses it; anything else takes the general parse.
_HEADER = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/,= ]*)/([^/,= ]*)/([^/,= ]*)/([^/,= ]*)/([^/,= ]*), ?"
    r"SignedHeaders=([^,= ]+), ?Signature=([^,= ]+)"
)
_SIGNATURE = "Signature="


def _header_parts(header: str) -> tuple[tuple[str, str, str, str, str, tuple[str, ...]], str] | None:
    """`_HEADER.fullmatch(header)`'s groups as ((key id, date, region, service, terminator, signed headers),
    signature), or None where it does not match.

    Why not the match alone: it is most of a request's signing checks (some 2 µs for a 200-character header, its
    character classes scanned byte by byte), while everything before the signature is the same in every request a
    client signs in one day. So that part is parsed once (`_credential_part`, cached) and the signature alone is
    looked at. Exact: the signature group admits no "=", so the literal "Signature=" of any match is the header's
    last one, and an alphanumeric signature (a hex digest always is) matches the group wherever the rest of the header
    matches; any other signature takes the whole match."""
    cut = header.rfind(_SIGNATURE) + len(_SIGNATURE)
    signature = header[cut:]
    if cut >= len(_SIGNATURE) and signature.isalnum():
        parsed = _credential_part(header[:cut])
        return None if parsed is None else (parsed, signature)
    matched = _HEADER.fullmatch(header)
    if matched is None:
        return None
    key_id, day, region, service, terminator, signed, signature = matched.groups()
    return (key_id, day, region, service, terminator, tuple(signed.split(";"))), signature


@functools.lru_cache(maxsize=256)
def _credential_part(prefix: str) -> tuple[str, str, str, str, str, tuple[str, ...]] | None:
    """The first six groups of `_HEADER` for a header that is `prefix` (up to "Signature=") and then a signature:
    "0" stands in for it, since whether such a header matches does not depend on which valid signature ends it."""
    matched = _HEADER.fullmatch(prefix + "0")
    if matched is None:
        return None
    key_id, day, region, service, terminator, signed, _signature = matched.groups()
    return key_id, day, region, service, terminator, tuple(signed.split(";"))


class UnrecognizedClientException(DynamoError):
    namespace = SERVICE_NAMESPACE


# ------------------------------------------------------------------------------------------------ access keys


def key_for(keys: Mapping[str, AccessKey] | None, region: str) -> tuple[str, str] | None:
    """(key id, secret) of the first key allowed in `region`, for the project's own clients; None without keys."""
    for key_id, key in (keys or {}).items():
        if key.regions is None or region in key.regions:
            return key_id, key.secret
    return None


# ----------------------------------------------------------------------------------------------- time texts


def timestamp(seconds: float) -> str:
    """ISO 8601 basic format, UTC, whole seconds: how SigV4 writes a request time."""
    year, month, day, hour, minute, second = _utc(seconds)
    return f"{year:04d}{month:02d}{day:02d}T{hour:02d}{minute:02d}{second:02d}Z"


def _utc(seconds: float) -> tuple[int, int, int, int, int, int]:
    t = time.gmtime(int(seconds))
    return t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec


def parse_timestamp(text: str) -> float | None:
    """Epoch seconds of `YYYYMMDDTHHMMSSZ`, or None if it is not that."""
    if len(text) != 16 or text[8] != "T" or text[15] != "Z" or not (text[:8] + text[9:15]).isdigit():
        return None
    try:
        parts = (int(text[0:4]), int(text[4:6]), int(text[6:8]), int(text[9:11]), int(text[11:13]), int(text[13:15]))
    except ValueError:
        return None
    month, day, hour, minute, second = parts[1:]
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    return float(calendar.timegm((*parts, 0, 0, 0)))


# ------------------------------------------------------------------------------------------------ the checks


class Authorization(NamedTuple):
    """A request's SigV4 authorization, from the header or the presigned query string. A named tuple, not a frozen
    dataclass: every request builds one, and a frozen dataclass's `__init__` sets its ten fields one
    `object.__setattr__` at a time (most of the cost of checking a request's signing window and scope)."""

    key_id: str
    scope_date: str
    scope_region: str
    scope_service: str
    terminator: str
    signed_headers: tuple[str, ...]
    signature: str
    date: str  # as sent: X-Amz-Date, or the Date header
    presigned_expires: int | None  # X-Amz-Expires of a presigned request
    query: tuple[tuple[str, str], ...]  # the query parameters that are signed (all but X-Amz-Signature)


class RequestSigning:
    """The signature checks of one region (see the module doc). `keys` None: no key store (R11 and R21 only)."""

    def __init__(self, region: str, clock: Clock, keys: Mapping[str, AccessKey] | None = None) -> None:
        self.region = region
        self.clock = clock
        self.keys = dict(keys) if keys else None
        # The last request time parsed: its text, epoch seconds and YYYYMMDD (most requests of a second share it).
        self._date_text = ""
        self._date_value = 0.0
        self._date_day = ""

    def verify(
        self,
        headers: Mapping[str, str],
        query_string: str,
        body: bytes,
        path: str = "/",
        auth: Authorization | None = None,
    ) -> None:
        """Raise DynamoDB's error if the request's signature is refused; wire.check_authentication ran first, or
        `auth` is the request's `common_authorization` (which implies everything that check requires)."""
        if auth is None:
            auth = self.authorization(headers, query_string)
        signed_at = self._request_time(auth.date)
        self._check_window(auth, signed_at)
        self._check_scope(auth)
        if self.keys is None:
            return
        key = self.keys.get(auth.key_id)
        if key is None or (key.regions is not None and self.region not in key.regions):
            raise UnrecognizedClientException(INVALID_TOKEN)
        if "host" not in auth.signed_headers:
            raise InvalidSignatureException("'Host' must be a 'SignedHeader' in the AWS Authorization.")
        declared = headers.get("X-Amz-Content-Sha256")
        if declared is not None and declared != "UNSIGNED-PAYLOAD" and declared != hashlib.sha256(body).hexdigest():
            # botocore's canonical request takes a declared payload hash as it is: check it against the body.
            raise InvalidSignatureException(
                "The provided 'x-amz-content-sha256' header does not match what was computed."
            )
        canonical, string_to_sign, expected = self.expected(auth, key, headers, body, path)
        if not hmac.compare_digest(expected, auth.signature):
            raise InvalidSignatureException(
                f"{SIGNATURE_MISMATCH}\n\nThe Canonical String for this request should have been\n'{canonical}'\n\n"
                f"The String-to-Sign should have been\n'{string_to_sign}'\n"
            )

    # ------------------------------------------------------------------------------------------------ parsing

    @staticmethod
    def common_authorization(headers: Mapping[str, str], query_string: str) -> Authorization | None:
        """The request's authorization when it has the shape every SigV4 signer sends (an `Authorization` header
        with its three parts, a date header, no presigned query string), parsed once; None otherwise. A match
        implies everything wire.check_authentication requires, so that check is skipped for it (wire.py)."""
        header = headers.get("Authorization")
        if header is None or query_string:
            return None
        parts = _header_parts(header)
        if parts is None:
            return None
        date = headers.get("X-Amz-Date") or headers.get("Date")
        if not date:
            return None
        (key_id, day, region, service, terminator, signed), signature = parts
        return Authorization(key_id, day, region, service, terminator, signed, signature, date, None, ())

    @staticmethod
    def authorization(headers: Mapping[str, str], query_string: str) -> Authorization:
        header = headers.get("Authorization")
        if header is not None and not query_string:
            parts = _header_parts(header)
            if parts is not None:
                (key_id, day, region, service, terminator, signed), signature = parts
                date = headers.get("X-Amz-Date") or headers.get("Date") or ""
                return Authorization(key_id, day, region, service, terminator, signed, signature, date, None, ())
        if header is not None:
            if not header.startswith(ALGORITHM + " "):
                raise IncompleteSignatureException(f"Unsupported AWS 'algorithm': '{header.split(' ', 1)[0]}'")
            fields: dict[str, str] = {}
            for part in header[len(ALGORITHM) :].split(","):
                name, _, value = part.strip().partition("=")
                fields[name] = value
            credential, signed = fields.get("Credential", ""), fields.get("SignedHeaders", "")
            signature = fields.get("Signature", "")
            date = headers.get("X-Amz-Date") or headers.get("Date") or ""
            expires, query = None, tuple(parse_qsl(query_string, keep_blank_values=True)) if query_string else ()
        else:
            pairs = parse_qsl(query_string, keep_blank_values=True)
            values = dict(pairs)
            if values.get("X-Amz-Algorithm") != ALGORITHM:
                raise IncompleteSignatureException(f"Unsupported AWS 'algorithm': '{values.get('X-Amz-Algorithm')}'")
            credential, signed = values["X-Amz-Credential"], values["X-Amz-SignedHeaders"]
            signature, date = values["X-Amz-Signature"], values["X-Amz-Date"]
            expires = _expires(values.get("X-Amz-Expires"))
            query = tuple((name, value) for name, value in pairs if name != "X-Amz-Signature")
        parts = credential.split("/")
        if len(parts) != 5:
            raise IncompleteSignatureException(
                "Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, "
                f"got '{credential}'"
            )
        return Authorization(
            parts[0], parts[1], parts[2], parts[3], parts[4], tuple(signed.split(";")), signature, date, expires, query
        )

    def _request_time(self, date: str) -> float:
        if date == self._date_text:  # most requests of one second carry the same date: parse it once
            return self._date_value
        value = parse_timestamp(date)
        day = date[:8]
        if value is None:
            try:
                value = parsedate_to_datetime(date).timestamp()  # a `Date` header (RFC 1123)
            except (TypeError, ValueError, IndexError):
                raise IncompleteSignatureException(
                    f"Date must be in ISO-8601 'basic format'. Got '{date}'. See http://en.wikipedia.org/wiki/ISO_8601"
                ) from None
            day = timestamp(value)[:8]
        self._date_text, self._date_value, self._date_day = date, value, day
        return value

    def _check_window(self, auth: Authorization, signed_at: float) -> None:
        now = self.clock.wall_time()
        if auth.presigned_expires is None and now - SIGNING_WINDOW_S <= signed_at <= now + SIGNING_WINDOW_S:
            return  # the common case, without formatting any time
        shown = timestamp(signed_at)
        if auth.presigned_expires is not None:
            if signed_at + auth.presigned_expires < now:
                raise InvalidSignatureException(
                    f"Signature expired: {shown} is now earlier than {timestamp(now - auth.presigned_expires)} "
                    f"({timestamp(now)} - {auth.presigned_expires} sec.)"
                )
        elif signed_at < now - SIGNING_WINDOW_S:
            raise InvalidSignatureException(
                f"Signature expired: {shown} is now earlier than {timestamp(now - SIGNING_WINDOW_S)} "
                f"({timestamp(now)} - {SIGNING_WINDOW_S // 60} min.)"
            )
        if signed_at > now + SIGNING_WINDOW_S:
            raise InvalidSignatureException(
                f"Signature not yet current: {shown} is still later than {timestamp(now + SIGNING_WINDOW_S)} "
                f"({timestamp(now)} + {SIGNING_WINDOW_S // 60} min.)"
            )

    def _check_scope(self, auth: Authorization) -> None:
        day = self._date_day  # of auth.date, parsed by _request_time just before
        if auth.scope_date != day:
            raise InvalidSignatureException(
                "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
                f"'{auth.scope_date}' != '{day}', from '{auth.date}'."
            )
        if auth.scope_region != self.region:
            raise InvalidSignatureException(
                f"Credential should be scoped to a valid region, not '{auth.scope_region}'. "
            )
        if auth.scope_service != SERVICE:
            raise InvalidSignatureException(f"Credential should be scoped to correct service: '{SERVICE}'. ")
        if auth.terminator != TERMINATOR:
            raise InvalidSignatureException(
                f"Credential should be scoped with a valid terminator: '{TERMINATOR}', not '{auth.terminator}'. "
            )

    # ------------------------------------------------------------------------------------------- the signature

    def expected(
        self, auth: Authorization, key: AccessKey, headers: Mapping[str, str], body: bytes, path: str
    ) -> tuple[str, str, str]:
        """(canonical request, string to sign, signature) botocore's signer computes for this request."""
        signer = _SignedHeadersAuth(Credentials(auth.key_id, key.secret), SERVICE, self.region, auth.signed_headers)
        request = AWSRequest(method="POST", url=f"http://{headers.get('Host') or 'localhost'}{path}", data=body)
        for name in auth.signed_headers:
            value = headers.get(name)
            if value is not None:
                request.headers[name] = value
        request.params = list(auth.query)
        request.context["timestamp"] = timestamp(self._request_time(auth.date))
        canonical = signer.canonical_request(request)
        string_to_sign = signer.string_to_sign(request, canonical)
        return canonical, string_to_sign, signer.signature(string_to_sign, request)


class _SignedHeadersAuth(SigV4Auth):
    """botocore's SigV4 signer, canonicalising exactly the headers the client listed in SignedHeaders (a verifier
    cannot choose them, as the signing client did)."""

    def __init__(self, credentials: Credentials, service: str, region: str, signed: tuple[str, ...]) -> None:
        super().__init__(credentials, service, region)
        self._signed = signed

    def headers_to_sign(self, request: AWSRequest) -> HTTPHeaders:
        header_map = HTTPHeaders()
        for name in self._signed:
            value = request.headers.get(name)
            header_map[name] = "" if value is None else value
        return header_map


def _expires(text: str | None) -> int:
    if text is None or not text.isdigit():
        raise IncompleteSignatureException(
            "AWS query-string parameters must include 'X-Amz-Expires'. Re-examine the query-string parameters."
        )
    seconds = int(text)
    if not 1 <= seconds <= MAX_PRESIGNED_EXPIRES_S:
        raise InvalidSignatureException(
            f"X-Amz-Expires must be less than a week (in seconds) that is {MAX_PRESIGNED_EXPIRES_S}"
        )
    return seconds


# --------------------------------------------------------------------------------------- the project's clients


def client_headers(region: str, now: float, key: tuple[str, str] | None = None, body: bytes = b"",
                   host: str = "localhost", target: str = "") -> dict[str, str]:  # fmt: skip
    """`Authorization` and `X-Amz-Date` for the project's own raw HTTP clients (load generator, checkers, chaos
    commands): signed for real with `key` (key id, secret) when the region checks keys, otherwise a well-formed
    header for the right region and time (cheap: no hashing per request)."""
    date = timestamp(now)
    if key is None:
        return {
            "X-Amz-Date": date,
            "Authorization": f"{ALGORITHM} Credential=globaltables/{date[:8]}/{region}/{SERVICE}/{TERMINATOR}, "
            "SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=" + "0" * 64,
        }
    request = AWSRequest(method="POST", url=f"http://{host}/", data=body)
    request.headers["Host"] = host
    request.headers["Content-Type"] = "application/x-amz-json-1.0"
    request.headers["X-Amz-Target"] = target
    request.headers["X-Amz-Date"] = date
    signer = _SignedHeadersAuth(
        Credentials(*key), SERVICE, region, ("content-type", "host", "x-amz-date", "x-amz-target")
    )
    request.context["timestamp"] = date
    canonical = signer.canonical_request(request)
    signature = signer.signature(signer.string_to_sign(request, canonical), request)
    return {
        "X-Amz-Date": date,
        "Authorization": f"{ALGORITHM} Credential={key[0]}/{date[:8]}/{region}/{SERVICE}/{TERMINATOR}, "
        f"SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature={signature}",
    }
