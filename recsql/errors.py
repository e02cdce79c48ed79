"""The one exception type recsql raises for user mistakes, and the one warning type."""
from __future__ import annotations

import difflib
import functools
import inspect
import os
import sys
import warnings
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class RecsqlError(ValueError):
    """A mistake in recsql's input: the message names the input, the column and the fix. ``metric``: the
    metric (its name as asked) the refusal is about, where it is about one metric only (compare refusing
    to resample a global metric), so that a caller can leave that metric out and say why (the report)."""

    def __init__(self, message: str, metric: str | None = None) -> None:
        super().__init__(message)
        self.metric = metric


class RecsqlWarning(UserWarning):
    """Something the user should know about the result (for example an empty population)."""


PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str, category: type[Warning] = RecsqlWarning) -> None:
    """``warnings.warn`` pointed at the first caller outside recsql (the user's line that called
    ``recsql.evaluate``, through however many of recsql's own functions and decorators), so that the
    warning names that line and a filter on the caller's module matches it."""
    frame, level = sys._getframe(1), 2  # level 2: the caller of warn
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level - 1 if frame is None else level)


def suggest_keywords(function: Callable[..., T]) -> Callable[..., T]:
    """``function`` refusing an unknown keyword with a :class:`RecsqlError` that names the close
    real ones (``run_col=`` -> did you mean ``run_cols=``?) instead of Python's bare TypeError."""
    parameters = inspect.signature(function).parameters
    known = [n for n, p in parameters.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> T:
        unknown = [k for k in kwargs if k not in parameters]
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=2, cutoff=0.6)
            hint = f"did you mean {' or '.join(f'{c}=' for c in close)}? " if close else ""
            raise RecsqlError(f"{function.__name__}() got an unknown keyword {unknown[0]}=; {hint}"
                              f"its keywords are {', '.join(known)}")
        return function(*args, **kwargs)

    return checked
