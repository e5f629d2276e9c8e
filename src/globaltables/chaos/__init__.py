"""Faults, histories and checkers: break the network on purpose, record what clients saw, prove what survived."""
