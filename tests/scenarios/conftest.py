"""Scenario tests: the semantics of global tables under conflict, written with the kit's fixtures
(`topology`, `global_table`; src/globaltables/testing/). Each test names its own keys after itself, so tests can
share one process topology per module, and a simulated run stays a pure function of its seed."""

from __future__ import annotations

import pytest


@pytest.fixture
def customer(request: pytest.FixtureRequest) -> str:
    """A customer id unique to the test (and to its mode), deterministic across runs."""
    return request.node.name
