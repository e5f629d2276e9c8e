"""A real strong-mode topology for the module: `globaltables up topologies/mrsc-test.yaml` in a temporary state dir
(two replicas us-east-1 and us-east-2, witness us-west-2, 10 ms links). Tests keep apart through unique keys, and
every test that cuts links heals them before it ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mrec_cluster import ROOT, Cluster, start_up, stop_up

TOPOLOGY = ROOT / "topologies" / "mrsc-test.yaml"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    running = start_up(TOPOLOGY, tmp_path_factory.mktemp("mrsc"))
    try:
        yield running
    finally:
        assert stop_up(running.process) == 0
