"""Replication between regions: hybrid logical clocks, versions, links and conflict resolution.

Sans-I/O: no aiohttp, asyncio, time or randomness here; hosts (the region process, the simulator) inject the
clock and the transport.
"""
