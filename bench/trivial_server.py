"""The ceiling of any aiohttp region: a server that only parses the JSON body and answers from a dict.

It speaks just enough of the DynamoDB JSON 1.0 protocol for `region_throughput.py`: CreateTable, DescribeTable,
PutItem, GetItem, Query (partition key equality only), BatchWriteItem. No validation, no normalisation, no storage
beyond a dict per partition. Its framing matches the region's (x-amzn-RequestId, x-amz-crc32, Content-Type), so
the difference between the two is the region's own work: validation, the engine, SQLite.

Usage: python bench/trivial_server.py --port 0   (prints {"endpoint": ...} once listening)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import zlib

import orjson
from aiohttp import web

PREFIX = "DynamoDB_20120810."


def make_app() -> web.Application:
    tables: dict[str, dict] = {}  # table name -> {"key": (pk name, sk name), "parts": {pk value: {sk value: item}}}
    counter = itertools.count(1)

    def key_names(request: dict) -> tuple[str, str | None]:
        hash_name = range_name = None
        for element in request.get("KeySchema", []):
            if element["KeyType"] == "HASH":
                hash_name = element["AttributeName"]
            else:
                range_name = element["AttributeName"]
        return hash_name, range_name

    def scalar(value: dict):
        return next(iter(value.values()))

    def put(table: dict, item: dict) -> None:
        pk_name, sk_name = table["key"]
        sk = scalar(item[sk_name]) if sk_name else None
        table["parts"].setdefault(scalar(item[pk_name]), {})[sk] = item

    def operate(operation: str, request: dict) -> dict:
        if operation == "CreateTable":
            tables[request["TableName"]] = {"key": key_names(request), "parts": {}}
            return {"TableDescription": {"TableName": request["TableName"], "TableStatus": "ACTIVE"}}
        if operation == "DescribeTable":
            return {"Table": {"TableName": request["TableName"], "TableStatus": "ACTIVE"}}
        if operation == "PutItem":
            put(tables[request["TableName"]], request["Item"])
            return {}
        if operation == "GetItem":
            table = tables[request["TableName"]]
            pk_name, sk_name = table["key"]
            key = request["Key"]
            item = table["parts"].get(scalar(key[pk_name]), {}).get(scalar(key[sk_name]) if sk_name else None)
            return {"Item": item} if item is not None else {}
        if operation == "Query":
            table = tables[request["TableName"]]
            value = scalar(next(iter(request["ExpressionAttributeValues"].values())))
            items = [item for _, item in sorted(table["parts"].get(value, {}).items())]
            return {"Items": items, "Count": len(items), "ScannedCount": len(items)}
        if operation == "BatchWriteItem":
            for name, requests in request["RequestItems"].items():
                for entry in requests:
                    put(tables[name], entry["PutRequest"]["Item"])
            return {"UnprocessedItems": {}}
        raise KeyError(operation)

    async def handle(request: web.Request) -> web.Response:
        raw = await request.read()
        operation = request.headers.get("X-Amz-Target", "").removeprefix(PREFIX)
        try:
            status, body = 200, orjson.dumps(operate(operation, orjson.loads(raw)))
        except Exception as error:  # a benchmark aid, not a service: any failure is a 400 naming it
            status, body = 400, orjson.dumps({"__type": "TrivialServerError", "message": repr(error)})
        headers = {
            "x-amzn-RequestId": f"{next(counter):052d}",
            "x-amz-crc32": str(zlib.crc32(body)),
            "Content-Type": "application/x-amz-json-1.0",
        }
        return web.Response(status=status, body=body, headers=headers)

    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.router.add_route("*", "/{path:.*}", handle)
    return app


async def serve(host: str, port: int) -> None:
    runner = web.AppRunner(make_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=1024, reuse_address=True)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # aiohttp has no public accessor for the bound port
    print(json.dumps({"endpoint": f"http://{host}:{bound}"}), flush=True)
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        import uvloop  # the region runs on uvloop too: same event loop, fair ceiling
    except ImportError:
        uvloop = None
    try:
        if uvloop is not None:
            uvloop.run(serve(args.host, args.port))
        else:
            asyncio.run(serve(args.host, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
