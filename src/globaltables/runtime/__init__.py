"""Seams every layer is handed instead of reaching for the machine: clocks, transports and randomness."""
