"""Output column names usable unquoted in every warehouse.

Lower case, ``@`` -> ``_at_``, every other run of characters outside ``[a-z0-9_]`` -> ``_``, no
leading or trailing ``_`` (a name starting with a digit gets a leading ``m_``):

>>> output_name("ndcg@10"), output_name("ndcg(gain=exponential)@10"), output_name("P@5")
('ndcg_at_10', 'ndcg_gain_exponential_at_10', 'p_at_5')
>>> output_name("map(denominator=relevant)@10")
'map_denominator_relevant_at_10'

A name longer than 63 characters, which PostgreSQL would cut without a word (so two names could
become one), keeps its first characters and its cutoff, with 8 hex digits of the full name's SHA-1
between them:

>>> output_name("exposure_disparity(weight=geometric,patience=0.5,combine=max_min_diff)@3")
'exposure_disparity_weight_geometric_patience_0_5_e8f1511b_at_3'
"""
from __future__ import annotations

import hashlib
import re

MAX_LENGTH = 63  # PostgreSQL's identifiers (NAMEDATALEN − 1); every other warehouse takes as many
SIMPLE = re.compile(r"^[a-z_][a-z0-9_]*$")  # an identifier every warehouse reads unquoted (case aside)


def output_name(column: str) -> str:
    """The safe name of a result column (README, "dbt")."""
    name = re.sub(r"[^a-z0-9_]+", "_", column.lower().replace("@", "_at_"))
    name = re.sub(r"_+", "_", name).strip("_")
    name = name if name and not name[0].isdigit() else f"m_{name}"
    if len(name) <= MAX_LENGTH:
        return name
    cutoff = re.search(r"_at_\d+$", name)
    suffix = cutoff.group() if cutoff else ""
    digest = hashlib.sha1(name.encode("utf-8")).hexdigest()[:8]
    return f"{name[:MAX_LENGTH - len(suffix) - 9].rstrip('_')}_{digest}{suffix}"
