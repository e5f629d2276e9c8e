"""tests/conformance stays a suite anyone can point at any DynamoDB endpoint, and it passes with every request
compressed.

1. Portable: its modules import nothing of the product (only boto3, botocore, the standard library and the
   process helper tests/region_process.py, which itself imports no product code), and its tests make no boto3
   client of their own: every client comes from conftest.py's `client_factory`, so `--request-compression`,
   `--endpoint` and `--aws` reach every request.
2. Green under request compression: the whole directory, run as its own pytest session with botocore's request
   compression forced on for every operation and every size (`--request-compression`), passes, and its summary
   shows that every request it sent was gzip-compressed. That run's regions keep their tables on disk
   (`--region-store disk`), so the suite passes on both stores: the ordinary run uses in-memory regions.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
CONFORMANCE = TESTS / "conformance"
ROOT = TESTS.parent
HELPERS = {"region_process"}
# Names a conformance test module may not call: clients come from client_factory only.
CLIENT_MAKERS = {"client", "resource", "make_client", "Session"}
SUMMARY = re.compile(r"request compression: (\d+) of (\d+) requests sent gzip-compressed")


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
    return modules


def called_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            function = node.func
            names.add(function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", ""))
    return names


def conformance_modules() -> list[Path]:
    return sorted(CONFORMANCE.glob("*.py"))


def test_the_conformance_suite_imports_nothing_of_the_product():
    offenders = {
        str(path.relative_to(TESTS)): sorted(m for m in imported_modules(path) if m.split(".")[0] == "globaltables")
        for path in [*conformance_modules(), *(TESTS / f"{helper}.py" for helper in HELPERS)]
    }
    assert conformance_modules(), "no conformance modules found"
    assert {path: modules for path, modules in offenders.items() if modules} == {}


def test_conformance_tests_make_their_clients_with_the_factory():
    offenders = {}
    for path in conformance_modules():
        if path.name == "conftest.py":  # the factory itself
            continue
        made = called_names(path) & CLIENT_MAKERS
        if made:
            offenders[path.name] = sorted(made)
    assert offenders == {}


@pytest.mark.timeout(900)
def test_the_whole_conformance_directory_passes_with_every_request_compressed(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(CONFORMANCE), "--request-compression", "--region-store", "disk", "-q", "-n", "0", "-p", "no:cacheprovider",
         f"--basetemp={tmp_path / 'run'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=840,
    )  # fmt: skip
    tail = "\n".join((run.stdout + run.stderr).splitlines()[-40:])
    assert run.returncode == 0, tail
    [(compressed, sent)] = SUMMARY.findall(run.stdout)
    assert int(sent) > 100 and compressed == sent, tail
