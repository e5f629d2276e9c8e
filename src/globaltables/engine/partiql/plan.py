"""Planning: which item operation(s) a parsed PartiQL statement is, as item-API requests (render.py writes their
expressions).

Rules, after AWS's PartiQL reference for DynamoDB (ql-reference.select/insert/update/delete.html):
- SELECT reads one item collection per partition key value its WHERE clause pins: an equality on the partition key,
  an IN list of values, or an OR of equalities, standing as a conjunct of the top-level AND. Each pinned partition
  is a Query: the partition equality, the first conjunct on the sort key that a key condition can hold (=, <, <=, >,
  >=, BETWEEN, BEGINS_WITH against constants), the other conjuncts as its FilterExpression. Only when no partition
  is pinned is the statement a Scan (the whole WHERE as its filter): "Using the SELECT statement can result in a
  full table scan if an equality or IN condition with a partition key is not provided in the WHERE clause".
  Conjuncts a Query's filter may not hold (a second condition on a key attribute) are checked on the returned items
  (`post_filter`), by the same evaluator. At most 50 partitions: "at max 50 hash attribute values" (ql-operators).
- INSERT is PutItem under attribute_not_exists(partition key): an existing key is DuplicateItemException.
- UPDATE is UpdateItem of the item the WHERE clause's key equalities name, under attribute_exists(partition key)
  AND the other conjuncts: an item that does not exist or does not satisfy them is ConditionalCheckFailedException
  ("If the WHERE clause of the UPDATE statement does not evaluate to true for any item ..."), never an upsert.
- DELETE is DeleteItem under attribute_not_exists(partition key) OR the other conjuncts: a missing item is success,
  an existing one failing them is ConditionalCheckFailedException.
- UPDATE, DELETE, a SELECT of a batch or transaction, and EXISTS need an equality on every key attribute:
  "Where clause does not contain a mandatory equality on all key attributes".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ValidationException
from ..expressions import condition_paths
from ..expressions.ast import And, Between, Comparison, FunctionCall, In, Not, Or, Path, Value
from ..schema import KeySchema
from ..values import encode_key_value
from . import render
from .statements import Delete, Exists, Insert, Select, Update

INCOMPLETE_KEY = "Where clause does not contain a mandatory equality on all key attributes"
CONSISTENT_READ_ON_GSI = "Strongly consistent read is not supported on Global Secondary Indexes"
# "IN ... (at max 50 hash attribute values or at max 100 non-key attribute values)" (ql-operators.html); the
# expression grammar refuses the longer non-key lists itself.
MAX_PARTITIONS = 50
TOO_MANY_READS = "Too many decomposed read operations for a given query."
_MIRRORED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_SORT_OPERATORS = frozenset(_MIRRORED)


@dataclass
class Read:
    """A SELECT as item reads: `operation` ("Query" or "Scan") with one request per pinned partition (one Scan
    request otherwise); `post_filter` is checked on each returned item, `projection` shapes it."""

    operation: str
    requests: list[dict]
    projection: tuple | None
    post_filter: Any = None


@dataclass
class Write:
    """An INSERT, UPDATE, DELETE or EXISTS as one item write: `operation` and its request."""

    operation: str  # PutItem, UpdateItem, DeleteItem or ConditionCheck (transactions only)
    request: dict


# ------------------------------------------------------------------------------------------------------- helpers


def conjuncts(node: Any) -> list:
    if node is None:
        return []
    if type(node) is And:
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


def conjoin(nodes: list) -> Any:
    if not nodes:
        return None
    node = nodes[0]
    for other in nodes[1:]:
        node = And(node, other)
    return node


def _top_name(node: Any) -> str | None:
    return node.root if type(node) is Path and len(node.elements) == 1 else None


def equality(node: Any) -> tuple[str, dict] | None:
    """(attribute, value) of `attribute = constant` (either way round), else None."""
    if type(node) is not Comparison or node.op != "=":
        return None
    left, right = node.left, node.right
    if type(left) is Value:
        left, right = right, left
    name = _top_name(left)
    if name is None or type(right) is not Value:
        return None
    return name, right.value


def split_key(key: KeySchema, where: Any) -> tuple[dict, list]:
    """The key a DML statement's WHERE clause names, and its other conjuncts; INCOMPLETE_KEY without one."""
    found: dict[str, dict] = {}
    rest = []
    for node in conjuncts(where):
        pair = equality(node)
        if pair is not None and pair[0] in key.names and pair[0] not in found:
            found[pair[0]] = pair[1]
        else:
            rest.append(node)
    if len(found) != len(key.names):
        raise ValidationException(INCOMPLETE_KEY)
    return {name: found[name] for name in key.names}, rest


def _references(nodes: list, names: tuple) -> bool:
    return any(path.root in names for node in nodes for path in condition_paths(node))


# ---------------------------------------------------------------------------------------------------------- reads


def plan_select(engine: Any, select: Select, consistent: bool) -> Read:
    """An ExecuteStatement SELECT: Queries of the pinned partitions, or one Scan."""
    table = engine.table(select.table)
    key = table.key
    if select.index is not None:
        index = table.index(select.index)
        if index is None:
            raise ValidationException(f"The table does not have the specified index: {select.index}")
        key = index.key
        if consistent and index.kind == "GSI":
            raise ValidationException(CONSISTENT_READ_ON_GSI)
    nodes = conjuncts(select.where)
    partitions = None
    for i, node in enumerate(nodes):
        partitions = _partition_values(node, key.hash_name)
        if partitions is not None:
            nodes = nodes[:i] + nodes[i + 1 :]
            break
    if partitions is not None and len(partitions) > MAX_PARTITIONS:
        raise ValidationException(TOO_MANY_READS)
    partitions = _check_order(select, key, partitions)
    base: dict[str, Any] = {"TableName": table.name}
    if select.index is not None:
        base["IndexName"] = select.index
    if consistent:
        base["ConsistentRead"] = True
    if partitions is None:
        p = render.Placeholders()
        request = dict(base)
        if select.where is not None:
            request["FilterExpression"] = render.condition(select.where, p)
        if select.projection is not None:
            request["ProjectionExpression"] = render.projection(roots(select.projection), p)
        return Read("Scan", [p.into(request)], select.projection)
    sort = None
    if key.range_name is not None:
        for i, node in enumerate(nodes):
            sort = _sort_condition(node, key.range_name)
            if sort is not None:
                nodes = nodes[:i] + nodes[i + 1 :]
                break
    post = [node for node in nodes if _references([node], key.names)]
    filters = [node for node in nodes if not _references([node], key.names)]
    forward = not any(not ascending for name, ascending in select.order if name == key.range_name)
    requests = []
    for value in partitions:
        p = render.Placeholders()
        text = f"{p.name(key.hash_name)} = {p.value(value)}"
        if sort is not None:
            text += " AND " + render.condition(sort, p)
        request = dict(base, KeyConditionExpression=text)
        if not forward:
            request["ScanIndexForward"] = False
        if filters:
            request["FilterExpression"] = render.condition(conjoin(filters), p)
        if select.projection is not None:
            # The post-filter reads key attributes the projection may leave out.
            extra = [Path((name,)) for name in key.names] if post else []
            request["ProjectionExpression"] = render.projection(roots(list(select.projection) + extra), p)
        requests.append(p.into(request))
    return Read("Query", requests, select.projection, conjoin(post))


def _partition_values(node: Any, hash_name: str) -> list[dict] | None:
    pair = equality(node)
    if pair is not None:
        return [pair[1]] if pair[0] == hash_name else None
    kind = type(node)
    if kind is In and _top_name(node.operand) == hash_name and all(type(c) is Value for c in node.choices):
        return _distinct([choice.value for choice in node.choices])
    if kind is Or:
        left = _partition_values(node.left, hash_name)
        right = _partition_values(node.right, hash_name) if left is not None else None
        if left is not None and right is not None:
            return _distinct(left + right)
    return None


def _distinct(values: list[dict]) -> list[dict]:
    out: list[dict] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


def _sort_condition(node: Any, range_name: str) -> Any:
    """`node` when a key condition can hold it as the sort key's condition (constants on the other side)."""
    kind = type(node)
    if kind is Comparison and node.op in _SORT_OPERATORS:
        left, right = node.left, node.right
        if _top_name(left) == range_name and type(right) is Value:
            return node
        if _top_name(right) == range_name and type(left) is Value:
            return Comparison(_MIRRORED[node.op], right, left)
        return None
    if kind is Between and _top_name(node.operand) == range_name:
        return node if type(node.lower) is Value and type(node.upper) is Value else None
    if kind is FunctionCall and node.name == "begins_with" and _top_name(node.args[0]) == range_name:
        return node if type(node.args[1]) is Value else None
    return None


def _check_order(select: Select, key: KeySchema, partitions: list[dict] | None) -> list[dict] | None:
    """ORDER BY's rules; the partitions in the order it asks for (by partition key value when it names it)."""
    for name, _ascending in select.order:
        if name not in key.names:
            raise ValidationException(f"Variable reference {name} in ORDER BY clause must be part of the primary key")
    if not select.order:
        return partitions
    if partitions is None:
        raise ValidationException(
            "Must have at least one non-optional hash key condition in WHERE clause when using ORDER BY clause."
        )
    by_hash = [ascending for name, ascending in select.order if name == key.hash_name]
    if len(partitions) > 1 and not by_hash:
        raise ValidationException(
            "Must have hash key in ORDER BY clause when more than one hash key condition specified in WHERE clause."
        )
    if by_hash:
        ordered = sorted(partitions, key=lambda value: encode_key_value(value))
        return ordered if by_hash[0] else ordered[::-1]
    return partitions


def plan_key_read(engine: Any, select: Select, refusal: str, index_refusal: str) -> tuple[dict, Any]:
    """A SELECT of a batch or transaction: ({TableName, Key, projection}, post-filter) for BatchGetItem or
    TransactGetItems."""
    table = engine.table(select.table)
    if select.index is not None:
        raise ValidationException(index_refusal)
    try:
        key, rest = split_key(table.key, select.where)
    except ValidationException:
        raise ValidationException(refusal) from None
    p = render.Placeholders()
    request: dict[str, Any] = {"TableName": table.name, "Key": key}
    if select.projection is not None:
        wanted = list(select.projection) + [path for node in rest for path in condition_paths(node)]
        request["ProjectionExpression"] = render.projection(roots(wanted), p)
    return p.into(request), conjoin(rest)


def roots(paths: list | tuple) -> list[Path]:
    """The distinct top-level attributes of `paths`: what a read fetches so that each path (a list index too,
    which a ProjectionExpression would renumber) can be taken from the item as stored."""
    return [Path((name,)) for name in dict.fromkeys(path.root for path in paths)]


# --------------------------------------------------------------------------------------------------------- writes


def plan_write(engine: Any, statement: Any) -> Write:
    if isinstance(statement, Insert):
        return _insert(engine, statement)
    if isinstance(statement, Update):
        return _update(engine, statement)
    if isinstance(statement, Delete):
        return _delete(engine, statement)
    return _exists(engine, statement)


def _insert(engine: Any, statement: Insert) -> Write:
    table = engine.table(statement.table)
    p = render.Placeholders()
    request = {
        "TableName": table.name,
        "Item": statement.item,
        "ConditionExpression": f"attribute_not_exists({p.name(table.key.hash_name)})",
    }
    return Write("PutItem", p.into(request))


def _update(engine: Any, statement: Update) -> Write:
    table = engine.table(statement.table)
    key, rest = split_key(table.key, statement.where)
    p = render.Placeholders()
    expression = render.update(statement.actions, p)
    condition = f"attribute_exists({p.name(table.key.hash_name)})"
    if rest:
        condition += " AND " + render.grouped(conjoin(rest), And, p, right=True)
    request: dict[str, Any] = {
        "TableName": table.name,
        "Key": key,
        "UpdateExpression": expression,
        "ConditionExpression": condition,
    }
    if statement.returning is not None:
        request["ReturnValues"] = statement.returning
    return Write("UpdateItem", p.into(request))


def _delete(engine: Any, statement: Delete) -> Write:
    table = engine.table(statement.table)
    key, rest = split_key(table.key, statement.where)
    p = render.Placeholders()
    request: dict[str, Any] = {"TableName": table.name, "Key": key}
    if rest:
        missing = f"attribute_not_exists({p.name(table.key.hash_name)})"
        request["ConditionExpression"] = f"{missing} OR {render.grouped(conjoin(rest), Or, p, right=True)}"
    if statement.returning is not None:
        request["ReturnValues"] = statement.returning
    return Write("DeleteItem", p.into(request))


def _exists(engine: Any, statement: Exists) -> Write:
    select = statement.select
    table = engine.table(select.table)
    if select.index is not None:
        raise ValidationException("Operations on indices are not supported in transactions")
    try:
        key, rest = split_key(table.key, select.where)
    except ValidationException:
        raise ValidationException("EXISTS() must contain a single item read with additional condition") from None
    if not rest:
        raise ValidationException("EXISTS() must contain a single item read with additional condition")
    p = render.Placeholders()
    hash_name = p.name(table.key.hash_name)
    if statement.negated:
        condition = f"attribute_not_exists({hash_name}) OR {render.grouped(Not(conjoin(rest)), Or, p, right=True)}"
    else:
        condition = f"attribute_exists({hash_name}) AND {render.grouped(conjoin(rest), And, p, right=True)}"
    request = {"TableName": table.name, "Key": key, "ConditionExpression": condition}
    return Write("ConditionCheck", p.into(request))
