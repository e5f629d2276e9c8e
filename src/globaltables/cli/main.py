"""`globaltables <command> ...`: the console script.

Each subcommand is one `Command`: a name, a help line, a function adding its arguments and a function running it
from the parsed arguments (returning the exit code). Adding a subcommand is adding an entry to `COMMANDS`.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REGION_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# ------------------------------------------------------------------------------------------------------- region


def region_name(text: str) -> str:
    if not REGION_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"invalid region name {text!r}: use lower-case letters, digits and hyphens (for example us-east-1)"
        )
    return text


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: must be 0..65535 (0 picks a free port)")
    return port


class DefaultInt(int):
    """A default that remembers it was not given, so `region --topology` can put the topology's value instead."""


class DefaultStr(str):
    __doc__ = DefaultInt.__doc__


class DefaultFloat(float):
    __doc__ = DefaultInt.__doc__


def is_default(value: object) -> bool:
    return isinstance(value, (DefaultInt, DefaultStr, DefaultFloat))


def add_region_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", required=True, type=region_name, help="region name, e.g. us-east-1")
    parser.add_argument(
        "--port",
        type=port_number,
        default=DefaultInt(8000),
        help="TCP port (default 8000, or with --topology the topology's port or 0; 0 picks a free one)",
    )
    parser.add_argument(
        "--host", default=DefaultStr("127.0.0.1"), help="address to bind (default 127.0.0.1, or the topology's)"
    )
    storage = parser.add_mutually_exclusive_group()
    storage.add_argument(
        "--data-dir",
        type=Path,
        metavar="DIR",
        help="directory of the region's durable store (created if missing; default ./.globaltables/region-NAME)",
    )
    storage.add_argument("--in-memory", action="store_true", help="keep all tables in memory; nothing survives exit")
    parser.add_argument(
        "--ready-file",
        type=Path,
        metavar="PATH",
        help="once listening, write the endpoint JSON line here too (useful with --port 0)",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        metavar="LEVEL",
        help="server log level on stderr: DEBUG, INFO (default), WARNING or ERROR",
    )
    parser.add_argument(
        "--ttl-sweep-interval",
        type=positive_seconds,
        default=DefaultFloat(30.0),
        metavar="SECONDS",
        help="how often expired items (TTL) are swept and old stream records trimmed "
        "(default 30, or with --topology the topology's ttl_sweep_interval_s)",
    )
    parser.add_argument(
        "--stream-retention",
        type=positive_seconds,
        default=24 * 3600.0,
        metavar="SECONDS",
        help="how long stream records stay readable (default 86400, DynamoDB's 24 hours)",
    )
    parser.add_argument(
        "--credentials",
        type=Path,
        metavar="FILE",
        help="verify every request's SigV4 signature against these access keys (YAML: key id -> secret, or "
        "key id -> {secret, regions}); default: the topology's credentials, else any well-formed signature",
    )
    parser.add_argument(
        "--capacity",
        choices=["modelled", "unlimited"],
        default=DefaultStr("modelled"),
        help="modelled (default, or the topology region's `capacity:`): tables throttle as DynamoDB's do "
        "(partitions, provisioned and on-demand limits); unlimited: nothing is ever throttled (docs/capacity.md)",
    )
    replication = parser.add_argument_group("region of a topology (global tables)")
    replication.add_argument(
        "--topology",
        type=Path,
        metavar="FILE",
        help="run region --name of this topology: replicate its declared tables to the other regions",
    )
    replication.add_argument(
        "--secret-file", type=Path, metavar="PATH", help="the shared secret (default: the topology's secret_file)"
    )
    replication.add_argument(
        "--peers-file",
        type=Path,
        metavar="PATH",
        help="a state.json written by `globaltables up`, polled for the peers' endpoints",
    )
    replication.add_argument(
        "--peer",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="a peer region's endpoint, e.g. eu-west-1=http://10.0.0.2:8000 (repeatable)",
    )


def positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds {text!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"invalid number of seconds {text!r}: must be positive")
    return seconds


def run_region(args: argparse.Namespace) -> int:
    from ..region.main import RegionConfig, run  # imported here so other commands do not load aiohttp

    if args.in_memory:
        data_dir = None
    elif args.data_dir is not None:
        data_dir = args.data_dir
    else:
        data_dir = Path(".globaltables") / f"region-{args.name}"
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from ..topology.credentials import CredentialsError, load_credentials

    replication = None
    credentials = None
    host, port, ttl_sweep = str(args.host), int(args.port), float(args.ttl_sweep_interval)
    capacity = str(args.capacity)
    try:
        if args.credentials is not None:
            credentials = load_credentials(args.credentials)
    except CredentialsError as error:
        print(f"globaltables region: {error}", file=sys.stderr)
        return 2
    if args.topology is not None:
        try:
            topology_region, replication, ttl_default, topology_credentials = topology_region_settings(args)
        except ValueError as error:  # TopologyError, SecretError, an unknown region or peer
            print(f"globaltables region: {error}", file=sys.stderr)
            return 2
        credentials = credentials if credentials is not None else topology_credentials
        # A topology's region binds where the topology says, or port 0, unless the command line says otherwise.
        host = topology_region.bind if is_default(args.host) else host
        port = (topology_region.port or 0) if is_default(args.port) else port
        ttl_sweep = ttl_default if is_default(args.ttl_sweep_interval) else ttl_sweep
        capacity = topology_region.capacity if is_default(args.capacity) else str(args.capacity)
    config = RegionConfig(
        name=args.name,
        host=host,
        port=port,
        data_dir=data_dir,
        ready_file=args.ready_file,
        ttl_sweep_interval_s=ttl_sweep,
        stream_retention_s=args.stream_retention,
        replication=replication,
        credentials=credentials,
        capacity=str(capacity),
    )
    return run(config)


def topology_region_settings(args: argparse.Namespace):
    """(the topology's Region, ReplicationSettings, the topology's TTL sweep interval, its credentials or None) for
    `region --topology`."""
    from ..experiment.topology import load_topology
    from ..region.plan_settings import replication_settings
    from ..topology.plan import region_plan
    from ..topology.secret import SECRET_ENV

    topology = load_topology(args.topology)
    try:
        plan = region_plan(topology, args.name)
    except KeyError as error:
        raise ValueError(error.args[0]) from None
    secret = plan.secret(args.secret_file)
    if secret is None:
        raise ValueError(
            f"a region of a topology needs the shared secret: give --secret-file, set secret_file in the topology, "
            f"or set ${SECRET_ENV}"
        )
    endpoints = {}
    for entry in args.peer:
        name, separator, url = entry.partition("=")
        if not separator or not url.startswith(("http://", "https://")):
            raise ValueError(f"--peer {entry!r}: expected NAME=http://HOST:PORT")
        if name not in topology.region_names:
            raise ValueError(f"--peer {entry!r}: no region {name!r} in topology {topology.name!r}")
        endpoints[name] = url
    settings = replication_settings(plan, secret, peers_file=args.peers_file, endpoints=endpoints)
    return plan.region, settings, plan.ttl_sweep_interval_s, plan.credentials


# ----------------------------------------------------------------------------------------------------- validate


def add_validate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", type=Path, metavar="FILE",
        help="topology files (topologies/*.yaml, with their workload:) and chaos schedules (chaos/*.yaml)",
    )  # fmt: skip
    parser.add_argument(
        "--topology", type=Path, metavar="FILE", help="check chaos schedules against this topology's regions"
    )


def run_validate(args: argparse.Namespace) -> int:
    from ..experiment.validate import validate_files

    valid = validate_files(args.files, lambda line: print(line, file=sys.stderr), args.topology)
    if valid:
        from ..experiment.validate import is_chaos_schedule

        schedules = sum(1 for path in args.files if is_chaos_schedule(path))
        topologies = len(args.files) - schedules
        parts = [f"{topologies} topology file{'s' if topologies != 1 else ''}"] if topologies else []
        parts += [f"{schedules} chaos schedule{'s' if schedules != 1 else ''}"] if schedules else []
        print(f"{' and '.join(parts)} valid")
    return 0 if valid else 1


# ---------------------------------------------------------------------------------------------------- up / down


def region_list(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected REGION[,REGION...]")
    return tuple(region_name(name) for name in names)


def add_up_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topology", type=Path, metavar="TOPOLOGY", help="topology file (topologies/*.yaml)")
    parser.add_argument(
        "--data-dir", type=Path, metavar="DIR", help="state dir (default ./.globaltables/<topology name>)"
    )
    parser.add_argument(
        "--only", type=region_list, default=(), metavar="REGION[,REGION]",
        help="start just these regions on this host; the others run elsewhere, where the topology places them",
    )  # fmt: skip


def run_up(args: argparse.Namespace) -> int:
    from ..experiment.supervisor import up

    logging.basicConfig(level="INFO", stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return up(args.topology, args.data_dir, only=args.only)


def add_down_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topology", type=Path, nargs="?", metavar="TOPOLOGY", help="topology file")
    parser.add_argument("--data-dir", type=Path, metavar="DIR", help="state dir of the running `up`")


def run_down(args: argparse.Namespace) -> int:
    from ..experiment.supervisor import down

    return down(args.topology, args.data_dir)


# -------------------------------------------------------------------------------------------- chaos / check


def add_chaos_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topology", type=Path, metavar="TOPOLOGY", help="topology file of the running `up`")
    parser.add_argument(
        "verb", metavar="VERB",
        help="partition A B | latency A B 200ms | loss A B 0.2 | duplicate A B 0.1 | reorder A B 0.2 [50ms] | "
        "bandwidth A B KB/s | stall A B | skew A +500ms | crash A | restart A | pause A | resume A | heal [all] | "
        "pause-replication TABLE [A] [--for 5s] | run SCHEDULE.yaml",
    )  # fmt: skip
    parser.add_argument("operands", nargs="*", metavar="ARG", help="regions and values (use -- before -500ms)")
    parser.add_argument("--one-way", action="store_true", help="only the direction A -> B")
    parser.add_argument("--seed", type=int, help="run: override the schedule's nemesis seed")
    parser.add_argument("--for", dest="hold_for", metavar="DURATION",
                        help="pause-replication: resume after this long (5s, 500ms); default: until heal")  # fmt: skip
    parser.add_argument("--data-dir", type=Path, metavar="DIR", help="state dir of the running `up`")


def run_chaos(args: argparse.Namespace) -> int:
    from ..experiment.chaos_commands import run_chaos as chaos

    from ..chaos.faults import FaultError, parse_duration

    hold_for = None
    if args.hold_for is not None:
        if args.verb != "pause-replication":
            print(f"globaltables chaos: --for only applies to pause-replication, not {args.verb}", file=sys.stderr)
            return 2
        try:
            hold_for = parse_duration(args.hold_for, "--for")
        except FaultError as error:
            print(f"globaltables chaos: {error}", file=sys.stderr)
            return 2
    return chaos(args.topology, args.verb, args.operands, args.one_way, args.data_dir, args.seed, hold_for)


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "topology", type=Path, nargs="?", metavar="TOPOLOGY", help="topology file of the running `up`"
    )
    parser.add_argument(
        "--results", type=Path, metavar="DIR",
        help="instead: rerun the checkers offline on a `globaltables run` results dir (history + final state)",
    )  # fmt: skip
    parser.add_argument("--data-dir", type=Path, metavar="DIR", help="state dir of the running `up`")
    parser.add_argument("--timeout", type=positive_seconds, default=60.0, metavar="SECONDS",
                        help="how long to wait for replication to settle (default 60)")  # fmt: skip


def run_check(args: argparse.Namespace) -> int:
    if args.results is not None:
        from ..experiment.runner import check_results_dir

        return check_results_dir(args.results)
    if args.topology is None:
        print("globaltables check: give a TOPOLOGY (of a running `up`) or --results DIR", file=sys.stderr)
        return 2
    from ..experiment.chaos_commands import run_check as check

    return check(args.topology, args.data_dir, args.timeout)


# ----------------------------------------------------------------------------------------- run / compare / check


def seed_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: expected an integer") from None


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topology", type=Path, metavar="TOPOLOGY", help="topology file with a workload: section")
    parser.add_argument("--chaos", type=Path, metavar="FILE", help="chaos schedule (chaos/*.yaml) run with the load")
    parser.add_argument("--seed", type=seed_number, default=1, help="fixes the workload and the fault schedule (1)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="results dir (default results/<name>-<timestamp>)")
    parser.add_argument(
        "--duration", type=positive_seconds, metavar="SECONDS", help="override the workload's duration_s"
    )
    parser.add_argument(
        "--attach", action="store_true",
        help="run against regions already up, wherever the topology places them, instead of starting them",
    )  # fmt: skip
    parser.add_argument(
        "--simulated", action="store_true",
        help="run on the deterministic simulator, in virtual time, in this process (same seed, same files)",
    )  # fmt: skip


def run_run(args: argparse.Namespace) -> int:
    if args.simulated:
        if args.attach:
            print("globaltables run: --simulated and --attach exclude each other", file=sys.stderr)
            return 2
        from ..experiment.simulated_run import run_simulated_command

        return run_simulated_command(args.topology, args.chaos, args.seed, args.out, args.duration)
    from ..experiment.runner import run_command

    return run_command(args.topology, args.chaos, args.seed, args.out, args.duration, attach=args.attach)


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(parser)
    parser.add_argument(
        "--modes", default="mrec,mrsc", metavar="M,M", help="comma-separated modes to run (default mrec,mrsc)"
    )
    parser.add_argument("--write-modes", metavar="W,W",
                        help="also run each mode once per write mode (any, single, home), side by side")  # fmt: skip


def run_compare(args: argparse.Namespace) -> int:
    from ..experiment.compare import compare_command

    if args.simulated and args.attach:
        print("globaltables compare: --simulated and --attach exclude each other", file=sys.stderr)
        return 2
    return compare_command(args.topology, args.modes, args.chaos, args.seed, args.out, args.duration,
                           args.write_modes, attach=args.attach, simulated=args.simulated)  # fmt: skip



def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=("kubernetes", "chaos-mesh"), help="what to write")
    parser.add_argument(
        "file", type=Path, metavar="FILE",
        help="kubernetes: the topology file; chaos-mesh: the chaos schedule (with --topology)",
    )  # fmt: skip
    parser.add_argument("--topology", type=Path, metavar="FILE", help="chaos-mesh: the topology it runs against")
    parser.add_argument("--image", default=None, metavar="IMAGE", help="container image (default globaltables:VERSION)")
    parser.add_argument(
        "--namespace", default=None, metavar="NS", help="Kubernetes namespace (default: the topology's name)"
    )
    parser.add_argument("--seed", type=int, help="chaos-mesh: the nemesis seed (default the schedule's)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write here instead of standard output")


def run_export(args: argparse.Namespace) -> int:
    from ..experiment.export import export_command

    return export_command(args.kind, args.file, topology=args.topology, image=args.image, namespace=args.namespace,
                          seed=args.seed, out=args.out)  # fmt: skip


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topology", type=Path, nargs="+", metavar="TOPOLOGY",
                        help="topology file with a workload: section; several files or a directory sweep each "
                        "(in every --modes mode it can run) and sum them up")  # fmt: skip
    chaos = parser.add_mutually_exclusive_group()
    chaos.add_argument("--chaos", type=Path, metavar="FILE", help="one chaos schedule for every seed")
    chaos.add_argument("--nemesis", choices=("random",),
                       help="random: each seed draws its own fault mix (swarm testing), written as a schedule")  # fmt: skip
    parser.add_argument("--seeds", required=True, metavar="A-B",
                        help="the seeds to run: 1-1000, 7, or 1,5,9-12")  # fmt: skip
    parser.add_argument("--modes", metavar="M,M", help="run each seed in each mode (default: the topology's)")
    parser.add_argument("--jobs", type=int, metavar="N", help="local worker processes (default: one per core)")
    parser.add_argument("--executor", default="local", metavar="local|dask://HOST:PORT",
                        help="where runs execute: local processes (default) or a Dask cluster's scheduler")  # fmt: skip
    parser.add_argument("--out", type=Path, metavar="DIR", help="sweep dir (default results/sweep-<name>-<time>)")
    parser.add_argument("--duration", type=positive_seconds, metavar="SECONDS",
                        help="override the workload's duration_s in every run")  # fmt: skip
    parser.add_argument("--keep-failures", type=int, default=10, metavar="N",
                        help="replay this many failing seeds here, with their files, for shrink (default 10)")  # fmt: skip


def run_sweep(args: argparse.Namespace) -> int:
    from ..experiment.sweep import sweep_command
    from ..experiment.sweep_suite import suite_command

    if len(args.topology) > 1 or args.topology[0].is_dir():
        return suite_command(args.topology, args.seeds, chaos_path=args.chaos, nemesis=args.nemesis, modes=args.modes,
                             jobs=args.jobs, executor=args.executor, out_dir=args.out, duration_s=args.duration,
                             keep_failures=args.keep_failures)  # fmt: skip
    return sweep_command(args.topology[0], args.seeds, chaos_path=args.chaos, nemesis=args.nemesis, modes=args.modes,
                         jobs=args.jobs, executor=args.executor, out_dir=args.out, duration_s=args.duration,
                         keep_failures=args.keep_failures)  # fmt: skip


def add_shrink_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", type=Path, metavar="RESULTS_DIR",
                        help="a failing simulated run: a sweep's failures/<mode>-seed-N/ or a run --simulated dir")  # fmt: skip
    parser.add_argument("--max-runs", type=int, default=200, metavar="N", help="most candidate runs (default 200)")


def run_shrink(args: argparse.Namespace) -> int:
    from ..experiment.shrink import shrink_command

    return shrink_command(args.results, max_runs=args.max_runs)


COMMANDS = [
    Command("region", "run one standalone region: a DynamoDB-compatible endpoint", add_region_arguments, run_region),
    Command(
        "up", "start every region of a topology and replicate between them (until Ctrl-C)", add_up_arguments, run_up
    ),
    Command("down", "stop the `globaltables up` running a topology", add_down_arguments, run_down),
    Command(
        "chaos",
        "inject a fault into the regions `up` started (or run a chaos schedule)",
        add_chaos_arguments,
        run_chaos,
    ),
    Command(
        "check",
        "wait for replication to settle, then compare every replica's tables and GSIs",
        add_check_arguments,
        run_check,
    ),
    Command(
        "validate",
        "check topology files; print each error with its file and field",
        add_validate_arguments,
        run_validate,
    ),
    Command(
        "run",
        "run an experiment: regions, workload, checkers; writes results.json and report.md",
        add_run_arguments,
        run_run,
    ),
    Command(
        "compare",
        "run the same experiment under several modes (mrec, mrsc) and compare them side by side",
        add_compare_arguments,
        run_compare,
    ),
    Command(
        "sweep",
        "many simulated runs, one per seed (and mode), locally or on a Dask cluster; failing seeds with replays",
        add_sweep_arguments,
        run_sweep,
    ),
    Command(
        "shrink",
        "from a failing simulated run, search for a smaller case that still fails; write it as topology + chaos",
        add_shrink_arguments,
        run_shrink,
    ),
    Command(
        "export",
        "write Kubernetes manifests for a topology, or Chaos Mesh resources for a chaos schedule",
        add_export_arguments,
        run_export,
    ),
]


# ---------------------------------------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="globaltables", description="A testbed that reproduces Amazon DynamoDB global tables on one machine."
    )
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        sub = subcommands.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
