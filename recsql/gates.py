"""Gates: the conditions under which a comparison fails a pipeline, as written (``recsql compare --fail-if``,
and a dbt model's ``fail_if``), read into :class:`Gate`. Which pairs a gate fails is
:func:`recsql.comparison_decisions.gate_failures`'; this module only reads the words, so the dbt generator
reads them without importing the results' code.

>>> Gate.parse("ndcg@10 worse by 2%")
Gate(text='ndcg@10 worse by 2%', metric='ndcg@10', kind='worse', margin=0.02, relative=True)
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .errors import RecsqlError

_NUMBER = r"[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?"
_GATE = re.compile(rf"^\s*(?P<metric>\S+)\s+(?:(?:worse(?:\s+than\s+(?:the\s+)?baseline)?\s+by\s+(?P<worse>{_NUMBER}%?))"
                   rf"|(?:not\s+non-?inferior\s+by\s+(?P<noninferior>{_NUMBER}%?))"
                   rf"|(?P<loss>significant\s+loss|significantly\s+worse))\s*$", re.IGNORECASE)
GATE_FORMS = ('METRIC worse by MARGIN (the difference is beyond −MARGIN)',
              'METRIC not noninferior by MARGIN (non-inferiority at MARGIN is not shown)',
              'METRIC significant loss (worse, and the corrected test says so)')


@dataclass(frozen=True)
class Gate:
    """One condition under which a comparison fails: ``kind`` "worse", "noninferior" or "loss", for
    ``metric`` (or "any"), with ``margin`` (a share of the baseline's mean when ``relative``)."""
    text: str
    metric: str
    kind: str
    margin: float = math.nan
    relative: bool = False

    @classmethod
    def parse(cls, text: str) -> "Gate":
        found = _GATE.match(text)
        if not found:
            raise RecsqlError(f"--fail-if {text!r}: write one of: " + "; ".join(GATE_FORMS) + " (MARGIN in the "
                              "metric's units, or with % a share of the baseline's mean; METRIC 'any' for every "
                              "metric); e.g. --fail-if 'ndcg@10 worse by 0.01'")
        kind = "worse" if found["worse"] else "noninferior" if found["noninferior"] else "loss"
        margin = found["worse"] or found["noninferior"]
        value, relative = parse_margin(margin) if margin else (math.nan, False)
        return cls(text.strip(), found["metric"], kind, value, relative)


def parse_margin(text: str) -> tuple[float, bool]:
    """A margin as written: a number in the metric's units, or with % a share of the baseline's mean
    (``2%`` -> (0.02, True)); ValueError for anything else."""
    relative = text.strip().endswith("%")
    value = float(text.strip().rstrip("%"))
    return (value / 100 if relative else value), relative
