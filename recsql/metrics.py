"""A metric with its cutoff and options (:class:`Metric`), and metric names (the registry: recsql/specs.py).

A metric is written ``name@k`` or ``name(option=value,...)@k``; :class:`Metric` is the same thing
as an object, and ``str(Metric)`` is the canonical name, which parses back to an equal Metric:

>>> m = parse_metric("ndcg(ideal=list,gain=exponential)@5")
>>> str(m)
'ndcg(gain=exponential,ideal=list)@5'
>>> parse_metric(str(m)) == m == Metric("ndcg", 5, gain="exponential", ideal="list")
True
>>> str(parse_metric("hr@10"))
'hit_rate@10'

trec_eval's and ir_measures' own names (``P_10``, ``map_cut.10``, ``AP@10``, ``NumRet``) are read
too, with the options that give the tool's definition (recsql/names.py):

>>> m = parse_metric("map_cut_10")
>>> str(m), m.column
('map(denominator=relevant)@10', 'map_cut_10')
"""
from __future__ import annotations

import re
from typing import Union

from . import names
from .conventions import CONVENTIONS
from .errors import RecsqlError
from .specs import (DISCOUNT_PRESETS, K_RULES, POPULATION_KINDS, MetricSpec, Param,  # noqa: F401 - metrics.*: the
                    aliases, is_recsql_name, registry, resolve_name, suggest, tie_averaged)  # registry's old home


class Metric:
    """A metric with its cutoff and options; hashable, comparable, printed canonically.

    >>> Metric("map", 10, denominator="relevant")
    Metric('map(denominator=relevant)@10')

    ``column`` is the name of its result column: the text the user asked for when it was parsed
    from a string ("named as asked", README "Metrics": ``P@10`` stays ``P@10``), else the canonical name.
    """

    __slots__ = ("name", "k", "options", "explicit", "asked")

    def __init__(self, name: str, k: int | None = None, **options: object) -> None:
        conflict = names.spelled(name.strip(), is_recsql_name, colliding_only=True) if isinstance(name, str) else None
        if conflict:  # AP, MAP, Judged, ERR: the tool's exact spelling, not recsql's ap/map/judged/err
            raise RecsqlError(f"{name.strip()!r} is {conflict}: write it as a string (recsql.parse_metric, "
                              "evaluate's metrics); recsql.Metric takes recsql's names")
        spec = resolve_name(name)
        self.name: str = spec.name
        self.k: int | None = _check_k(spec, k)
        unknown = sorted(set(options) - set(spec.params))
        if unknown:
            valid = ", ".join(spec.params) or "none"
            raise RecsqlError(
                f"metric {spec.name!r}: unknown option {unknown[0]!r}{suggest(unknown[0], spec.params)}; "
                f"its options are: {valid}"
            )
        normalized = {k_: _normalized(spec.params[k_], spec.name, v) for k_, v in options.items()}
        self.options: tuple[tuple[str, str], ...] = tuple(
            (p, normalized[p]) for p in spec.params
            if p in normalized and normalized[p] != spec.params[p].default
        )
        # Options the user wrote, defaults included: a convention (recsql/conventions.py) fills in
        # only the others. Not part of equality: map(denominator=min)@5 == map@5.
        self.explicit: frozenset[str] = frozenset(normalized)
        # The text this metric was parsed from (parse_metric), if any. Not part of equality.
        self.asked: str | None = None

    @property
    def column(self) -> str:
        """The result column's name: as asked, or canonical for a Metric built in Python."""
        return self.asked or str(self)

    @property
    def spec(self) -> MetricSpec:
        return registry()[self.name]

    def all_options(self) -> dict[str, str]:
        """Every option of the metric, defaults filled in."""
        values = {p.name: p.default for p in self.spec.params.values()}
        values.update(self.options)
        return values

    def __str__(self) -> str:
        # an option the inputs may choose (_input_fitted), written at its default, is named: split=interactions
        # beside head_col is not the metric head_col moves to split=items
        written = dict(self.options)
        pinned = self.explicit & _input_fitted(self) - set(written)
        opts = ",".join(f"{k}={written[k] if k in written else self.spec.params[k].default}"
                        for k in self.spec.params if k in written or k in pinned)
        return f"{self.name}{f'({opts})' if opts else ''}{'' if self.k is None else f'@{self.k}'}"

    def __repr__(self) -> str:
        return f"Metric({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Metric) and (self.name, self.k, self.options) == (
            other.name, other.k, other.options)

    def __hash__(self) -> int:
        return hash((self.name, self.k, self.options))


def _normalized(param: Param, metric: str, value: object) -> str:
    """A user-given option value, validated, as its canonical text: a discount by recsql/discounts.py
    (which needs sqlglot: imported only when a discount is given), any other by :meth:`Param.normalize`."""
    if param.kind == "discount":
        if str(value).strip().lower() in param.choices:  # a preset, or the word a discount option takes besides
            return str(value).strip().lower()
        from .discounts import normalize_discount  # noqa: PLC0415  (sqlglot: only for a discount)
        return normalize_discount(str(value).strip(), metric)
    return param.normalize(metric, value)


def _check_k(spec: MetricSpec, k: object) -> int | None:
    if spec.k_rule == "none":
        if k is not None:
            raise RecsqlError(f"metric {spec.name!r} takes no cutoff; write it as {spec.name!r}, not with @k")
        return None
    if k is None and spec.k_rule == "optional":
        return None
    if k is None:
        raise RecsqlError(f"metric {spec.name!r} needs a cutoff: write it as '{spec.name}@10' (any k >= 1)")
    if isinstance(k, bool) or not isinstance(k, int):
        text = str(k).strip()
        if not re.fullmatch(r"[+-]?\d+", text):
            raise RecsqlError(f"metric {spec.name!r}: cutoff k must be a whole number >= 1, got {k!r}")
        k = int(text)
    if k < 1:
        raise RecsqlError(f"metric {spec.name!r}: cutoff k must be >= 1, got {k}; write e.g. '{spec.name}@10'")
    return k


def _top_level(text: str):
    """Yield (index, char, depth) for the characters of ``text`` outside quotes; depth counts the
    parentheses open before the character (a closing one already counted off)."""
    depth, quote = 0, ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
            continue
        if ch in "'\"":
            quote = ch
            continue
        depth += (ch == "(") - (ch == ")")
        yield i, ch, depth


def _split_options(text: str, whole: str) -> dict[str, str]:
    """Split ``a=1,b=f(x, y)`` on top-level commas (parentheses and quotes respected)."""
    cuts = [i for i, ch, depth in _top_level(text) if ch == "," and depth == 0]
    parts = [text[a + 1:b] for a, b in zip([-1] + cuts, cuts + [len(text)])]
    options: dict[str, str] = {}
    for part in filter(str.strip, parts):
        key, sep, value = part.partition("=")
        if not sep or not key.strip().isidentifier():
            raise RecsqlError(f"metric {whole!r}: options are written name=value, got {part.strip()!r}")
        if key.strip() in options:
            raise RecsqlError(f"metric {whole!r}: option {key.strip()!r} is given twice; write it once")
        options[key.strip()] = value.strip()
    return options


_NAME_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*")


def parse_metric(text: Union[str, Metric]) -> Metric:
    """Parse ``ndcg@10`` / ``ndcg(gain=exponential)@5`` / ``r_precision`` into a :class:`Metric`."""
    if isinstance(text, Metric):
        return text
    if not isinstance(text, str):
        raise RecsqlError(f"a metric is a string like 'ndcg@10' or a recsql.Metric, got {text!r}")
    several = _foreign(text)
    if several is not None:
        if len(several) > 1:
            raise RecsqlError(f"{text.strip()!r} is {len(several)} metrics ({', '.join(m.column for m in several)}): "
                              "pass it in a list of metrics (evaluate, parse_metrics), or one cutoff at a time")
        return several[0]
    match = _NAME_RE.match(text)
    if not match:
        raise RecsqlError(f"cannot read metric {text!r}: write it as 'name@k', e.g. 'ndcg@10'")
    name, rest = match.group(1), text[match.end():]
    options: dict[str, str] = {}
    if rest.startswith("("):
        close = _matching_paren(rest, text)
        options = _split_options(rest[1:close], text)
        rest = rest[close + 1:].strip()
    resolve_name(name)
    k: str | None = None
    if rest.startswith("@"):
        k = rest[1:].strip()
        if "," in k:  # 'ndcg@10,map@5' or 'ndcg(gain=exponential)@5,10': several metrics in one string
            head = text[:len(text) - len(rest)].strip()
            each = [f"{head}@{part.strip()}" if part.strip().isdigit() else part.strip() for part in k.split(",")]
            raise RecsqlError(f"metric {text.strip()!r}: a cutoff is one whole number >= 1, not {k!r}; ask each "
                              f"metric on its own: {each!r} in Python, -m once for each on the command line")
    elif rest:
        raise RecsqlError(f"cannot read metric {text!r}: unexpected {rest!r}; write it as 'name@k'")
    metric = Metric(name, k, **options)
    metric.asked = text.strip()
    return metric


def _matching_paren(text: str, whole: str) -> int:
    """Index of the parenthesis closing the one that opens ``text``."""
    for i, ch, depth in _top_level(text):
        if ch == ")" and depth == 0:
            return i
    raise RecsqlError(f"cannot read metric {whole!r}: unbalanced parentheses")


def _foreign(text: str) -> list[Metric] | None:
    """The metrics a trec_eval or ir_measures name means (recsql/names.py), each named as asked
    (several cutoffs: as trec_eval prints them), or None when ``text`` is not such a name."""
    found = names.lookup(text, is_recsql_name)
    if found is None:
        return None
    metrics = []
    for resolved in found:
        metric = Metric(resolved.metric, resolved.k, **resolved.options)
        metric.asked = resolved.column
        metrics.append(metric)
    return metrics


def _input_fitted(metric: Metric) -> set[str]:
    """The enum options whose choices need different inputs (novelty's ``p``, the long-tail metrics'
    ``split``): the inputs given may move them when not written (recsql/compose/needs.py, fit_to_inputs),
    so written explicitly they tell two spellings apart, as a convention's options do."""
    options = metric.all_options()
    return {name for name, param in metric.spec.params.items() if param.kind == "enum" and
            len({frozenset(metric.spec.requires({**options, name: c})) for c in param.choices}) > 1}


def parse_metrics(metrics) -> list[Metric]:
    """Parse a list of names / Metric objects (a single string is one metric; trec_eval's
    ``P.5,10`` is two, ``P_5`` and ``P_10``). A metric asked twice, under any spelling (``P@10``,
    ``precision@10``, ``P_10``), is computed once, under its first spelling — unless the spellings
    fix different options explicitly (``map@5`` and ``map(denominator=min)@5`` differ under
    convention="trec"), which keeps both."""
    if isinstance(metrics, (str, Metric)):
        metrics = [metrics]
    if metrics is None or isinstance(metrics, (bytes, dict)) or not hasattr(metrics, "__iter__"):
        raise RecsqlError(f"metrics must be a metric name or a list of them, e.g. metrics=['ndcg@10', 'map@10']; "
                          f"got {metrics!r}")
    parsed: list[Metric] = []
    seen: set[tuple[Metric, frozenset[str]]] = set()
    for item in metrics:
        for metric in (_foreign(item) if isinstance(item, str) else None) or [parse_metric(item)]:
            # explicit options a convention would otherwise set make two equal metrics different
            conventional = {opt for c in CONVENTIONS.values() for opt in c.defaults.get(metric.name, {})}
            key = (metric, metric.explicit & frozenset(conventional | _input_fitted(metric)))
            named = [m for m in parsed if m.column.lower() == metric.column.lower()]
            if key in seen or any(metric == m for m in named):
                continue
            if named:  # SQL engines do not tell column names apart by case: ERR@5 and err@5 would clash
                other = next(m for m in (metric, named[0]) if str(m).lower() != m.column.lower())
                raise RecsqlError(
                    f"{named[0].column!r} ({named[0]}) and {metric.column!r} ({metric}) are different metrics whose "
                    f"names differ only in case, which SQL engines do not tell apart: ask one of them under another "
                    f"spelling, e.g. {str(other)!r} for {other.column!r}")
            seen.add(key)
            parsed.append(metric)
    if not parsed:
        raise RecsqlError("no metrics asked: pass e.g. metrics=['ndcg@10', 'map@10']")
    return parsed
