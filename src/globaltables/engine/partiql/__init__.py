"""PartiQL for DynamoDB: ExecuteStatement, BatchExecuteStatement and ExecuteTransaction as item operations.

Four stages, in the style of the expression grammar (engine/expressions/README.md):

| stage | module | input -> output |
| --- | --- | --- |
| 1. tokens | `lexer.py` | statement text -> tokens |
| 2. syntax | `parser.py` | tokens -> a cached template; with Parameters, a `Statement` (statements.py) |
| 3. plan | `plan.py` (+ `render.py`) | statement + table schema -> item-API requests (Query, PutItem, ...) |
| 4. run | `run.py` | requests -> item operations, driven one at a time -> the PartiQL response |

Nothing is evaluated twice and nothing is reimplemented: a statement runs as the item operations it stands for,
so their validation, conditions, indexes, streams, TTL, capacity, replication and strong-mode commit apply
unchanged. The operation modules (`operations/execute_statement.py`, ...) drive stage 4 inline through
`Engine.handle`; a strong-mode region drives the same generator through its own request path.
"""

from .parser import parse_statement
from .run import drive, run_inline, steps

__all__ = ["drive", "parse_statement", "run_inline", "steps"]
