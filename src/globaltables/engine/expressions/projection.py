"""Projecting an item onto document paths (ProjectionExpression, ReturnValues UPDATED_OLD/UPDATED_NEW).

A projected path keeps the item's structure around it: `a[1].b` yields {"a": {"L": [{"M": {"b": ...}}]}}. List
elements selected by several paths keep their order and are packed together (a[3], a[1] -> [a[1], a[3]]). Paths
that do not resolve contribute nothing, and a map or list left without any projected member is left out.
"""

from __future__ import annotations

from collections.abc import Iterable

from .ast import Path, Projection
from .paths import PathNode, build_tree


def project(item: dict | None, paths: Projection | Iterable[Path]) -> dict:
    """The part of `item` that `paths` select (paths must not overlap: a Projection or an update's paths)."""
    if not item:
        return {}
    if isinstance(paths, Projection):
        tree = paths.tree
    else:
        tree = build_tree(list(paths))
        if isinstance(tree, str):
            raise ValueError(tree)
    out = {}
    for name, child in tree.members.items():
        value = item.get(name)
        if value is None:
            continue
        if child.payload is not None:
            out[name] = value
        else:
            projected = _project(child, value)
            if projected is not None:
                out[name] = projected
    return out


def _project(node: PathNode, value: dict) -> dict | None:
    if node.payload is not None:
        return value
    if node.members is not None:
        members = value.get("M")
        if members is None:
            return None
        out = {}
        for name, child in node.members.items():
            member = members.get(name)
            if member is not None:
                projected = _project(child, member)
                if projected is not None:
                    out[name] = projected
        return {"M": out} if out else None
    entries = value.get("L")
    if entries is None:
        return None
    selected = []
    for index in sorted(node.indexes):
        if index < len(entries):
            projected = _project(node.indexes[index], entries[index])
            if projected is not None:
                selected.append(projected)
    return {"L": selected} if selected else None
