"""Shared fixtures: real region processes and boto3 clients pointed at them.

Each test module gets its own in-memory region process (`region`, module scope), started once and stopped by PID
at the end of the module; tests share it and keep apart through unique table names.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from region_process import REGION_NAME, RegionProcess, make_client


def pytest_addoption(parser: pytest.Parser) -> None:
    """The conformance suite's targets (tests/conformance/conftest.py); here because options must be known at start."""
    group = parser.getgroup("conformance", "tests/conformance against any DynamoDB endpoint")
    group.addoption("--endpoint", metavar="URL", help="run tests/conformance against this running endpoint")
    group.addoption("--aws", action="store_true", help="run tests/conformance against real DynamoDB (your credentials)")
    group.addoption(
        "--request-compression",
        action="store_true",
        help="tests/conformance: every boto3 client gzip-compresses every request",
    )
    group.addoption(
        "--region-store",
        choices=("memory", "disk"),
        default="memory",
        help="tests/conformance: the store of the region processes it starts (--in-memory or --data-dir)",
    )


@pytest.fixture(scope="module")
def region(tmp_path_factory) -> Iterator[RegionProcess]:
    """An in-memory region process for the whole test module."""
    process = RegionProcess(REGION_NAME, tmp_path_factory.mktemp("region"))
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def region_endpoint(region: RegionProcess) -> str:
    assert region.endpoint is not None
    return region.endpoint


@pytest.fixture(scope="module")
def dynamodb(region_endpoint: str):
    """A boto3 DynamoDB client on the module's region."""
    return make_client(region_endpoint)


@pytest.fixture
def region_factory(tmp_path: Path) -> Iterator[Callable[..., RegionProcess]]:
    """Make region processes (not started) that are stopped when the test ends, whatever happens."""
    made: list[RegionProcess] = []

    def make(name: str = REGION_NAME, data_dir: Path | None = None, **kwargs) -> RegionProcess:
        process = RegionProcess(name, tmp_path / f"run-{len(made)}", data_dir=data_dir, **kwargs)
        made.append(process)
        return process

    yield make
    for process in made:
        process.stop()


_table_counter = itertools.count(1)
_run_id = f"{os.getpid():x}{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="session")
def unique_table_name() -> Callable[[str], str]:
    """`unique_table_name("Orders")` -> a table name no other test uses (valid: [a-zA-Z0-9_.-], 3-255 chars)."""

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{_run_id}-{next(_table_counter)}"

    return make
