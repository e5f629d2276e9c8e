"""Deterministic hosts for the runtime seams: virtual time, a discrete-event loop and a simulated network.

Everything here is driven by one `Scheduler` and seeded `Rng` forks, so a run is a pure function of its seed:
the same seed gives a byte-identical message trace in any process (whatever PYTHONHASHSEED is).
Layering: imports only `globaltables.runtime` and the standard library (plus orjson for traces).
"""
