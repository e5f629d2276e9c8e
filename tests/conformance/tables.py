"""Tables and error answers the conformance modules share, made through the client a test passes in (a client of
conftest.py's `client_factory`), so they reach whatever target the suite runs against."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

PK_ONLY_ATTRIBUTES = [{"AttributeName": "pk", "AttributeType": "S"}]
PK_ONLY_KEY = [{"AttributeName": "pk", "KeyType": "HASH"}]


def create_pk_table(dynamodb: Any, name: str, **extra: Any) -> str:
    """Create an on-demand table keyed by the string attribute `pk` alone (`extra`: more CreateTable members,
    e.g. a StreamSpecification); its name."""
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=PK_ONLY_ATTRIBUTES,
        KeySchema=PK_ONLY_KEY,
        BillingMode="PAY_PER_REQUEST",
        **extra,
    )
    return name


def error_of(call: Callable[..., Any], **kwargs: Any) -> tuple[str, str]:
    """The (code, message) of the ClientError `call(**kwargs)` raises; the test fails if it raises none."""
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response["Error"]["Code"], caught.value.response["Error"]["Message"]
