"""One region's tables: items, keys, expressions, query/scan, storage.

The engine knows nothing of HTTP, asyncio or replication. Requests arrive as the decoded JSON bodies of the
DynamoDB wire protocol and leave as the JSON bodies of the responses; errors are `DynamoError`s that the region
server turns into wire errors. Time is read only from an injected clock.
"""
