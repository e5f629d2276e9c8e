"""Document-path trees, shared by update actions and projections (Alternator's attribute_path_map).

A tree has one node per path prefix. A node is either a leaf carrying a payload (the update action, or True for a
projection) or an inner node whose children are all map members (str) or all list indexes (int). That shape is
exactly DynamoDB's rule for the paths of one UpdateExpression or ProjectionExpression: no path may be a prefix of
another or repeat it ("overlap"), and no two paths may use one prefix both as a map and as a list ("conflict").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .ast import Path


class PathNode:
    __slots__ = ("indexes", "members", "payload")

    def __init__(self) -> None:
        self.payload: Any = None
        self.members: dict[str, PathNode] | None = None
        self.indexes: dict[int, PathNode] | None = None


def build_tree(paths: Sequence[Path], payloads: Sequence[Any] | None = None) -> PathNode | str:
    """The tree of `paths` (payload True unless given), or DynamoDB's overlap/conflict message for them."""
    root = PathNode()
    root.members = {}
    for position, path in enumerate(paths):
        node = root
        elements = path.elements
        last = len(elements) - 1
        for depth, element in enumerate(elements):
            if node.payload is not None:
                return first_clash(paths, position)
            if isinstance(element, str):
                if node.indexes is not None:
                    return first_clash(paths, position)
                if node.members is None:
                    node.members = {}
                children = node.members
            else:
                if node.members is not None:
                    return first_clash(paths, position)
                if node.indexes is None:
                    node.indexes = {}
                children = node.indexes
            child = children.get(element)
            if child is None:
                child = children[element] = PathNode()
            elif depth == last:
                return first_clash(paths, position)  # the same path again, or a prefix of an earlier one
            node = child
        node.payload = True if payloads is None else payloads[position]
    return root


def first_clash(paths: Sequence[Path], position: int) -> str:
    """The message for paths[position], the first path that clashes with an earlier one: DynamoDB names the
    earliest path it clashes with as "path one"."""
    later = paths[position]
    for earlier in paths[:position]:
        verdict = compare(earlier, later)
        if verdict is not None:
            return (
                f"Two document paths {verdict} with each other; must remove or rewrite one of these paths; "
                f"path one: {earlier}, path two: {later}"
            )
    raise AssertionError("first_clash called for a path that clashes with no earlier one")


def compare(one: Path, two: Path) -> str | None:
    """'overlap' when one path is a prefix of the other, 'conflict' when they index one prefix differently."""
    for x, y in zip(one.elements, two.elements):
        if type(x) is not type(y):
            return "conflict"
        if x != y:
            return None
    return "overlap"
