"""Checkers over a recorded history and the final replica states; each returns a `CheckResult`.

Final replica states have one shape everywhere: `{region: {table: {key_id: item_or_None}}}`, keys being the
canonical strings of `chaos.history.key_id`; a missing key and a None item both mean "no item".
"""

from .result import CheckResult, Finding

__all__ = ["CheckResult", "Finding"]
