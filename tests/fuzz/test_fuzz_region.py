"""The project's fuzzer against a real region process: structure-aware requests from the botocore model's shapes and
byte-level HTTP framing cases (harness.py says what is judged), a bounded few thousand with a fixed seed.

Passing means: no 5xx, every error DynamoDB-shaped, no hang, the region alive, the canary items unchanged, and the
region log small (a malformed request is one rate-limited WARNING line, never a traceback). The second test plants
one of the defects this fuzzer found back into a region (planted_region.py) and shows the run then fails, naming
the code site of the 5xx from the region's traceback. Long runs: bench/fuzz.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fuzz.harness import run_fuzz

SEED = 20261201
COUNT = 2500  # about 15 s here on two shared cores
QUIET_LOG_BYTES = 64_000
PLANTED = Path(__file__).resolve().parent / "planted_region.py"


def test_a_seeded_fuzz_run_finds_no_5xx_no_malformed_error_and_no_hang(region):
    report = run_fuzz(region.address, SEED, COUNT, region.log_path, process_alive=lambda: region.process.poll() is None)
    report.assert_clean()
    assert report.requests == COUNT and report.byte_cases > COUNT // 10
    # The requests got past the first checks: plenty of them succeeded, and refusals had many statuses.
    assert report.statuses[200] > COUNT // 20
    assert {400, 404, 413} <= set(report.statuses)
    assert report.log_bytes < QUIET_LOG_BYTES, region.log_tail()


def test_a_planted_defect_fails_the_fuzz_run_naming_the_site(region_factory):
    region = region_factory(program=(str(PLANTED), "null-elements"))
    region.start()
    report = run_fuzz(region.address, SEED, 800, region.log_path, process_alive=lambda: region.process.poll() is None)
    with pytest.raises(AssertionError) as failed:
        report.assert_clean()
    message = str(failed.value)
    assert "x 5xx" in message
    # The site: a project file, line and function, and the exception the null caused there.
    assert re.search(r"traceback sites in the region log: \S+\.py:\d+ in \S+: \w+(Error|Exception)", message), message
    assert report.alive and report.canaries_intact  # a 500 is a refused request: the region itself carries on
