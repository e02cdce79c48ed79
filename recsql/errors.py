"""The one exception type recsql raises for user mistakes."""
from __future__ import annotations


class RecsqlError(ValueError):
    """A mistake in recsql's input: the message names the input, the column and the fix."""
