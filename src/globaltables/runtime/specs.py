"""Declarative specs for the documents people and tools hand the package: chaos steps, control-route bodies,
workload sections. Stdlib only, so every layer above may use it.

The style is the engine's request validator's (engine/validation.py): a document is described by a mapping of
field name to `Field` (type, required or a default, choices, numeric range, members of a structure, the item of a
list or mapping, a `parse` hook for values with their own grammar), and one walk over the document collects every
problem as (path, message) instead of stopping at the first. The engine's validator speaks DynamoDB's constraint
messages; these speak the messages of the project's files and control API, one wording per rule:

    <path>: required                                  (or the field's own `missing` text)
    <path>: expected a number, got a string           (wrong kind: the value's kind is named, not quoted)
    <path>: expected an integer, got 1.5
    <path>: 'pareto' is not allowed; use one of uniform, zipf, hotkey
    <path>: must be at least 0, got -1                (`minimum`; `positive`: must be greater than 0)
    <path>: must be at most 1, got 1.5
    <path>.<key>: unknown key; allowed keys are a, b  (the structure's `noun` replaces "key")

The caller decides what a problem becomes: a line naming the file (chaos, workload), an HTTP 400 (control).
Cross-field rules stay with the caller, after `check`, as in the engine.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

Problem = tuple[str, str]  # (field path, message)
_MISSING = object()


class Invalid(ValueError):
    """Raised by a `parse` hook: the value has the right kind but is not acceptable; the message has no path."""


@dataclasses.dataclass(frozen=True)
class Field:
    kind: str = "any"  # number | integer | boolean | string | list | mapping | structure | any
    required: bool = False
    missing: str | None = None  # the message when a required field is absent (default "required")
    default: Any = _MISSING  # the parsed value of an absent optional field (absent fields are left out otherwise)
    nullable: bool = False  # null is a value (passed through as None) rather than a wrong kind
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    positive: bool = False  # strictly greater than 0
    non_empty: bool = False  # a string, list or mapping with at least one element
    length: int | None = None  # a list of exactly this many elements
    members: Mapping[str, Field] | None = None  # structure
    noun: str = "key"  # how an unknown member of this structure is named
    item: Field | None = None  # list element / mapping value
    key: Field | None = None  # mapping key
    expected: str | None = None  # how the wrong-kind message names what was wanted
    parse: Callable[[Any], Any] | None = None  # after the kind checks: the value as the caller wants it, or Invalid


def Number(**kw: Any) -> Field:
    return Field(kind="number", **kw)


def Integer(**kw: Any) -> Field:
    return Field(kind="integer", **kw)


def Probability(**kw: Any) -> Field:
    return Field(kind="number", minimum=0, maximum=1, **kw)


def Bool(**kw: Any) -> Field:
    return Field(kind="boolean", **kw)


def Str(**kw: Any) -> Field:
    return Field(kind="string", **kw)


def Choice(choices: tuple[Any, ...], **kw: Any) -> Field:
    return Field(choices=tuple(choices), **kw)


def ListOf(item: Field, **kw: Any) -> Field:
    return Field(kind="list", item=item, **kw)


def MapOf(item: Field, **kw: Any) -> Field:
    return Field(kind="mapping", item=item, **kw)


def Struct(members: Mapping[str, Field], **kw: Any) -> Field:
    return Field(kind="structure", members=members, **kw)


def Value(parse: Callable[[Any], Any], **kw: Any) -> Field:
    """A value with its own grammar (a duration, a region name): `parse` judges it whole."""
    return Field(parse=parse, **kw)


_EXPECTED = {
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "string": "a string",
    "list": "a list",
    "mapping": "a mapping",
    "structure": "a mapping",
}


def type_name(value: Any) -> str:
    """How a message names the kind of a wrong value ("a string", "null", ...)."""
    if value is None:
        return "null"
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping",
    }
    return names.get(type(value), type(value).__name__)


def shown(value: Any) -> str:
    """A value of the right kind, quoted in a message: strings as repr, numbers as written."""
    return repr(value) if isinstance(value, str) else str(value)


def _kind_ok(value: Any, kind: str) -> bool:
    if kind == "any":
        return True
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "number":
        return isinstance(value, (int, float)) and math.isfinite(value)
    if kind == "integer":
        return isinstance(value, int)
    if kind == "string":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, (list, tuple))
    return isinstance(value, dict)  # mapping, structure


def _join(path: str, name: Any) -> str:
    return f"{path}.{name}" if path else str(name)


def check(value: Any, spec: Field, path: str = "") -> tuple[Any, list[Problem]]:
    """(the value parsed by the spec, every problem found). The parsed value is meaningful only without problems."""
    problems: list[Problem] = []
    parsed = _check(value, spec, path, problems)
    return parsed, problems


def check_members(document: Mapping[str, Any], members: Mapping[str, Field], path: str = "", *,
                  noun: str = "key") -> tuple[dict[str, Any], list[Problem]]:  # fmt: skip
    """`check` of a mapping already known to be one: its members parsed, absent optional ones left out."""
    problems: list[Problem] = []
    parsed = _members(document, members, path, noun, problems)
    return parsed, problems


def _check(value: Any, f: Field, path: str, problems: list[Problem]) -> Any:
    if value is None and f.nullable:
        return None
    if not _kind_ok(value, f.kind):
        wanted = f.expected or _EXPECTED[f.kind]
        # A float where an integer (or a finite number) was wanted is shown as written: "got 1.5", "got nan".
        got = shown(value) if f.kind in ("integer", "number") and isinstance(value, float) else type_name(value)
        problems.append((path, f"expected {wanted}, got {got}"))
        return None
    if f.choices is not None and value not in f.choices:
        what = shown(value) if isinstance(value, (str, int, float)) else type_name(value)
        problems.append((path, f"{what} is not allowed; use one of {', '.join(map(str, f.choices))}"))
        return None
    if f.kind in ("number", "integer"):
        if f.positive and value <= 0:
            problems.append((path, f"must be greater than 0, got {shown(value)}"))
            return None
        if f.minimum is not None and value < f.minimum:
            problems.append((path, f"must be at least {f.minimum:g}, got {shown(value)}"))
            return None
        if f.maximum is not None and value > f.maximum:
            problems.append((path, f"must be at most {f.maximum:g}, got {shown(value)}"))
            return None
    if f.non_empty and not value:
        problems.append((path, f"expected {f.expected or 'a non-empty ' + _EXPECTED[f.kind][2:]}, got an empty one"))
        return None
    if f.length is not None and len(value) != f.length:
        problems.append((path, f"expected {f.expected or f'{f.length} elements'}, got a list of {len(value)}"))
        return None
    reported = len(problems)
    if f.kind == "structure" and f.members is not None:
        value = _members(value, f.members, path, f.noun, problems)
    elif f.kind == "list" and f.item is not None:
        value = [_check(element, f.item, f"{path}[{index}]", problems) for index, element in enumerate(value)]
    elif f.kind == "mapping" and (f.item is not None or f.key is not None):
        parsed = {}
        for name, element in value.items():
            where = _join(path, name)
            before = len(problems)
            key = _check(name, f.key, where, problems) if f.key is not None else name
            if len(problems) == before:  # a value under a bad key is moot
                parsed[key] = _check(element, f.item, where, problems) if f.item is not None else element
        value = parsed
    if f.parse is not None and len(problems) == reported:  # a value with a bad part is not parsed whole
        try:
            return f.parse(value)
        except Invalid as error:
            problems.append((path, str(error)))
            return None
    return value


def _members(document: Mapping[str, Any], members: Mapping[str, Field], path: str, noun: str,
             problems: list[Problem]) -> dict[str, Any]:  # fmt: skip
    for name in document:
        if name not in members:
            problems.append((_join(path, name), f"unknown {noun}; allowed {noun}s are {', '.join(members)}"))
    parsed: dict[str, Any] = {}
    for name, f in members.items():
        if name in document:
            parsed[name] = _check(document[name], f, _join(path, name), problems)
        elif f.required:
            problems.append((_join(path, name), f.missing or "required"))
        elif f.default is not _MISSING:
            parsed[name] = f.default
    return parsed


def render(problems: list[Problem]) -> list[str]:
    """Problems as `path: message` lines (a problem of the whole document has no path)."""
    return [f"{path}: {message}" if path else message for path, message in problems]
