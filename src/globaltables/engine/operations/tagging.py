"""What TagResource, UntagResource and ListTagsOfResource share: resolving the ResourceArn to a table.

Checks in DynamoDB's order: a missing ARN is "Invalid TableArn"; a string that is not ARN-shaped cannot even be
authorised (AccessDeniedException, as IAM answers); an ARN that is not a DynamoDB table's is "Invalid TableArn:
Invalid ResourceArn provided as input ..."; a table ARN of no table here is ResourceNotFoundException.
"""

from __future__ import annotations

import re

from ..errors import AccessDeniedException, ResourceNotFoundException, validation
from ..schema import TableDefinition

ARN_SHAPE = re.compile(r".+:.+:.+:.+:.+:.+/.+", re.DOTALL)
TABLE_ARN = re.compile(r"arn:aws:dynamodb:.+:\d+:table/[^/]{2}[^/]+", re.DOTALL)


def check_arn(engine, request: dict, action: str) -> str:
    arn = request.get("ResourceArn")
    if arn is None:
        raise validation("Invalid TableArn")
    if not isinstance(arn, str) or not ARN_SHAPE.fullmatch(arn):
        raise AccessDeniedException(
            f"User: arn:aws:iam::{engine.account}:root is not authorized to perform: dynamodb:{action} "
            f"on resource: {arn or '*'}"
        )
    return arn


def check_table_arn(arn: str) -> None:
    if not TABLE_ARN.fullmatch(arn):
        raise validation(f"Invalid TableArn: Invalid ResourceArn provided as input {arn}")


def table_of(engine, arn: str, not_found: str) -> TableDefinition:
    """The table an ARN names; it must be this region's and this account's."""
    name = arn.rsplit("/", 1)[1]
    table = engine.tables.get(name)
    if table is None or table.arn != arn:
        raise ResourceNotFoundException(not_found)
    return table


def not_found_message(arn: str) -> str:
    # "ResourcArn" is DynamoDB's own spelling in this message.
    return f"Requested resource not found: ResourcArn: {arn} not found"
