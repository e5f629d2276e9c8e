"""What an AWS SDK's retries would do with the load generator's requests: botocore 1.43's three retry modes, from
the project's capacity fact sheet (capacity-facts.md §9), so an experiment shows the throttling a user's client
would see (`sdk_retries:` in the workload, workload.py).

- `none` (the default): one attempt per operation, as the load generator always did.
- `legacy` (botocore's default): up to 10 attempts, a deterministic delay of 0.05 * 2^(n-1) s before retry n (no
  jitter, no cap). Retried: ThrottlingException, ProvisionedThroughputExceededException, Throttling,
  ThrottledException, RequestThrottledException, TransactionInProgressException, ReplicatedWriteConflictException;
  RequestLimitExceeded is *not* retried.
- `standard`: up to 3 attempts, a delay of rand(0, 1) * min(2^(n-1), 20) s; a retry quota of 500 tokens per
  client, 5 per retry, refunded by successes (1, or the retry's cost when the success followed retries); an empty
  quota stops retrying. Throttling codes include RequestLimitExceeded and LimitExceededException; the modelled
  retryable ReplicatedWriteConflictException is retried as transient.
- `adaptive`: standard plus a client-side rate limiter, off until the first throttle: a throttle sets the rate to
  0.7 x the measured rate (CUBIC's beta), which then recovers as 0.4 * (t - K)^3 + W_max with
  K = cbrt(W_max * (1 - beta) / 0.4); the fill rate is min(that, 2 x measured), at least 0.5 requests a second; the
  measured rate is an exponential average (0.8) over 0.5 s buckets. One limiter per client.

One client per region the requests go to (an SDK client is made per endpoint). Only answers that prove the request
changed nothing are retried: timeouts, connection errors and 5xx end the operation as `info` (an SDK would retry
them too, but then the history could not tell whether the write took effect once or twice). TransactionCanceled
is never retried (nor by botocore). Everything is a pure function of the answers, the clock given and a seeded Rng.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..runtime.rng import Rng

SDK_RETRY_MODES = ("none", "legacy", "standard", "adaptive")

THROTTLES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})
LEGACY_RETRIED = frozenset(
    {
        "ThrottlingException", "ProvisionedThroughputExceededException", "Throttling", "ThrottledException",
        "RequestThrottledException", "TransactionInProgressException", "ReplicatedWriteConflictException",
    }
)  # fmt: skip
STANDARD_THROTTLING = frozenset(
    {
        "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
        "TooManyRequestsException", "ProvisionedThroughputExceededException", "TransactionInProgressException",
        "RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled", "SlowDown",
        "PriorRequestNotComplete", "EC2ThrottledException",
    }
)  # fmt: skip
STANDARD_TRANSIENT = frozenset({"ReplicatedWriteConflictException"})

LEGACY_ATTEMPTS, LEGACY_BASE_S = 10, 0.05
STANDARD_ATTEMPTS, STANDARD_CAP_S = 3, 20.0
QUOTA_CAPACITY, QUOTA_RETRY_COST, QUOTA_SUCCESS_REFUND = 500, 5, 1
BETA, SCALE, MIN_RATE, SMOOTHING, RATE_BUCKET_S = 0.7, 0.4, 0.5, 0.8, 0.5


@dataclass
class AdaptiveLimiter:
    """botocore's ClientRateLimiter: a token bucket that starts when the first throttle is seen."""

    enabled: bool = False
    fill_rate: float = MIN_RATE
    tokens: float = 0.0
    last_refill: float | None = None
    w_max: float = 0.0
    k: float = 0.0
    last_throttle: float = 0.0
    measured: float = 0.0
    bucket_start: float | None = None
    bucket_count: int = 0

    def wait(self, now: float) -> float:
        """Seconds to wait before sending at `now` (0 when the limiter is off or holds a token); takes the token."""
        if not self.enabled:
            return 0.0
        self._refill(now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        needed = (1.0 - self.tokens) / self.fill_rate
        self.tokens -= 1.0  # the token is the caller's once it has waited
        return needed

    def _refill(self, now: float) -> None:
        if self.last_refill is not None and now > self.last_refill:
            self.tokens = min(max(self.fill_rate, 1.0), self.tokens + (now - self.last_refill) * self.fill_rate)
        self.last_refill = now if self.last_refill is None else max(self.last_refill, now)

    def _measure(self, now: float) -> float:
        bucket = math.floor(now / RATE_BUCKET_S) * RATE_BUCKET_S
        if self.bucket_start is None:
            self.bucket_start = bucket
        self.bucket_count += 1
        if bucket > self.bucket_start:
            current = self.bucket_count / (bucket - self.bucket_start)
            self.measured = current * SMOOTHING + self.measured * (1 - SMOOTHING)
            self.bucket_start, self.bucket_count = bucket, 0
        return self.measured

    def answered(self, now: float, throttled: bool) -> None:
        measured = self._measure(now)
        if throttled:
            rate = measured if not self.enabled else min(measured, self.fill_rate)
            self.w_max = rate
            self.k = (self.w_max * (1 - BETA) / SCALE) ** (1 / 3)
            self.last_throttle = now
            new_rate = rate * BETA
            self.enabled = True
            self._refill(now)
        elif self.enabled:
            new_rate = SCALE * (now - self.last_throttle - self.k) ** 3 + self.w_max
        else:
            return
        self.fill_rate = max(MIN_RATE, min(new_rate, 2 * measured) if measured > 0 else new_rate)


@dataclass
class SdkClient:
    """The retry state of one SDK client (one target region): its quota and, in adaptive mode, its limiter."""

    mode: str
    rng: Rng
    quota: int = QUOTA_CAPACITY
    limiter: AdaptiveLimiter = field(default_factory=AdaptiveLimiter)

    @property
    def max_attempts(self) -> int:
        return {"none": 1, "legacy": LEGACY_ATTEMPTS}.get(self.mode, STANDARD_ATTEMPTS)

    def send_delay(self, now: float) -> float:
        """Seconds the client waits before an attempt (the adaptive limiter)."""
        return self.limiter.wait(now) if self.mode == "adaptive" else 0.0

    def retry_delay(self, attempt: int, error: str | None, outcome: str) -> float | None:
        """After failed attempt number `attempt` (1-based): seconds until the next one, or None: no retry."""
        if self.mode == "none" or attempt >= self.max_attempts or outcome != "fail" or error is None:
            return None
        if self.mode == "legacy":
            return LEGACY_BASE_S * 2 ** (attempt - 1) if error in LEGACY_RETRIED else None
        if error not in STANDARD_THROTTLING and error not in STANDARD_TRANSIENT:
            return None
        if self.quota < QUOTA_RETRY_COST:
            return None  # the retry quota is spent: the error goes to the caller
        self.quota -= QUOTA_RETRY_COST
        return self.rng.random() * min(2 ** (attempt - 1), STANDARD_CAP_S)

    def answered(self, now: float, error: str | None, outcome: str, retried: bool) -> None:
        """Every attempt's answer: successes refund the quota, throttles steer the adaptive limiter."""
        if self.mode in ("standard", "adaptive") and outcome == "ok":
            self.quota = min(QUOTA_CAPACITY, self.quota + (QUOTA_RETRY_COST if retried else QUOTA_SUCCESS_REFUND))
        if self.mode == "adaptive":
            self.limiter.answered(now, error in STANDARD_THROTTLING)
