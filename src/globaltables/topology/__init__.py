"""Topologies: the typed model of which regions run, where, how they are linked and what tables they hold
(`model.py`), read from YAML files (`load.py`), and one region's view of it (`plan.py`).

A leaf above `runtime` only: the engine, the replication cores, the hosts (region/, sim/) and everything above may
read it; it imports none of them. Checks whose rules live higher up (CreateTable's, the workload's) are handed to
the loader (`load.Checks`); `experiment.topology.load_topology` is the loader with all of them.
"""

from .load import Checks, TopologyError
from .model import Link, Region, TableSpec, Topology
from .plan import PeerPlan, RegionPlan, region_plan

__all__ = [
    "Checks",
    "Link",
    "PeerPlan",
    "Region",
    "RegionPlan",
    "TableSpec",
    "Topology",
    "TopologyError",
    "region_plan",
]
