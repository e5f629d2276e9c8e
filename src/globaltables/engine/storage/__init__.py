"""Embedded storage of a region: SQLite in WAL mode (or in memory)."""
