"""A region process with one of the defects the fuzzer once found planted back: the test that the fuzzer catches
it (test_fuzz_region.py) starts its region through this script.

Usage: python planted_region.py DEFECT region ARGS...  (the arguments of `globaltables region`)

Defects
- `null-elements`: the validator's old rule, a null list element or map value read as absent (so `[null]` reached
  the operations, which crashed on it: TransactWriteItems, BatchWriteItem, CreateTable, TagResource, ...).
"""

from __future__ import annotations

import sys


def plant_null_elements() -> None:
    from globaltables.engine import validation

    checked = validation._check_value

    def check_element(value, f, path, errors):
        if value is None:
            return  # the defect: no "Member must not be null"
        checked(value, f, path, errors)

    validation.check_element = check_element  # before any operation module imports it


DEFECTS = {"null-elements": plant_null_elements}

if __name__ == "__main__":
    DEFECTS[sys.argv[1]]()
    from globaltables.cli.main import main

    sys.exit(main(sys.argv[2:]))
