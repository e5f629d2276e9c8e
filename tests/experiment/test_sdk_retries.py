"""botocore's retry modes as the load generator applies them (capacity-facts.md §9): attempt counts, delays, the
standard retry quota, the adaptive limiter; and the throttle reasons read from an error answer."""

from __future__ import annotations

import pytest

from globaltables.experiment.load import throttling_reasons
from globaltables.experiment.sdk_retries import AdaptiveLimiter, SdkClient
from globaltables.experiment.workload import check_workload, parse_workload
from globaltables.runtime.rng import Rng

PTEE = "ProvisionedThroughputExceededException"


def delays(client: SdkClient, error: str) -> list[float]:
    out, attempt = [], 1
    while (delay := client.retry_delay(attempt, error, "fail")) is not None:
        out.append(delay)
        attempt += 1
    return out


def test_legacy_makes_ten_attempts_with_a_doubling_50ms_delay_and_never_retries_request_limit_exceeded():
    client = SdkClient("legacy", Rng(1))
    assert delays(client, PTEE) == [0.05 * 2**n for n in range(9)]  # 9 retries: 10 attempts, 25.55 s in all
    assert delays(client, "ThrottlingException") == delays(client, PTEE)
    assert delays(client, "RequestLimitExceeded") == []
    assert delays(client, "ConditionalCheckFailedException") == []
    assert client.retry_delay(1, "Timeout", "info") is None  # never a request that may have taken effect


def test_standard_makes_three_attempts_with_jittered_delays_and_a_retry_quota():
    client = SdkClient("standard", Rng(2))
    first = delays(client, "RequestLimitExceeded")
    assert len(first) == 2 and 0 <= first[0] < 1 and 0 <= first[1] < 2
    assert client.quota == 500 - 2 * 5
    assert delays(client, "TransactionCanceledException") == []
    client.answered(0.0, None, "ok", retried=True)
    assert client.quota == 500 - 5  # a success after retries refunds the retry's cost
    while client.quota >= 5:
        client.retry_delay(1, PTEE, "fail")
    assert client.retry_delay(1, PTEE, "fail") is None  # the quota is spent
    assert SdkClient("none", Rng(3)).retry_delay(1, PTEE, "fail") is None


def test_the_adaptive_limiter_starts_at_the_first_throttle_and_cuts_the_rate_by_beta():
    limiter = AdaptiveLimiter()
    assert limiter.wait(0.0) == 0.0 and not limiter.enabled
    now = 0.0
    for _ in range(200):  # 100 requests a second for 2 s, all served
        now += 0.01
        limiter.answered(now, throttled=False)
    assert not limiter.enabled and limiter.measured == pytest.approx(100, rel=0.2)
    limiter.answered(now, throttled=True)
    assert limiter.enabled and limiter.fill_rate == pytest.approx(0.7 * limiter.w_max)
    assert limiter.w_max == pytest.approx(100, rel=0.2)
    waits = [limiter.wait(now) for _ in range(5)]
    assert waits[-1] > 0  # sending faster than the cut rate waits
    cut = limiter.fill_rate
    for _ in range(500):  # 5 s more of answers at 100 a second: CUBIC recovers towards the old rate
        now += 0.01
        limiter.answered(now, throttled=False)
    assert limiter.fill_rate > cut
    for _ in range(100):  # one answer in 10 s: the fill rate is held to twice the measured rate
        now += 10.0
        limiter.answered(now, throttled=False)
    assert limiter.fill_rate <= 2 * limiter.measured + 1e-9 or limiter.fill_rate == 0.5


def test_sdk_retries_is_a_workload_choice():
    assert check_workload({"table": "T", "sdk_retries": "adaptive"}, ["T"], ["us-east-1"]) == []
    problems = check_workload({"table": "T", "sdk_retries": "boto"}, ["T"], ["us-east-1"])
    assert [path for path, _ in problems] == ["workload.sdk_retries"]
    assert parse_workload({"table": "T", "sdk_retries": "legacy"}, ["us-east-1"]).sdk_retries == "legacy"
    assert parse_workload({"table": "T"}, ["us-east-1"]).sdk_retries == "none"


def test_throttle_reasons_are_read_in_either_spelling():
    reason = {"reason": "TableWriteKeyRangeThroughputExceeded", "resource": "arn:aws:dynamodb:us-east-1:1:table/T"}
    assert throttling_reasons({"ThrottlingReasons": [reason]}) == ("TableWriteKeyRangeThroughputExceeded",)
    assert throttling_reasons({"throttlingReasons": [reason, {"reason": "IndexWriteMaxOnDemandThroughputExceeded"}]}) == (
        "TableWriteKeyRangeThroughputExceeded", "IndexWriteMaxOnDemandThroughputExceeded",
    )  # fmt: skip
    assert throttling_reasons({"message": "x"}) == () and throttling_reasons(None) == ()
