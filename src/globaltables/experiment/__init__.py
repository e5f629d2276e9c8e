"""Experiments: topology files, workloads, and running them on real processes or the simulator."""
