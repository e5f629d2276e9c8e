"""A pytest kit for conflict-resolution regression tests against global tables (docs/testing-your-conflicts.md).

The same test runs on the simulated network (one process, virtual time, seeded, replayable) or against real region
processes (`globaltables up`), through real boto3 clients in both. `plugin.py` is the pytest glue (registered as
the `globaltables` pytest11 entry point); `simulated.py` (MREC; `simulated_mrsc.py`, strong mode) and `processes.py`
are the harnesses; `harness.py` is what they share; `handoff.py` makes simulated concurrent calls deterministic;
`assertions.py` renders failures with the operations involved.
Layering: testing/ sits on top of everything and may import any layer; nothing imports it.
"""

from .assertions import absent, attribute, has
from .harness import Harness, TableHandle, Undecided
from .spec import DEFAULT_TOPOLOGY, load_spec

__all__ = ["DEFAULT_TOPOLOGY", "Harness", "TableHandle", "Undecided", "absent", "attribute", "has", "load_spec", "simulate", "start_processes"]


def simulate(topology=None, seed: int = 0, **options):
    """A simulated harness (simulated.SimHarness for a `mode: mrec` topology, simulated_mrsc.MrscSimHarness for
    `mode: mrsc`); close it when done."""
    from .simulated import simulated_harness

    return simulated_harness(load_spec(topology), seed, **options)


def start_processes(topology=None, workdir=None):
    """A harness over real region processes (see processes.ProcessHarness); close it when done."""
    from .processes import ProcessHarness

    return ProcessHarness(load_spec(topology), workdir)
