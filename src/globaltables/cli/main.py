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


def add_region_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", required=True, type=region_name, help="region name, e.g. us-east-1")
    parser.add_argument("--port", type=port_number, default=8000, help="TCP port (default 8000; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
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
        default=30.0,
        metavar="SECONDS",
        help="how often expired items (TTL) are swept and old stream records trimmed (default 30)",
    )
    parser.add_argument(
        "--stream-retention",
        type=positive_seconds,
        default=24 * 3600.0,
        metavar="SECONDS",
        help="how long stream records stay readable (default 86400, DynamoDB's 24 hours)",
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
    config = RegionConfig(
        name=args.name,
        host=args.host,
        port=args.port,
        data_dir=data_dir,
        ready_file=args.ready_file,
        ttl_sweep_interval_s=args.ttl_sweep_interval,
        stream_retention_s=args.stream_retention,
    )
    return run(config)


# ----------------------------------------------------------------------------------------------------- validate


def add_validate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="topology files (topologies/*.yaml)")


def run_validate(args: argparse.Namespace) -> int:
    from ..experiment.topology import validate_files

    valid = validate_files(args.files, lambda line: print(line, file=sys.stderr))
    if valid:
        print(f"{len(args.files)} topology file{'s' if len(args.files) != 1 else ''} valid")
    return 0 if valid else 1


COMMANDS = [
    Command("region", "run one standalone region: a DynamoDB-compatible endpoint", add_region_arguments, run_region),
    Command(
        "validate",
        "check topology files; print each error with its file and field",
        add_validate_arguments,
        run_validate,
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
