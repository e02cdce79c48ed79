"""The warning on an input given that nothing reads.

An optional input (``items=``, ``interactions=``, ``expected_recs=``, ...) is read only by the metrics that need
it, and by the input checks of what is read: the composer prunes every relation no metric or check reads
(recsql/compose/unread.py), so the statement's placeholders name exactly the inputs it reads
(:func:`recsql.statements.statement_and_reads`). One given and not read changes no value, which a user who
passed it to change one would not know: ``interactions=`` beside ``expected_recs=`` for unexpectedness (which
reads the expected lists when both are given), or with only accuracy metrics asked. (``items=`` is read by its
input checks whatever the metrics: a duplicated item is refused.) So
:func:`recsql.evaluate` and :func:`recsql.compare` warn, naming the input in both interfaces' words (the
report once, though it evaluates and compares). Nothing is refused: a pipeline may pass the same inputs to
every evaluation.

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     warn_unread({"recs", "truth", "interactions"}, frozenset({"recs", "truth"}))
>>> print(caught[0].message)
interactions= (CLI: --interactions) is given, but no metric asked reads it: no value depends on it; leave it out, or ask a metric that reads it
>>> warn_unread({"recs", "interactions"}, None)  # reads unknown: no warning
"""
from __future__ import annotations

from typing import Collection

from .errors import warn

# The inputs that only the metrics needing them read (recs, truth and segments are read by every evaluation).
OPTIONAL = ("items", "interactions", "catalog", "expected_recs", "item_features", "intents", "logs", "reward_model")


def warn_unread(given: Collection[str], read: frozenset[str] | None) -> None:
    """Warn once about the optional inputs in ``given`` (roles) that the statement does not ``read`` (None:
    not known, no warning)."""
    if read is None:
        return
    unread = [role for role in OPTIONAL if role in given and role not in read]
    if not unread:
        return
    named = " and ".join(f"{role}= (CLI: --{role.replace('_', '-')})" for role in unread)
    one = len(unread) == 1
    warn(f"{named} {'is' if one else 'are'} given, but no metric asked reads {'it' if one else 'them'}: "
         f"no value depends on {'it' if one else 'them'}; leave {'it' if one else 'them'} out, or ask a metric that "
         f"reads {'it' if one else 'them'}")
