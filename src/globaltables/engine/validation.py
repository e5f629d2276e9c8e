"""Declarative request validation that produces DynamoDB's constraint messages.

Each operation describes its parameters as a dict of `Field`s. `check_request` walks the request once:
- a JSON value of the wrong type is a SerializationException (the service cannot even deserialize it);
- `null` as a structure member is an absent member, as in every AWS JSON protocol: the member is removed from the
  request (so no operation ever reads a null where it expects a value or its default), and reported only if the
  member is required. `null` as a list element or a map value is never absent: it is refused as DynamoDB refuses it,
  "Value null at 'transactItems.1.member' failed to satisfy constraint: Member must not be null" (maps of
  AttributeValues excepted: values.py judges those, as every other AttributeValue);
- constraint violations (missing required member, enum, length, pattern, numeric range) are collected and reported
  together as DynamoDB does: "2 validation errors detected: Value null at 'tableName' failed to satisfy constraint:
  Member must not be null; Value 'X' at 'select' failed to satisfy constraint: ...".
Unknown members are ignored, as the service ignores them.
A message quotes the offending value; a value nested deeper than the JSON serializer goes (or than is worth
printing) is quoted truncated, with `...` where its depth was cut, so rendering a refusal never raises.
Cross-field rules stay in the operation's own code, after `check_request`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from .errors import SerializationException, ValidationException

TABLE_NAME_PATTERN = "[a-zA-Z0-9_.-]+"
_TYPE_NAMES = {"string": str, "integer": int, "boolean": bool, "map": dict, "list": list, "structure": dict}


@dataclass(frozen=True)
class Field:
    type: str = "string"  # string | integer | boolean | map | list | structure | any
    required: bool = False
    enum: tuple[str, ...] | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    members: dict[str, Field] | None = None  # structure members
    item: Field | None = None  # list element / map value
    wire_name: str | None = None  # the lowerCamelCase name in messages (derived when absent)
    enum_order: tuple[str, ...] | None = None  # order in which DynamoDB prints the enum set, when it differs


def Str(**kw: Any) -> Field:
    return Field(type="string", **kw)


def Int(**kw: Any) -> Field:
    return Field(type="integer", **kw)


def Bool(**kw: Any) -> Field:
    return Field(type="boolean", **kw)


def Struct(members: dict[str, Field], **kw: Any) -> Field:
    return Field(type="structure", members=members, **kw)


def List(item: Field, **kw: Any) -> Field:
    return Field(type="list", item=item, **kw)


def Map(item: Field, **kw: Any) -> Field:
    return Field(type="map", item=item, **kw)


def AnyValue(**kw: Any) -> Field:
    return Field(type="any", **kw)


def TableNameField(required: bool = True) -> Field:
    return Str(required=required, min_length=3, max_length=255, pattern=TABLE_NAME_PATTERN)


def camel(name: str) -> str:
    return name[:1].lower() + name[1:]


MAX_REPORTED_ERRORS = 10  # DynamoDB stops listing constraint violations after ten


def check_request(request: dict, spec: dict[str, Field]) -> None:
    errors: list[str] = []
    _check_members(request, spec, "", errors)
    if errors:
        raise constraint_error(errors[:MAX_REPORTED_ERRORS])


def known_members(value: dict, f: Field) -> dict:
    """The members of a checked structure that its spec names: what the engine may keep of it. DynamoDB ignores
    unknown members, so they are never stored (one nested thousands of levels deep could not even be saved)."""
    assert f.members is not None
    return {name: value[name] for name in f.members if name in value}


def constraint_error(errors: list[str]) -> ValidationException:
    count = len(errors)
    noun = "error" if count == 1 else "errors"
    return ValidationException(f"{count} validation {noun} detected: " + "; ".join(errors))


_PATTERNS: dict[str, re.Pattern] = {}  # compiled once: re's own cache lookup costs more than the match
_CAMEL: dict[str, str] = {}  # camel() of every member name seen; the hot path asks for the same few names


def _wire_name(name: str, f: Field) -> str:
    if f.wire_name:
        return f.wire_name
    wire = _CAMEL.get(name)
    if wire is None:
        wire = _CAMEL[name] = camel(name)
    return wire


def _check_members(data: dict, spec: dict[str, Field], prefix: str, errors: list[str]) -> None:
    # A request names a few of its spec's members: check those and the required ones, in the spec's order (the
    # order DynamoDB lists violations in), without visiting every member the request leaves out.
    shape = _SHAPES.get(id(spec))
    if shape is None or shape[0] is not spec:
        shape = _SHAPES[id(spec)] = (
            spec,
            {name: index for index, name in enumerate(spec)},
            tuple(name for name, f in spec.items() if f.required),
        )
    _spec, index_of, required = shape
    names = [name for name in data if name in index_of]
    for name in required:
        if name not in data:
            names.append(name)
    if len(names) > 1:
        names.sort(key=index_of.__getitem__)
    for name in names:
        f = spec[name]
        value = data.get(name)
        if value is None and name in data:
            del data[name]  # null is absence: nothing after validation sees it (or stores it)
        _check_value(value, f, prefix + _wire_name(name, f), errors)


# id(spec) -> (spec, {member name: position}, required member names); holding `spec` keeps its id from being reused.
_SHAPES: dict[int, tuple[dict, dict[str, int], tuple[str, ...]]] = {}


def _unconstrained(f: Field) -> bool:
    """Whether `_check_value` can never object to any value of `f` (the values of an AttributeValue map)."""
    return (
        f.type == "any" and not f.required and f.enum is None and f.min_length is None and f.max_length is None and f.pattern is None
        and f.minimum is None and f.maximum is None
    )


def _prefix(value: Any, path: str) -> str:
    # Built only when there is something to report: _show of an item is a JSON dump of it.
    return f"Value '{_show(value)}' at '{path}' failed to satisfy constraint: "


# Quoted values are cut below this depth: orjson refuses to serialise deeper than 254 levels, Python recursion stops
# near 1,000, and no message needs to show more than a few levels of a value to say where it is wrong.
MAX_SHOWN_DEPTH = 32


def _show(value: Any, depth: int = 0) -> str:
    """A value as DynamoDB prints it in a constraint message: lists element by element, objects as JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        if depth >= MAX_SHOWN_DEPTH:
            return "[...]"
        return "[" + ", ".join(_show(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        return shown_json(value) if depth == 0 else _json(value, depth)
    return str(value)


def shown_json(value: Any) -> str:
    """A request value as JSON in a message (also for batch_requests.py); cut when too deep to serialise."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:  # deeper than orjson goes (or than Python's recursion limit)
        return _json(value)


def _json(value: Any, depth: int = 0) -> str:
    """JSON of a decoded request value, cut to `...` at MAX_SHOWN_DEPTH."""
    if depth >= MAX_SHOWN_DEPTH and isinstance(value, (dict, list)):
        return "{...}" if isinstance(value, dict) else "[...]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{orjson.dumps(k).decode()}:{_json(v, depth + 1)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json(v, depth + 1) for v in value) + "]"
    return orjson.dumps(value).decode()


def check_element(value: Any, f: Field, path: str, errors: list[str]) -> None:
    """Check one list element or map value (`path` ends in `.member`): null is refused, never absent."""
    if value is None and f.type != "any":
        errors.append(_null(path))
    else:
        _check_value(value, f, path, errors)


def _null(path: str) -> str:
    return f"Value null at '{path}' failed to satisfy constraint: Member must not be null"


def _check_value(value: Any, f: Field, path: str, errors: list[str]) -> None:
    if value is None:
        if f.required:
            errors.append(_null(path))
        return
    if f.type != "any":
        expected = _TYPE_NAMES[f.type]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise SerializationException(f"Unexpected value type for '{path}': expected {f.type}")
    plain = _PLAIN.get(id(f))
    if plain is None or plain[0] is not f:
        plain = _PLAIN[id(f)] = (f, _type_only(f))
    if plain[1]:
        return  # nothing about this field can be wrong once its type is right (an item: a map of any values)
    if type(value) is str and f.enum is None and (f.pattern is not None or f.max_length is not None):
        # A string that passed this field's constraints once passes them again (names of tables and indexes are
        # checked on every request): remember a bounded number of them per field.
        known = _KNOWN_VALID.get(id(f))
        if known is not None and known[0] is f and value in known[1]:
            return
        reported = len(errors)
        _check_constraints(value, f, path, errors)
        if len(errors) == reported:
            if known is None or known[0] is not f:
                known = _KNOWN_VALID[id(f)] = (f, set())
            if len(known[1]) < _KNOWN_VALID_LIMIT:
                known[1].add(value)
        return
    _check_constraints(value, f, path, errors)


def _type_only(f: Field) -> bool:
    """Whether a present value of `f` can only be wrong by its type: no constraint of its own, and nothing inside it
    checked (a map or list of unconstrained values, such as an item)."""
    if (f.enum, f.min_length, f.max_length, f.pattern, f.minimum, f.maximum) != (None,) * 6:
        return False
    if f.type == "structure":
        return not f.members
    if f.type in ("map", "list"):
        return f.item is None or _unconstrained(f.item)
    return True


# id(field) -> (field, whether only its type is checked); holding the field keeps its id from being reused.
_PLAIN: dict[int, tuple[Field, bool]] = {}
# id(field) -> (field, strings known to satisfy its constraints); holding the field keeps its id from being reused.
_KNOWN_VALID: dict[int, tuple[Field, set[str]]] = {}
_KNOWN_VALID_LIMIT = 1024


def _check_constraints(value: Any, f: Field, path: str, errors: list[str]) -> None:
    if f.enum is not None and value not in f.enum:
        shown = ", ".join(f.enum_order or f.enum)
        errors.append(_prefix(value, path) + f"Member must satisfy enum value set: [{shown}]")
        return
    if f.min_length is not None or f.max_length is not None:
        length = len(value)
        if f.min_length is not None and length < f.min_length:
            errors.append(_prefix(value, path) + f"Member must have length greater than or equal to {f.min_length}")
        if f.max_length is not None and length > f.max_length:
            errors.append(_prefix(value, path) + f"Member must have length less than or equal to {f.max_length}")
    if f.pattern is not None and isinstance(value, str):
        pattern = _PATTERNS.get(f.pattern)
        if pattern is None:
            pattern = _PATTERNS[f.pattern] = re.compile(f.pattern)
        if not pattern.fullmatch(value):
            errors.append(_prefix(value, path) + f"Member must satisfy regular expression pattern: {f.pattern}")
    if f.minimum is not None and value < f.minimum:
        errors.append(_prefix(value, path) + f"Member must have value greater than or equal to {f.minimum}")
    if f.maximum is not None and value > f.maximum:
        errors.append(_prefix(value, path) + f"Member must have value less than or equal to {f.maximum}")
    if f.type == "structure" and f.members:
        _check_members(value, f.members, path + ".", errors)
    elif f.type == "list" and f.item is not None:
        for i, element in enumerate(value, 1):
            check_element(element, f.item, f"{path}.{i}.member", errors)
    elif f.type == "map" and f.item is not None and not _unconstrained(f.item):
        for key, element in value.items():
            check_element(element, f.item, f"{path}.{key}.member", errors)
