"""`globaltables chaos TOPOLOGY VERB ...` and `globaltables check TOPOLOGY`, on the regions `globaltables up` started.

Both find the running regions through the state dir's `state.json` (endpoints, supervisor control URL) and the
topology's secret; when no running `up` holds the state dir, they attach to the regions where the topology places
them (regions of other hosts: `up --only`, Kubernetes; experiment/deployment.py). `chaos` validates the whole
command against the topology before touching anything: an unknown verb or region exits 2 and changes nothing.
One-shot faults persist until `heal`; `chaos T pause-replication TABLE [REGION] [--for 5s]` holds a table's
replication (every link of it, or that replica's both ways) until `heal`, or for the duration given, the command
waiting and then resuming it. `chaos T run SCHEDULE.yaml [--seed N]` runs a schedule (chaos.controller) ending with
the final heal and quiet period.
`check` waits until every lane's acknowledged position equals its log end on two consecutive polls, then compares
every replica's (not the witness's) base tables and GSIs: exit 0 converged, 1 not (keys listed), 2 could not run.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
from pathlib import Path
from typing import Any

from ..chaos.checkers.convergence import check_convergence
from ..chaos.checkers.result import exit_status
from ..chaos.controller import Controller
from ..chaos.faults import FaultError, build
from ..chaos.history import History, key_id
from ..chaos.region_refs import expand_step
from ..chaos.schedule import ScheduleError, fit_tables, load_schedule
from ..chaos.target import RegionControlTarget, TargetError
from ..topology.load import TopologyError
from ..topology.model import Topology
from ..topology.secret import SecretError, topology_secret
from .deployment import DeploymentError, attached
from .dynamodb_client import dynamodb
from .supervisor import STATE_FILE, default_data_dir, lock_holder
from .topology import load_topology

CLI_VERBS = (
    "partition", "latency", "loss", "duplicate", "reorder", "bandwidth", "stall", "skew", "crash", "restart", "pause",
    "resume", "heal", "run", "pause-replication",
)  # fmt: skip
# One-shot link faults other than latency: each adds to the link's faults in force (the region keeps one set per
# link), so `loss` then `duplicate` on the same link keeps both.
LINK_VERBS = ("loss", "duplicate", "reorder", "bandwidth", "stall")
QUIESCE_TIMEOUT_S = 60.0
SUPERVISORS_FILE = "supervisors.json"  # attached regions' supervisors, remembered for a restart after a crash
POLL_S = 0.1
# Regions check that a request is SigV4-signed but do not verify the signature (region/wire.py).


class CommandError(Exception):
    pass


def _err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def open_target(topology_path: Path, data_dir: Path | None) -> tuple[Topology, RegionControlTarget]:
    topology = load_topology(topology_path)
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir(topology)
    state_path = data_dir / STATE_FILE
    if lock_holder(data_dir) is None:  # no `up` here: the regions run elsewhere, where the topology places them
        try:
            return topology, attached(topology, data_dir / SUPERVISORS_FILE).control_target(topology)
        except DeploymentError as error:
            raise CommandError(f"no running `globaltables up` holds {data_dir}, and attaching failed: {error}")
    try:
        state = json.loads(state_path.read_text())
    except (OSError, ValueError) as error:
        raise CommandError(f"cannot read {state_path} ({error}): is `globaltables up {topology_path}` running?")
    secret_file = state.get("secret_file")
    secret = topology_secret(topology, Path(secret_file) if secret_file else None)
    if not secret:
        raise CommandError(f"{state_path}: no secret_file, and $GLOBALTABLES_SECRET is not set")
    offsets = {region.name: region.clock_offset_ms for region in topology.regions}
    return topology, RegionControlTarget.from_state(state, secret, offsets)


def cli_fault(topology: Topology, verb: str, operands: list[str], one_way: bool):
    """The Fault of a one-shot CLI command (validated against the topology), or None for heal/run."""
    names = topology.region_names
    if verb not in CLI_VERBS:
        raise FaultError(f"unknown verb {verb!r}; use one of {', '.join(CLI_VERBS)}")
    arity = {
        "partition": 2, "latency": 3, "loss": 3, "duplicate": 3, "reorder": (3, 4), "bandwidth": 3, "stall": 2,
        "skew": 2, "heal": (0, 1), "run": 1, "pause-replication": (1, 2),
    }.get(verb, 1)  # fmt: skip
    if (isinstance(arity, tuple) and len(operands) not in arity) or (isinstance(arity, int) and len(operands) != arity):
        raise FaultError(f"{verb}: wrong number of operands {operands!r}")
    if verb == "heal":
        if operands and operands != ["all"]:
            raise FaultError(f"heal: expected nothing or 'all', got {operands[0]!r}")
        return None
    if verb == "run":
        return None
    fields: dict[str, Any] = {"one_way": one_way} if one_way else {}
    if verb == "pause-replication":
        table_names = [spec.name for spec in topology.tables]
        if operands[0] not in table_names:
            raise FaultError(f"pause-replication: no table {operands[0]!r} in the topology; tables: "
                             f"{', '.join(table_names) or 'none'}")  # fmt: skip
        fields["table"] = operands[0]
        if len(operands) == 2:
            fields["region"] = operands[1]
        return build(verb, fields, names)
    if verb in ("partition", "latency", *LINK_VERBS):
        fields["between"] = operands[:2]
        if verb == "latency":
            fields["latency"] = operands[2]
        elif verb in ("loss", "duplicate", "reorder"):
            fields["rate"] = _number(verb, "rate", operands[2])
            if verb == "reorder" and len(operands) == 4:
                fields["delay"] = operands[3]
        elif verb == "bandwidth":
            fields["kbps"] = _number(verb, "kbps", operands[2])
    else:
        fields["region"] = operands[0]
        if verb == "skew":
            fields["offset"] = operands[1]
    witnesses = [region.name for region in topology.regions if region.role == "witness"]
    concrete = expand_step(fields, names, witnesses)  # `replica[0]`, `witness`, ... as in schedules
    if len(concrete) != 1:
        raise FaultError(f"{verb}: {' '.join(operands)} names {len(concrete)} faults; a schedule step can expand")
    return build(verb, concrete[0], names, witnesses=witnesses)


def _number(verb: str, name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise FaultError(f"{verb}: {name} {text!r} is not a number") from None


def pause_replication(target: RegionControlTarget, fault, hold_for_s: float | None) -> None:
    """Add the fault's holds to what each region holds already; with a duration, wait, then take them back."""
    added = fault.held_replication(target.regions)
    before = {region: target.status(region).get("held", {}) for region in target.regions}
    for region, tables in added.items():
        held = {table: set(peers) for table, peers in before[region].items()}
        for table, peers in tables.items():
            held.setdefault(table, set()).update(peers)
        target.set_held_replication(region, held)
    print(json.dumps({"paused_replication": fault.describe()}), flush=True)
    if hold_for_s is None:
        return
    time.sleep(hold_for_s)
    for region in added:
        target.set_held_replication(region, before[region])
    print(json.dumps({"resumed_replication": fault.describe()}), flush=True)


def run_chaos(topology_path: Path, verb: str, operands: list[str], one_way: bool, data_dir: Path | None,
              seed: int | None = None, hold_for_s: float | None = None) -> int:  # fmt: skip
    try:
        topology = load_topology(topology_path)
        fault = cli_fault(topology, verb, operands, one_way)
        schedule = None
        if verb == "run":
            witnesses = [r.name for r in topology.regions if r.role == "witness"]
            schedule = load_schedule(operands[0], topology.region_names, witnesses, seed=seed)
            tables = [spec.name for spec in topology.tables]
            schedule, problems = fit_tables(schedule, tables, topology.mode)
            if problems:
                raise ScheduleError(problems)
        topology, target = open_target(topology_path, data_dir)
    except TopologyError as error:
        for line in error.errors:
            _err(line)
        return 2
    except ScheduleError as error:
        for line in error.errors:
            _err(line)
        return 2
    except (FaultError, CommandError, SecretError) as error:
        _err(f"globaltables chaos: {error}")
        return 2
    try:
        if verb == "heal":
            target.heal_all()
        elif verb == "run":
            assert schedule is not None
            history = History()
            Controller(target, history, log=lambda line: print(line, flush=True)).run(schedule)
            print(json.dumps({"faults": [op.to_dict() for op in history.faults()]}))
        elif verb == "partition":
            for source, receiver in fault.directions():
                current = target.status(receiver)["transport"]["grudges"]
                target.set_grudges(receiver, set(current) | {source})
        elif verb == "latency":
            for source, receiver in fault.directions():
                changes = fault.link_changes()[(source, receiver)]
                target.faults(source, {"latency": {receiver: {"latency_ms": changes["latency_ms"], "jitter_ms": 0}}})
        elif verb in LINK_VERBS:
            for source, receiver in fault.directions():
                current = target.status(source)["transport"]["peers"].get(receiver, {}).get("fault") or {}
                changes = {**current, **fault.link_changes()[(source, receiver)]}
                target.faults(source, {"links": {receiver: changes}})
        elif verb == "skew":
            target.faults(fault.regions[0], {"clock_offset_ms": fault.params["offset_ms"]})
        elif verb == "pause-replication":
            pause_replication(target, fault, hold_for_s)
        else:
            target.process(fault.regions[0], verb)
    except TargetError as error:
        _err(f"globaltables chaos: {error}")
        return 1
    return 0


# ------------------------------------------------------------------------------------------------------ check


def scan_all(
    endpoint: str, region: str, table: str, key_names: list[str], index: str | None = None, credentials=None
) -> dict[str, dict]:
    items: dict[str, dict] = {}
    request: dict[str, Any] = {"TableName": table}
    if index is not None:
        request["IndexName"] = index
    else:
        request["ConsistentRead"] = True
    while True:
        answer = dynamodb(endpoint, "Scan", request, region, credentials)
        for item in answer.get("Items", []):
            items[key_id({name: item.get(name) for name in key_names})] = item
        if not answer.get("LastEvaluatedKey"):
            return items
        request["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def replica_states(target: RegionControlTarget, replicas: list[str], tables: list[str], credentials=None) -> dict:
    """{region: {table or table/index/name: {key_id: item}}} of every replica (`credentials`: the topology's
    access keys, when its regions verify signatures)."""
    states: dict[str, dict[str, dict]] = {region: {} for region in replicas}
    for region in replicas:
        endpoint = target.endpoints[region]
        for table in tables:
            description = dynamodb(endpoint, "DescribeTable", {"TableName": table}, region, credentials)["Table"]
            key_names = [entry["AttributeName"] for entry in description["KeySchema"]]
            states[region][table] = scan_all(endpoint, region, table, key_names, credentials=credentials)
            for index in description.get("GlobalSecondaryIndexes", []):
                names = key_names + [
                    e["AttributeName"] for e in index["KeySchema"] if e["AttributeName"] not in key_names
                ]
                states[region][f"{table}/index/{index['IndexName']}"] = scan_all(
                    endpoint, region, table, names, index["IndexName"], credentials
                )
    return states


def wait_quiescent(target: RegionControlTarget, regions: list[str], timeout_s: float) -> float:
    """Seconds waited until two consecutive polls find every lane's acked == log_end; TimeoutError otherwise."""
    start = time.monotonic()
    streak = 0
    while True:
        settled = all(link["acked"] == link["log_end"] for region in regions for link in target.status(region)["links"])
        streak = streak + 1 if settled else 0
        if streak >= 2:
            return time.monotonic() - start
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"replication not quiescent after {timeout_s:.0f} s")
        time.sleep(POLL_S)


def run_check(topology_path: Path, data_dir: Path | None, timeout_s: float = QUIESCE_TIMEOUT_S) -> int:
    try:
        topology, target = open_target(topology_path, data_dir)
        replicas = [region.name for region in topology.replicas]
        waited = wait_quiescent(target, list(topology.region_names), timeout_s)
        tables = [spec.definition["TableName"] for spec in topology.tables]
        result = check_convergence(replica_states(target, replicas, tables, topology.credentials))
    except TopologyError as error:
        for line in error.errors:
            _err(line)
        return 2
    except (CommandError, SecretError, TargetError, TimeoutError, urllib.error.URLError, OSError, KeyError) as error:
        _err(f"globaltables check: could not complete: {error}")
        return 2
    print(f"quiescent after {waited:.2f} s")
    print(result)
    return exit_status([result])
