"""The options the entry points share, defined once: :data:`SHARED`, one :class:`Option` each, with its
command-line flag, its Python keyword (a field of :class:`recsql.Inputs`, a keyword of evaluate,
to_sql, compare and report), its key in dbt's ``recsql.yml``, its help text and its parser
destination. Every command's parser adds its ``--*-col``, definition and input options from this
table (:func:`add`), dbt reads the keys it lists, and ``tests/test_options.py`` holds the parsers,
the signatures and dbt's keys to it.

The defaults are :class:`recsql.Inputs`' own (the command line's are the same); they and the
choices are read when a parser is built, so that importing this table (as ``recsql --version``
does) loads neither numpy nor sqlglot.

>>> option("--run-col").keyword, option("user_col").flag, option("expected_recs").yml
('run_cols', '--user-col', 'expected_recs')
"""
from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import Any



@dataclass(frozen=True)
class Option:
    """One shared option: ``flag`` on the command line, ``keyword`` in Python, ``yml`` in dbt's
    recsql.yml (None: not there), ``help``, the parser's ``dest``, its ``group`` (``columns``: the
    input columns and definitions; ``inputs``: a table beside recs and truth; ``segments``: each
    user's segment and its columns; ``render``: to_sql's, ``recsql sql``'s and dbt's, which read no
    table), argparse's other
    arguments (``parse``), and ``old``: its old spellings (flag or keyword), accepted one release."""

    flag: str
    keyword: str
    yml: str | None
    help: str
    group: str = "columns"
    parse: dict[str, Any] = field(default_factory=dict)
    old: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        return self.keyword

    def default(self) -> Any:
        """The default: :class:`recsql.Inputs`' (a list for a repeatable option; the table's own for
        one that is no field of Inputs)."""
        if "default" in self.parse:
            return self.parse["default"]
        if self.parse.get("action") == "append":
            return []
        if self.parse.get("action") == "store_const":
            return argparse.SUPPRESS  # the option that sets the value gives the default
        from .inputs import Inputs
        return {f.name: f.default for f in dataclasses.fields(Inputs)}[self.keyword]

    def arguments(self) -> dict[str, Any]:
        """argparse's arguments but the flag and the help: the destination, the default, the choices."""
        parse = dict(self.parse)
        if "choices" in parse:
            parse["choices"] = _choices(parse["choices"])
        default = self.default()
        return {**parse, "dest": self.dest, **({} if default is argparse.SUPPRESS else {"default": default})}


def _choices(name: str) -> list[str]:
    """The choices of an option, by name, from the modules that define them."""
    from .arguments import DUPLICATE_POLICIES
    from .compose import POPULATIONS, TIES
    from .conventions import CONVENTIONS
    return {"populations": list(POPULATIONS), "conventions": sorted(CONVENTIONS), "ties": list(TIES),
            "duplicates": list(DUPLICATE_POLICIES)}[name]


def _column(flag: str, help: str, **parse: Any) -> Option:
    return Option(flag, flag[2:].replace("-", "_"), flag[2:].replace("-", "_"), help, "columns", parse)


def _input(flag: str, help: str, old: tuple[str, ...] = ()) -> Option:
    return Option(flag, flag[2:].replace("-", "_"), flag[2:].replace("-", "_"), help, "inputs", {}, old)


SHARED: tuple[Option, ...] = (
    _column("--user-col", "user column (default: user_id)"),
    _column("--item-col", "item column (default: item_id)"),
    _column("--score-col", "score column, higher is better (default: score)"),
    _column("--rank-col", "rank column, 1 is best (instead of a score)"),
    _column("--relevance-col", "truth relevance column (default: relevance; absent with only key columns beside it: "
                               "every truth row has relevance 1)"),
    Option("--no-relevance", "relevance_col", None, "no relevance column: every truth row is relevant (other "
           "columns of truth are ignored)", "columns", {"action": "store_const", "const": None}),
    _column("--price-col", "items price column (default: price)"),
    _column("--probability-col", "items probability column (novelty p=items)"),
    _column("--category-col", "items category column (diversity)"),
    _column("--head-col", "items column flagging the short head, true/false or 1/0 (the long-tail metrics aplt, aclt, "
                          "lt_coverage, pop_reo, pop_rsp then split head and tail by it, not by interactions' "
                          "share; default: none)"),
    _column("--features-col", "items feature-vector array column (DuckDB)"),
    _column("--feature-col", "--item-features feature column (default: feature)"),
    _column("--value-col", "--item-features value column (default: value)"),
    _column("--intent-col", "--intents intent (subtopic) column (default: intent)"),
    _column("--interaction-weight-col", "--interactions column weighing each interaction in a user's history "
                                        "(miscalibration's p(g|u), Steck's w_ui, e.g. a recency weight; default: "
                                        "none, every item of the history weighs 1)"),
    _column("--position-col", "--logs position column, 1 is the first slot, and the recs' of a stochastic target "
                              "per position (target=positions) or of the logged slates' prefixes (target=slates) "
                              "(default: position; absent in the logs: every impression is the one slot)"),
    Option("--no-position", "position_col", None, "--logs have no position column: every impression is the one "
           "slot (recsql sql, which reads no table, needs it said; elsewhere a missing column is found)", "columns",
           {"action": "store_const", "const": None}),
    _column("--propensity-col", "--logs propensity column: the logging policy's probability of the item shown there "
                                "(default: propensity)"),
    _column("--slate-propensity-col", "--logs column of the logging policy's probability of the whole logged slate, "
                                      "the same on each of its rows (slate_ips, slate_snips; default: none)"),
    _column("--cascade-propensity-col", "--logs column of the logging policy's probability of the slate's items at "
                                        "positions 1..k, on the row of position k (slate_rips, slate_snrips; their target's, with target=slates, "
                                        "is the recs' score on the same row; default: none)"),
    _column("--reward-col", "--logs reward column, and --reward-model's predicted reward (default: reward)"),
    _column("--sample-col", "recs column numbering each user's sampled lists of a stochastic run (expected exposure; "
                            "every per-user value the mean over the run's samples)"),
    Option("--run-col", "run_cols", "run_cols", "run key column of recs (model, experiment, ...); repeat for several",
           "columns", {"action": "append"}),
    _column("--threshold", "relevant iff relevance >= threshold (default 1; trec_eval's -l)", type=float),
    _column("--population", "users averaged over (default: the convention's; recsql: relevant)", choices="populations"),
    _column("--convention", "reproduce another tool's numbers: tie rule, denominators, gains, population "
                            "(default: recsql)", choices="conventions"),
    _column("--ties", "equal scores: item_id (ascending), item_id_desc, or average (expected value over every "
                      "order; default: the convention's)", choices="ties"),
    _column("--duplicates", "duplicate keys: error (default), best / max to keep the best row",
            choices="duplicates"),
    _input("--items", "items (item_id, price, probability, category, ...): path or table"),
    _input("--interactions", "training interactions (user, item): path or table (novelty, surprisal, arp, serendipity)"),
    _input("--catalog", "catalog items (item): path or table (coverage, gini; default: --items, else every item of "
                        "truth and recs)"),
    _input("--expected-recs", "another recommender's lists, columns like recs (unexpectedness, serendipity; the "
                              "reference run of rbo, intersection and jaccard)",
           old=("--baseline", "--baseline-recs", "baseline", "baseline_recs")),
    _input("--item-features", "item feature vectors as rows (item, feature, value) (diversity)"),
    _input("--intents", "judgments per intent (user, item, intent, relevance): path or table (alpha_ndcg, err_ia, "
                        "nrbp, nnrbp, p_ia, s_recall)"),
    _input("--logs", "logged impressions (user or context, item, position, propensity, reward): path or table "
                     "(ips, snips, dm, dr, switch_dr, ess, max_weight; slates: slate_ips, slate_iips, slate_rips, "
                     "slate_snips, slate_sniips, slate_snrips, pbm_ips)"),
    _input("--reward-model", "a reward model's predictions (user, item, reward): path or table (dm, dr, switch_dr)"),
    Option("--segments", "segments", "segments", "each user's segment (user column and segment columns, one row per "
           "user): path or table; each run is evaluated within each segment (the population taken within it)",
           "segments"),
    Option("--segment-col", "segment_cols", "segment_cols", "a segment column of --segments (default: every column "
           "but the user); repeat for several", "segments", {"action": "append"}),
    Option("--text-id", "text_ids", "text_ids", "an id column holding strings (binary collation where the dialect "
           "needs one); repeatable", "render", {"action": "append", "default": []}),
    Option("--truth-has-run-cols", "truth_has_run_cols", "truth_has_run_cols", "truth carries the run key columns "
           "too", "render", {"action": "store_true", "default": False}),
    Option("--logs-run-col", "logs_run_cols", "logs_run_cols", "a run column the logs carry too: each run is estimated "
           "on the logs of its value (logs per run); repeatable", "render", {"action": "append", "default": []}),
)


def option(name: str) -> Option:
    """The option of a flag (``--run-col``) or keyword (``run_cols``): the one taking a value."""
    return next(o for o in SHARED if name in (o.flag, o.keyword) and o.yml is not None)


def add(parser: Any, name: str, help: str | None = None) -> None:
    """Add the option named (flag or keyword; ``help`` replaces the table's where a command says
    more) to ``parser`` (or an argument group), with :class:`recsql.Inputs`' default."""
    chosen = [o for o in SHARED if name in (o.flag, o.keyword)]
    for one in chosen:
        parser.add_argument(one.flag, help=help if help and one.yml else one.help, **one.arguments())


def add_group(parser: Any, group: str, but: tuple[str, ...] = ()) -> None:
    """Add every option of ``group`` (``columns`` or ``inputs``) but those named in ``but``."""
    for keyword in dict.fromkeys(o.keyword for o in SHARED if o.group == group and o.keyword not in but):
        add(parser, keyword)


def values(args: argparse.Namespace, group: str, but: tuple[str, ...] = ()) -> dict[str, Any]:
    """The keywords of ``group``'s options from parsed arguments (a repeatable one given none: None
    for segment_cols, as evaluate's default)."""
    found = {o.keyword: getattr(args, o.dest) for o in SHARED if o.group == group and o.keyword not in but}
    if "segment_cols" in found:
        found["segment_cols"] = found["segment_cols"] or None
    return found


def yml_keys(*groups: str) -> tuple[str, ...]:
    """The option and input keys of an evaluation in dbt's recsql.yml (of ``groups``; none: every one)."""
    return tuple(dict.fromkeys(o.yml for o in SHARED if o.yml and (not groups or o.group in groups)))
