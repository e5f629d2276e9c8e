"""The SigV4 headers of the benchmarks' raw HTTP clients: `Authorization` and `X-Amz-Date`, dated when a request is
sent and scoped to the region it goes to.

Why: a region refuses a request whose signing date lies outside 5 minutes of its clock ("Signature expired") or
whose credential scope names another region ("Credential should be scoped to a valid region"), as DynamoDB does
(src/globaltables/region/signing.py; conformance notes R11 and R21). A fixed date rots the day it is written.

The regions the benchmarks start have no key store, so only the date and the scope are checked and the signature
is a well-formed placeholder: nothing is hashed per request, the load generator's CPU stays out of the measurement.
The header text is made once per wall-clock second (`Signer.lines`), so a request is dated at most a second before
it is sent, far inside the window, and the cost per request is one clock read.

Self-contained (no `import globaltables`): a `--baseline-rev` run (bench/_baseline.py) drives the baseline's
package with this same client, so both sides see the same load generator.
"""

from __future__ import annotations

import time
from collections.abc import Callable

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "dynamodb"
KEY_ID = "AKIDBENCHMARK"
SIGNED_HEADERS = "content-type;host;x-amz-date;x-amz-target"


def header_lines(region: str, now: float) -> bytes:
    """The `Authorization` and `X-Amz-Date` header lines (each ending in CRLF) of a request sent at `now`."""
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(int(now)))
    return (
        f"Authorization: {ALGORITHM} Credential={KEY_ID}/{date[:8]}/{region}/{SERVICE}/aws4_request, "
        f"SignedHeaders={SIGNED_HEADERS}, Signature={'0' * 64}\r\n"
        f"X-Amz-Date: {date}\r\n"
    ).encode()


class Signer:
    """`header_lines` for one region, made again whenever the wall-clock second changes."""

    def __init__(self, region: str, clock: Callable[[], float] = time.time) -> None:
        self.region = region
        self.clock = clock
        self.second = -1
        self._lines = b""

    def lines(self) -> bytes:
        """The header lines for a request sent now (cached within one second)."""
        second = int(self.clock())
        if second != self.second:
            self.second = second
            self._lines = header_lines(self.region, second)
        return self._lines
