"""DynamoDB expressions: one lexer, one parser, one resolver, one evaluator for every expression kind.

Data-plane operations use this API (see README.md in this folder for the theory of operation):

    ctx = ExpressionContext(request.get("ExpressionAttributeNames"), request.get("ExpressionAttributeValues"))
    condition = parse_condition(text, ctx, "ConditionExpression")   # or "FilterExpression"
    update = parse_update(text, ctx)
    projection = parse_projection(text, ctx)
    key = parse_key_condition(text, ctx, table.key)
    ctx.check_unused()                                               # after every expression of the request
    ...
    evaluate_condition(condition, item_or_None) -> bool
    new_item, paths = apply_update(update, item)                      # pure: item is not modified
    project(item, projection) -> dict
"""

from .ast import Path, Projection, UpdateExpression
from .evaluate import condition_paths, evaluate_condition, get_path
from .key_condition import KeyCondition, parse_key_condition
from .projection import project
from .reserved_words import is_reserved
from .resolve import (
    ExpressionContext,
    check_expression_parameters,
    parse_condition,
    parse_projection,
    parse_update,
)
from .update import apply_update, check_key_not_updated, updated_attribute_names, updated_attributes

__all__ = [
    "ExpressionContext",
    "KeyCondition",
    "Path",
    "Projection",
    "UpdateExpression",
    "apply_update",
    "check_expression_parameters",
    "check_key_not_updated",
    "condition_paths",
    "evaluate_condition",
    "get_path",
    "is_reserved",
    "parse_condition",
    "parse_key_condition",
    "parse_projection",
    "parse_update",
    "project",
    "updated_attribute_names",
    "updated_attributes",
]
