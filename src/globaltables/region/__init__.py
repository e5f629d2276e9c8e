"""The region process: one DynamoDB-compatible endpoint (aiohttp) in front of one engine.

`wire.py` holds the protocol (targets, body limits, errors, framing) without any web framework, `app.py` the aiohttp
application, `main.py` the process lifecycle (store, signals, readiness).
"""
