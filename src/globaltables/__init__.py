"""globaltables: a testbed that reproduces Amazon DynamoDB global tables on one machine."""

__version__ = "0.1.0"
