"""DynamoDB errors as the wire shows them: `__type` (namespace#Name), a message member and an HTTP status.

Namespaces and member casing follow DynamoDB: validation errors live in `com.amazon.coral.validate`, protocol errors
in `com.amazon.coral.service` (SerializationException spells its member `Message`), everything else in
`com.amazonaws.dynamodb.v20120810`.
"""

from __future__ import annotations

from typing import Any

DYNAMODB_NAMESPACE = "com.amazonaws.dynamodb.v20120810"
VALIDATE_NAMESPACE = "com.amazon.coral.validate"
SERVICE_NAMESPACE = "com.amazon.coral.service"


class DynamoError(Exception):
    """Base of every error a client can receive. Subclasses set the wire name, namespace and status."""

    namespace = DYNAMODB_NAMESPACE
    status = 400
    message_member = "message"

    def __init__(self, message: str = "", **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = {k: v for k, v in extra.items() if v is not None}

    @property
    def type_name(self) -> str:
        return type(self).__name__

    def to_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"__type": f"{self.namespace}#{self.type_name}"}
        if self.message:
            body[self.message_member] = self.message
        body.update(self.extra)
        return body


class ValidationException(DynamoError):
    namespace = VALIDATE_NAMESPACE


class SerializationException(DynamoError):
    namespace = SERVICE_NAMESPACE
    message_member = "Message"


class UnknownOperationException(DynamoError):
    namespace = SERVICE_NAMESPACE


class MissingAuthenticationTokenException(DynamoError):
    # Lower-case `message`, unlike AccessDenied: {"...#MissingAuthenticationTokenException","message":"Request is
    # missing Authentication Token"} is what DynamoDB sends (dynalite's tests, recorded against the live service).
    namespace = SERVICE_NAMESPACE


class AccessDeniedException(DynamoError):
    namespace = SERVICE_NAMESPACE
    message_member = "Message"


class ConditionalCheckFailedException(DynamoError):
    def __init__(self, message: str = "The conditional request failed", item: dict | None = None) -> None:
        super().__init__(message, Item=item)


class ResourceNotFoundException(DynamoError):
    pass


class DuplicateItemException(DynamoError):
    """A PartiQL INSERT of a key that already holds an item (ql-reference.insert.html)."""

    def __init__(self, message: str = "Duplicate primary key exists in table") -> None:
        super().__init__(message)


class ResourceInUseException(DynamoError):
    pass


class TableNotFoundException(DynamoError):
    """What the continuous-backups operations raise for a table that does not exist (not ResourceNotFound)."""


class LimitExceededException(DynamoError):
    pass


class ItemCollectionSizeLimitExceededException(DynamoError):
    pass


class TransactionCanceledException(DynamoError):
    message_member = "Message"

    def __init__(self, reasons: list[dict[str, Any]]) -> None:
        codes = ", ".join(r.get("Code", "None") for r in reasons)
        super().__init__(
            f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
            CancellationReasons=reasons,
        )


class TransactionConflictException(DynamoError):
    pass


class TransactionInProgressException(DynamoError):
    pass


class IdempotentParameterMismatchException(DynamoError):
    message_member = "Message"


class ProvisionedThroughputExceededException(DynamoError):
    pass


class ReplicatedWriteConflictException(DynamoError):
    """HTTP 409 so default boto3 (legacy retry mode) retries it; see dynamodb-facts §10.1."""

    status = 409

    def __init__(
        self, message: str = "One or more items in this request are being modified by a request in another Region."
    ) -> None:
        super().__init__(message)


class ExpiredIteratorException(DynamoError):
    pass


class TrimmedDataAccessException(DynamoError):
    pass


class InternalServerError(DynamoError):
    """A 500 with a reason: a strong write in doubt or a member cut off, and a request body that cannot be decoded
    (DynamoDB executes nothing then)."""

    status = 500


def validation(message: str) -> ValidationException:
    """Shorthand used throughout the engine: `raise validation("...")`."""
    return ValidationException(message)


def invalid_parameter(detail: str) -> ValidationException:
    return ValidationException(f"One or more parameter values were invalid: {detail}")
