"""Structure-aware fuzz requests, built from the botocore model's shapes of every DynamoDB (and Streams) operation.

How a request is made (all draws from one seeded `random.Random`, so a seed replays the same requests):
1. A plausible request: the operation's input shape filled in member by member (required members always, optional
   ones at random), with values that reach deep into the engine rather than bouncing off the first check: the
   fuzz tables' names and attribute names, well-formed AttributeValues, expressions from a small grammar over those
   names, enum values from the model, numbers and lengths inside the model's bounds.
2. Then 0 to 3 mutations at random places of that value tree: a wrong JSON type, a null (as a member, a list
   element, a map value), deep nesting (lists, maps, AttributeValue M/L), sizes at and past the limits, unicode
   oddities (lone surrogates, NUL, combining marks, astral characters), junk expressions, a required member dropped,
   unknown members added; or the whole body replaced (not an object, truncated JSON, a 70-bit integer).

Canary tables are never named: they hold items nothing here may change.
"""

from __future__ import annotations

import base64
import json
import random
import re
import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

import botocore.session

FUZZ_TABLES = ("fuzz-hash", "fuzz-range")
SCRATCH_TABLE = "fuzz-scratch"
MAX_BODY_BYTES = 1_000_000
HEAVY = ("nested", "string of", "list of")
KEY_MAPS = ("Key", "Keys", "ExclusiveStartKey")
ONE_OF = ("TransactWriteItem", "WriteRequest", "TransactGetItem", "GlobalSecondaryIndexUpdate",
          "ReplicationGroupUpdate", "ReplicaUpdate")  # fmt: skip
ATTRIBUTES = ("pk", "sk", "v", "w", "ttl", "list", "map")
INDEXES = ("byV", "byW", "local")
EXPRESSION_WORDS = (
    "=", "<>", "<", "<=", ">", ">=", "AND", "OR", "NOT", "BETWEEN", "IN", "(", ")", ",", ".", "[0]", "[99999999999]",
    "attribute_exists(", "attribute_not_exists(", "attribute_type(", "begins_with(", "contains(", "size(",
    "if_not_exists(", "list_append(", "SET", "REMOVE", "ADD", "DELETE", "+", "-", ":v", ":w", ":missing", "#n", "#m",
    "pk", "sk", "v", "w", "map.a.b", "list[1]", "SELECT", "TABLE", "ÿ", "\u0000", "\"", "'", "=:v", "a..b", "#",
    ":", "[", "]", "1", "-1", "0x1", "true", "null",
)  # fmt: skip
UNICODE_SAMPLES = (
    "\ud800", "\udfff", "\u0000", "\u200b", "\u202e", "e\u0301", "\U0001f600", "\uffff", "\ufeff", "\x7f", "a\nb",
    "\u00ff" * 3, "\U0010ffff", "\\", "%s%n", "' OR 1=1 --",
)  # fmt: skip


@cache
def service(name: str):
    return botocore.session.get_session().get_service_model(name)


@dataclass
class FuzzRequest:
    target: str  # the X-Amz-Target header
    body: bytes
    description: str  # what was done, for failure reports

    def __repr__(self) -> str:
        return f"{self.target} {self.description}: {self.body[:300]!r}"


class RequestFuzzer:
    """Seeded structure-aware requests (module doc)."""

    def __init__(self, rng: random.Random, tables: tuple[str, ...] = FUZZ_TABLES) -> None:
        self.rng = rng
        self.tables = tables
        self.current_tables = tables
        self.known: dict[str, str] = {}  # real values by member name (a stream ARN, a shard iterator), when known
        self.dynamodb = service("dynamodb")
        self.streams = service("dynamodbstreams")
        self.operations = sorted(self.dynamodb.operation_names)
        # The operations that do most work are drawn more often: items, queries, batches, transactions, tables.
        self.hot = [
            "PutItem", "GetItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem",
            "TransactWriteItems", "TransactGetItems", "CreateTable", "UpdateTable", "UpdateTimeToLive", "TagResource",
            "UntagResource", "UpdateContinuousBackups", "DescribeContinuousBackups", "DescribeTable",
        ]  # fmt: skip

    # ---------------------------------------------------------------------------------------------- requests

    def request(self) -> FuzzRequest:
        rng = self.rng
        roll = rng.random()
        if roll < 0.1:
            operation = rng.choice(self.streams.operation_names)
            model, target = self.streams, f"DynamoDBStreams_20120810.{operation}"
        else:
            operation = rng.choice(self.hot) if roll < 0.75 else rng.choice(self.operations)
            model, target = self.dynamodb, f"DynamoDB_20120810.{operation}"
        shape = model.operation_model(operation).input_shape
        # Tables are created and deleted under a scratch name, so the fuzz tables' items and indexes stay to be hit.
        self.current_tables = (SCRATCH_TABLE,) if operation in ("CreateTable", "DeleteTable") else self.tables
        value = self.value(shape, "", 0) if shape is not None else {}
        if operation == "Query" and not {"KeyConditionExpression", "KeyConditions"} & set(value):
            value["KeyConditionExpression"] = "pk = :v"
        cohere(value)
        notes = []
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            value, note = self.mutate(value)
            notes.append(note)
            if note.startswith(HEAVY):  # mutating inside many shared copies or thousands of levels: stop here
                break
        body, note = self.encode(value)
        if note:
            notes.append(note)
        if len(body) > MAX_BODY_BYTES:  # keep the run fast: sizes past the limits are tried, not megabytes of them
            body, notes = body[:MAX_BODY_BYTES], [*notes, f"cut to {MAX_BODY_BYTES} bytes"]
        return FuzzRequest(target, body, "; ".join(notes) or "plausible")

    def encode(self, value: Any) -> tuple[bytes, str]:
        rng = self.rng
        roll = rng.random()
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 25_000))  # values nested 5,000 levels deep are meant to be sent
        try:
            text = json.dumps(value, ensure_ascii=rng.random() < 0.5)
        except (ValueError, RecursionError):
            text = json.dumps({})
        finally:
            sys.setrecursionlimit(limit)
        if roll < 0.02:
            return text[: rng.randrange(len(text) + 1)].encode("utf-8", "surrogatepass"), "truncated JSON"
        if roll < 0.03:
            return b'{"TableName": "\xff\xfe", "Limit": 1}', "invalid UTF-8"
        if roll < 0.04:
            return rng.choice([b"[]", b"1", b'"x"', b"null", b"true", b"{", b"", b"{}{}"]), "body not an object"
        if roll < 0.05:
            return b'{"Limit": 1180591620717411303424, "TableName": "fuzz-hash"}', "70-bit integer"
        if roll < 0.06:
            return b'{"TableName": "fuzz-hash", "TableName": 5}', "duplicate key"
        return text.encode("utf-8", "surrogatepass"), ""

    # ------------------------------------------------------------------------------------------ plausible values

    def value(self, shape, name: str, depth: int) -> Any:
        rng = self.rng
        kind = shape.type_name
        if shape.name == "AttributeValue":
            return self.attribute_value(depth)
        if kind == "structure":
            if depth > 6:
                return {}
            out = {}
            if shape.name in ONE_OF:  # exactly one member, as DynamoDB requires of these
                member = rng.choice(list(shape.members))
                return {member: self.value(shape.members[member], member, depth + 1)}
            required = set(shape.required_members)
            for member, member_shape in shape.members.items():
                if member in required or rng.random() < 0.2:
                    out[member] = self.value(member_shape, member, depth + 1)
            return out
        if kind == "list":
            low = shape.metadata.get("min", 0)
            count = rng.choice((low, low, low + 1, low + 2)) if depth <= 6 else low
            return [self.value(shape.member, name, depth + 1) for _ in range(min(count, 5))]
        if kind == "map":
            count = rng.choice((1, 1, 2)) if depth <= 6 else 0
            if name in KEY_MAPS:
                count = 0  # a key: the tables' key attributes only (below)
            out = {}
            for _ in range(count):
                key = self.map_key(shape.key, name)
                if shape.value.name == "AttributeValue":
                    out[key] = self.attribute_value(depth + 1, key)
                else:
                    out[key] = self.value(shape.value, name, depth + 1)
            if name in KEY_MAPS or name == "Item":
                out.setdefault("pk", {"S": rng.choice(("a", "b", "k1"))})
                if rng.random() < 0.5:
                    out.setdefault("sk", {"S": rng.choice(("s1", "s2"))})
            return out
        if kind == "string":
            return self.string(shape, name)
        if kind in ("integer", "long"):
            low = shape.metadata.get("min", 0)
            high = shape.metadata.get("max", low + 100)
            return rng.randint(int(low), int(min(high, low + 1000)))
        if kind == "double":
            return rng.choice((0.0, 1.5, 100.0))
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "blob":
            return base64.b64encode(rng.randbytes(rng.randrange(1, 16))).decode()
        if kind == "timestamp":
            return rng.choice((0, 1_700_000_000, 1_700_000_000.5))
        return None

    def map_key(self, key_shape, name: str) -> str:
        rng = self.rng
        if name in ("RequestItems",):
            return rng.choice(self.current_tables)
        if name == "ExpressionAttributeNames":
            return rng.choice(("#n", "#m"))
        if name == "ExpressionAttributeValues":
            return rng.choice((":v", ":w"))
        return rng.choice(ATTRIBUTES)

    def string(self, shape, name: str) -> str:
        rng = self.rng
        if shape.enum:
            return rng.choice(shape.enum)
        if name in self.known and rng.random() < 0.9:
            return self.known[name]
        if name in ("TableName", "GlobalTableName", "ResourceArn", "TableArn", "SourceTableArn") or "TableName" in name:
            table = rng.choice(self.current_tables)
            if "Arn" in name or rng.random() < 0.1:
                return f"arn:aws:dynamodb:us-east-1:000000000000:table/{table}"
            return table
        if name.endswith("Expression"):
            return self.expression(name)
        if name in ("AttributeName", "Key") or name.endswith("AttributeName") or name in ("AttributesToGet",
                                                                                          "NonKeyAttributes"):
            return rng.choice(ATTRIBUTES)
        if name == "IndexName":
            return rng.choice(INDEXES)
        if name in ("ExpressionAttributeNames",):
            return rng.choice(ATTRIBUTES)
        if name in ("StreamArn", "ShardIterator", "ShardId"):
            return rng.choice(("arn:aws:dynamodb:us-east-1:000000000000:table/fuzz-hash/stream/2026", "shardId-1",
                               "x" * 60))  # fmt: skip
        low = shape.metadata.get("min", 0)
        return "".join(rng.choice("abcXYZ019-_.") for _ in range(max(low, rng.randrange(1, 12))))

    def expression(self, name: str) -> str:
        rng = self.rng
        if rng.random() < 0.6:
            path = rng.choice(("v", "w", "#n", "map.a", "list[0]"))
            if name == "UpdateExpression":
                return rng.choice((f"SET {path} = :v", f"REMOVE {path}", f"ADD {path} :v", f"SET {path} = {path} + :v",
                                   f"DELETE {path} :v", f"SET {path} = list_append({path}, :v)"))  # fmt: skip
            if name == "KeyConditionExpression":
                return rng.choice(("pk = :v", "pk = :v AND sk > :w", "pk = :v AND begins_with(sk, :w)"))
            if name == "ProjectionExpression":
                return rng.choice(("v", "#n, w", "map.a, list[0]"))
            return rng.choice((f"{path} = :v", f"attribute_exists({path})", f"size({path}) > :v",
                               f"{path} BETWEEN :v AND :w", f"{path} IN (:v, :w)", f"NOT contains({path}, :v)"))  # fmt: skip
        return self.junk_expression()

    def junk_expression(self) -> str:
        rng = self.rng
        words = [rng.choice(EXPRESSION_WORDS) for _ in range(rng.randrange(1, 40))]
        if rng.random() < 0.1:
            words = ["("] * rng.randrange(100, 400) + ["v"] + [")"] * rng.randrange(0, 400)
        if rng.random() < 0.05:
            words = ["v = :v"] + [" OR v = :v"] * rng.randrange(100, 400)
        return " ".join(words)

    def attribute_value(self, depth: int, attribute: str = "") -> dict:
        rng = self.rng
        if attribute in ("pk", "sk") and rng.random() < 0.9:  # key attributes: the tables' key type, mostly
            return {"S": rng.choice(("a", "b", "k1", "s1", "s2"))}
        kind = rng.choice(("S", "N", "B", "BOOL", "NULL", "SS", "NS", "BS", "L", "M"))
        if kind == "S":
            return {"S": rng.choice(("a", "b", "hello", "2026-10", "x" * rng.randrange(1, 50)))}
        if kind == "N":
            return {"N": rng.choice(("0", "1", "-1", "3.14", "1e10", "99999999999999999999999999999999999999"))}
        if kind == "B":
            return {"B": base64.b64encode(rng.randbytes(rng.randrange(1, 8))).decode()}
        if kind == "BOOL":
            return {"BOOL": rng.random() < 0.5}
        if kind == "NULL":
            return {"NULL": True}
        if kind == "SS":
            return {"SS": list({rng.choice("abcdef") for _ in range(3)})}
        if kind == "NS":
            return {"NS": list({str(rng.randrange(10)) for _ in range(3)})}
        if kind == "BS":
            return {"BS": list({base64.b64encode(bytes([rng.randrange(256)])).decode() for _ in range(2)})}
        if depth > 4:
            return {"S": "leaf"}
        if kind == "L":
            return {"L": [self.attribute_value(depth + 1) for _ in range(rng.randrange(3))]}
        return {"M": {rng.choice(ATTRIBUTES): self.attribute_value(depth + 1) for _ in range(rng.randrange(3))}}

    # --------------------------------------------------------------------------------------------- mutations

    def mutate(self, value: Any) -> tuple[Any, str]:
        rng = self.rng
        slots = list(self.slots(value, ()))
        if not slots:
            return value, "no slot"
        containers = [path for path in slots if isinstance(self.at(value, path), (list, dict))]
        if containers and rng.random() < 0.25:  # nulls inside lists and maps: what the validator must refuse
            path = rng.choice(containers)
            current = self.at(value, path)
            if isinstance(current, list):
                current.insert(rng.randrange(len(current) + 1), None)
                return value, f"null element at {'.'.join(map(str, path)) or '<top>'}"
            current[rng.choice((*ATTRIBUTES, *current))] = None
            return value, f"null member or map value at {'.'.join(map(str, path)) or '<top>'}"
        path = rng.choice(slots)
        replacement, note = self.replacement(self.at(value, path))
        return self.put(value, path, replacement), f"{note} at {'.'.join(map(str, path)) or '<top>'}"

    def slots(self, value: Any, path: tuple) -> Any:
        yield path
        if len(path) > 12:
            return
        if isinstance(value, dict):
            for key, child in value.items():
                yield from self.slots(child, (*path, key))
        elif isinstance(value, list):
            for index, child in enumerate(value):
                yield from self.slots(child, (*path, index))

    @staticmethod
    def at(value: Any, path: tuple) -> Any:
        for step in path:
            value = value[step]
        return value

    def put(self, value: Any, path: tuple, replacement: Any) -> Any:
        if not path:
            return {} if replacement is _DROP else replacement
        parent = self.at(value, path[:-1])
        if replacement is _DROP:
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        else:
            parent[path[-1]] = replacement
        return value

    def replacement(self, current: Any) -> tuple[Any, str]:
        rng = self.rng
        kind = rng.randrange(12)
        if kind == 0:
            return None, "null"
        if kind == 1:
            return rng.choice((0, -1, 2**63, 1.5, True, False, "", "x", [], {}, [None], {"k": None})), "wrong type"
        if kind == 2:
            levels = rng.choice((33, 40, 100, 300, 1000, 5000))
            nested: Any = rng.choice(({"S": "x"}, None, 1, "x"))
            for _ in range(levels):
                nested = rng.choice(([nested], {"a": nested}, {"M": {"a": nested}}, {"L": [nested]}))
            return nested, f"nested {levels} deep"
        if kind == 3:
            size = rng.choice((255, 256, 1024, 1025, 65_535, 65_536)) if rng.random() < 0.9 else 400_001
            return rng.choice(("x", "é", "\U0001f600")) * size, f"string of {size}"
        if kind == 4:
            count = rng.choice((26, 101, 1000, 5000))
            element = current[0] if isinstance(current, list) and current else rng.choice(({"S": "x"}, "x", 1))
            if isinstance(element, (dict, list)) or (isinstance(element, str) and len(element) > 200):
                element = {"S": "x"}  # many copies of a large element would only make the run slow
            return [element] * count, f"list of {count}"
        if kind == 5:
            return "".join(rng.choice(UNICODE_SAMPLES) for _ in range(rng.randrange(1, 6))), "unicode"
        if kind == 6:
            return self.junk_expression(), "junk expression"
        if kind == 7 and isinstance(current, dict):
            extra = dict(current)
            extra[rng.choice(("Unknown", "S", "N", "M", "__proto__", "TableName"))] = rng.choice((1, "x", None, {}))
            return extra, "extra member"
        if kind == 8 and isinstance(current, dict) and current:
            smaller = dict(current)
            del smaller[rng.choice(list(smaller))]
            return smaller, "member dropped"
        if kind == 9:
            return rng.choice(({"N": "1e126"}, {"N": "NaN"}, {"N": " 1"}, {"N": "1" * 39}, {"B": "!!"}, {"SS": []},
                               {"SS": ["a", "a"]}, {"NULL": False}, {}, {"S": "x", "N": "1"}, {"dog": "cat"},
                               {"M": None}, {"L": None}, {"S": None}, {"NS": [None]})), "bad AttributeValue"  # fmt: skip
        if kind == 10 and isinstance(current, list):
            return [*current, None], "null element"
        if kind == 11 and isinstance(current, dict):
            return {**current, rng.choice(ATTRIBUTES + (":v", "#n")): None}, "null map value"
        return _DROP, "removed"


_DROP = object()
_PLACEHOLDER = re.compile(r"[:#][a-z]+")


def cohere(request: Any) -> None:
    """Make a plausible request's expression placeholders and its ExpressionAttributeNames/Values agree (DynamoDB
    refuses both a missing and an unused one), at every level that has expressions (transactions, batches)."""
    if isinstance(request, list):
        for element in request:
            cohere(element)
        return
    if not isinstance(request, dict):
        return
    for child in request.values():
        if isinstance(child, (dict, list)):
            cohere(child)
    used = set()
    for key, value in request.items():
        if key.endswith("Expression") and isinstance(value, str):
            used.update(_PLACEHOLDER.findall(value))
    if not used and not {"ExpressionAttributeNames", "ExpressionAttributeValues"} & set(request):
        return
    names = {p: ("v" if p == "#n" else "w") for p in sorted(used) if p.startswith("#")}
    values = {p: {"S": "a"} if p == ":v" else {"N": "1"} for p in sorted(used) if p.startswith(":")}
    request.pop("ExpressionAttributeNames", None)
    request.pop("ExpressionAttributeValues", None)
    if names:
        request["ExpressionAttributeNames"] = names
    if values:
        request["ExpressionAttributeValues"] = values
