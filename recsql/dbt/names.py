"""Output column names usable unquoted in every warehouse.

Lower case, ``@`` -> ``_at_``, every other run of characters outside ``[a-z0-9_]`` -> ``_``, no
leading or trailing ``_`` (a name starting with a digit gets a leading ``m_``):

>>> output_name("ndcg@10"), output_name("ndcg(gain=exponential)@10"), output_name("P@5")
('ndcg_at_10', 'ndcg_gain_exponential_at_10', 'p_at_5')
>>> output_name("map(denominator=relevant)@10")
'map_denominator_relevant_at_10'
"""
from __future__ import annotations

import re

SIMPLE = re.compile(r"^[a-z_][a-z0-9_]*$")  # an identifier every warehouse reads unquoted (case aside)


def output_name(column: str) -> str:
    """The safe name of a result column (README, "dbt")."""
    name = re.sub(r"[^a-z0-9_]+", "_", column.lower().replace("@", "_at_"))
    name = re.sub(r"_+", "_", name).strip("_")
    return name if name and not name[0].isdigit() else f"m_{name}"
