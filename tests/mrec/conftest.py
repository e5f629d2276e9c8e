"""A real MREC topology for the module: `globaltables up topologies/mrec-test.yaml` in a temporary state dir.

Rules (as tests/region_process.py): the supervisor's stdout goes to a file, never a pipe, and is polled for its JSON
lines until `{"ready": true}` within a bounded wait; it is stopped by its PID (SIGTERM, then SIGKILL) at the end of
the module, and it stops every region it started. Tests keep apart through unique keys.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mrec_cluster import TOPOLOGY, Cluster, start_up, stop_up


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    running = start_up(TOPOLOGY, tmp_path_factory.mktemp("mrec"))
    try:
        yield running
    finally:
        assert stop_up(running.process) == 0
