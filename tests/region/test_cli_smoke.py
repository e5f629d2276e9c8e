"""The aws CLI against a real region (one smoke test), and the `globaltables` command line's own argument rules.

The CLI is what a newcomer types first (the README's example), so it must work with nothing but dummy credentials
and `--endpoint-url`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from conformance.aws_cli import aws_cli
from globaltables.cli.main import build_parser


def test_aws_cli_create_put_get(region_endpoint, unique_table_name, tmp_path):
    name = unique_table_name("cli")
    created = aws_cli(
        region_endpoint, tmp_path, "create-table", "--table-name", name,
        "--attribute-definitions", "AttributeName=customerId,AttributeType=S", "AttributeName=sk,AttributeType=S",
        "--key-schema", "AttributeName=customerId,KeyType=HASH", "AttributeName=sk,KeyType=RANGE",
        "--billing-mode", "PAY_PER_REQUEST",
    )  # fmt: skip
    assert created["TableDescription"]["TableName"] == name
    aws_cli(region_endpoint, tmp_path, "wait", "table-exists", "--table-name", name)
    assert name in aws_cli(region_endpoint, tmp_path, "list-tables")["TableNames"]

    item = {"customerId": {"S": "C-17"}, "sk": {"S": "2026-10-28#o-981"}, "total": {"N": "42.50"}}
    aws_cli(region_endpoint, tmp_path, "put-item", "--table-name", name, "--item", json.dumps(item))
    key = {"customerId": {"S": "C-17"}, "sk": {"S": "2026-10-28#o-981"}}
    got = aws_cli(
        region_endpoint, tmp_path, "get-item", "--table-name", name, "--key", json.dumps(key), "--consistent-read"
    )
    assert got["Item"] == {**item, "total": {"N": "42.5"}}


# ----------------------------------------------------------------------------------- globaltables argument rules


def test_region_defaults():
    args = build_parser().parse_args(["region", "--name", "us-east-1"])
    assert (args.port, args.host, args.in_memory, args.data_dir) == (8000, "127.0.0.1", False, None)


@pytest.mark.parametrize(
    "argv",
    [
        ["region"],  # --name is required
        ["region", "--name", "us-east-1", "--in-memory", "--data-dir", "x"],  # one storage choice only
        ["region", "--name", "US East!"],
        ["region", "--name", "us-east-1", "--port", "70000"],
        ["no-such-command"],
        [],
    ],
)
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == 2


def test_console_script_help_lists_region():
    result = subprocess.run(
        [sys.executable, "-m", "globaltables.cli.main", "--help"],
        check=False, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert result.returncode == 0 and "region" in result.stdout


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "globaltables.cli.main", "region", "--name", "us-east-1", "--port", str(port),
             "--in-memory"],
            check=False, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )  # fmt: skip
    assert result.returncode == 1
    assert "address already in use" in result.stderr and "Traceback" not in result.stderr
