"""Print one line per simulated scenario of the library: its id and the SHA-256 of its replay fingerprint (message
trace, history, final items) under `--globaltables-seed N`. test_replay.py runs this in two processes with
different PYTHONHASHSEEDs and compares the output: replay must not depend on the process it runs in."""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from test_replay import run_once, scenarios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--globaltables-seed", type=int, required=True)
    seed = parser.parse_args().globaltables_seed
    for param in scenarios():
        (function,) = param.values
        print(param.id, hashlib.sha256(run_once(function, seed)).hexdigest(), flush=True)


if __name__ == "__main__":
    main()
