"""Reading the YAML files users write (topologies, chaos schedules): safe, and bounded before anything is built.

Why: PyYAML builds documents recursively, so a file nested 20,000 levels deep (or a few thousand) raises
RecursionError from deep inside the composer, and a document that holds itself through an alias (`&a [*a]`) sends
every later walk over it into endless recursion. Neither is a YAMLError, so neither got the one-line
"<file>: invalid YAML: ..." answer every other bad file gets.

Rules
1. Every YAML file the project reads goes through `load_yaml` (safe loading only: plain data, no Python objects).
2. Before building anything, the document's events are scanned (PyYAML's parser is iterative, so this cannot
   recurse): nesting deeper than MAX_DEPTH collections, or an alias to a collection it is inside of, is refused.
3. Every refusal is a `yaml.YAMLError` carrying the line and column, so callers report it as they report any
   syntax error; a RecursionError that still happens (a loader of the caller's) is turned into one too.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 100  # no file the project reads needs more than a handful of levels


class DocumentTooDeep(yaml.MarkedYAMLError):
    """A document nested beyond MAX_DEPTH, or holding itself through an alias."""


def load_yaml(text: str, loader: type[yaml.SafeLoader] = yaml.SafeLoader) -> Any:
    """The document in `text`, loaded with `loader` (a SafeLoader) after the checks of the module rules."""
    check_shape(text, loader)
    try:
        return yaml.load(text, Loader=loader)
    except RecursionError:
        raise DocumentTooDeep(problem=f"the document is nested too deeply (more than {MAX_DEPTH} levels)") from None


# libyaml's parser when PyYAML has it: the pure-Python scanner takes seconds over one line of 20,000 brackets.
_SCANNER = getattr(yaml, "CSafeLoader", None)


def check_shape(text: str, loader: type[yaml.SafeLoader] = yaml.SafeLoader) -> None:
    """Module rule 2: refuse nesting beyond MAX_DEPTH and self-containing aliases, from the events alone."""
    depth = 0
    open_anchors: list[str | None] = []  # the anchor of every collection being read, outermost first
    for event in yaml.parse(text, Loader=_SCANNER or loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise DocumentTooDeep(
                    problem=f"nested deeper than {MAX_DEPTH} levels", problem_mark=event.start_mark
                )
            open_anchors.append(event.anchor)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            open_anchors.pop()
        elif isinstance(event, yaml.AliasEvent) and event.anchor in open_anchors:
            raise DocumentTooDeep(
                problem=f"alias *{event.anchor} refers to a collection that contains it", problem_mark=event.start_mark
            )


def one_line(error: BaseException) -> str:
    """A YAML error on one line: "line L, column C: problem" (PyYAML's own text spans several lines)."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or " ".join(str(error).split())
    if mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return problem
