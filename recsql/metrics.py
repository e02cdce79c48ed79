"""The metric registry (read from the SQL templates' headers) and metric names.

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

import difflib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Union

from . import names
from .errors import RecsqlError
from .templates import read_template, template_names

# "name kind = default", optionally followed by "(what the default means)": required for `auto`.
# A number may say the values it takes as an interval: "p number in (0, 1) = 0.8".
_PARAM_RE = re.compile(r"^(\w+)\s+(enum\(([^)]*)\)|discount|number(?:\s+in\s+([\[(][^\])]*[\])]))?)"
                       r"\s*=\s*(\S+)(?:\s+\((.+)\))?$")
_INTERVAL_RE = re.compile(r"^([\[(])\s*(-inf|[-+]?[\d.]+)\s*,\s*(inf|[-+]?[\d.]+)\s*([\])])$")
# the named position discounts (sql/_discounts.sql; recsql/discounts.py, which needs sqlglot, reads
# custom ones: imported only when one is given, so that the registry loads without sqlglot)
DISCOUNT_PRESETS: tuple[str, ...] = ("log2", "jarvelin")
K_RULES = ("required", "optional", "none")  # header `k:` — a cutoff is needed, allowed, or not allowed
_STAGE_RE = re.compile(r"^(\w+)(?:\s+if\s+(\w+)\s*=\s*(\w+))?$")  # "feature" or "feature if option = value"
# header `population:` — whose values the summary averages (docs/guide/metrics.md, "Beyond accuracy and user models"):
# users of the population of the ranked-rows stage (docs/guide/populations.md)
# (needs truth), users with recommendations (lists only, no truth needed), or one number per run.
POPULATION_KINDS = ("truth", "lists", "global")


@dataclass(frozen=True)
class Param:
    """One option of a metric: an enum of words, a position discount, or a number (whose default
    may be the word ``auto``: a value the query derives from the data)."""

    name: str
    kind: str  # "enum" | "discount" | "number"
    default: str
    choices: tuple[str, ...] = ()
    meaning: str = ""  # what the default means, from the header (`auto`: the value it stands for)
    interval: str = "(-inf, inf)"  # the values a number takes, as the header writes them

    def allows(self, value: float) -> bool:
        """Whether a number lies in the option's interval."""
        low_side, low, high, high_side = _INTERVAL_RE.match(self.interval).groups()  # type: ignore[union-attr]
        low_ok = value >= float(low) if low_side == "[" else value > float(low)
        high_ok = value <= float(high) if high_side == "]" else value < float(high)
        return low_ok and high_ok

    def normalize(self, metric: str, value: object) -> str:
        """Validate a user-given value and return its canonical text."""
        text = str(value).strip()
        if self.kind == "discount":
            from .discounts import normalize_discount
            return normalize_discount(text, metric)
        if self.kind == "number":
            return _number(text, metric, self)
        if text not in self.choices:
            raise RecsqlError(
                f"metric {metric!r}: option {self.name}={text!r} is not valid; "
                f"choose one of {', '.join(self.choices)}{_suggest(text, self.choices)}"
            )
        return text


def _number(text: str, metric: str, param: Param) -> str:
    if text == param.default == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value != value or value in (float("inf"), float("-inf")):
        auto = " or 'auto'" if param.default == "auto" else ""
        raise RecsqlError(f"metric {metric!r}: option {param.name}={text!r} must be a finite number{auto}")
    if not param.allows(value):
        raise RecsqlError(f"metric {metric!r}: option {param.name}={text!r} is out of range; it takes a number "
                          f"in {param.interval}")
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


@dataclass(frozen=True)
class MetricSpec:
    """What a template's header says: name, aliases, cutoff, options, stage features, citation."""

    name: str
    aliases: tuple[str, ...]
    k_rule: str  # "required" | "optional" (no cutoff = the whole list) | "none"
    params: dict[str, Param]
    stage: tuple[tuple[str, str, str], ...]  # (feature, option, value that switches it on)
    needs: tuple[str, ...]  # every input or column the metric may need (names of ``requires``)
    formula: str
    cite: str
    sql: str = field(repr=False)
    summary: str = "mean"  # how the summary aggregates per-user values: mean, or sum (counts)
    population: str = "truth"  # truth | lists | global (POPULATION_KINDS)
    full_list: bool = False  # header `list: full`: the metric reads the list beyond its cutoff (accuracy)
    ties: str = ""  # header `ties: average [unless opt = value]`: the metric supports ties="average"
    needs_when: tuple[tuple[str, str | None, str | None], ...] = ()  # (need, option, value that makes it needed)
    # header `range: [0, 1]` or `range: [0, 1] if opt = v; (-inf, inf)`: (interval, option, value), first match wins
    ranges: tuple[tuple[str, str | None, str | None], ...] = ()

    def value_range(self, options: dict[str, str]) -> str:
        """The interval every per-user and summary value lies in (NULL aside) with these options
        (defaults filled in), as the header's `range:` line declares it."""
        return next((r for r, opt, value in self.ranges if opt is None or options.get(opt) == value), "(-inf, inf)")

    def supports_ties(self, rule: str, options: dict[str, str]) -> bool:
        """Whether the metric is exact under tie rule ``rule`` with these options (the
        deterministic rules always are; ``average`` where the header says so)."""
        if rule != "average":
            return True
        word, _, unless = self.ties.partition(" unless ")
        if word != "average":
            return False
        opt, _, value = unless.partition("=")
        return not unless or options.get(opt.strip()) != value.strip()

    @property
    def needs_k(self) -> bool:
        return self.k_rule == "required"

    def features(self, options: dict[str, str]) -> set[str]:
        """Stage features (``list_ideal``, ``slots``) this metric needs with these options."""
        return {feat for feat, opt, value in self.stage if opt is None or options.get(opt) == value}

    def requires(self, options: dict[str, str]) -> set[str]:
        """Inputs and columns needed with these options, from the header ``needs: a; b if opt = v``."""
        return {need for need, opt, value in self.needs_when if opt is None or options.get(opt) == value}

    @property
    def needs_truth(self) -> bool:
        return self.population == "truth"


def _parse_params(text: str, metric: str) -> dict[str, Param]:
    params: dict[str, Param] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        match = _PARAM_RE.match(part)
        if not match:
            raise RuntimeError(f"sql/{metric}.sql: cannot read param {part!r}")
        name, kind, choices, interval, default, meaning = match.groups()
        kind = kind.split()[0]
        if interval is not None and not _INTERVAL_RE.match(interval):
            raise RuntimeError(f"sql/{metric}.sql: param {name}: cannot read the interval {interval!r}")
        if default == "auto" and not meaning:
            raise RuntimeError(f"sql/{metric}.sql: param {name} defaults to auto; say what it means: "
                               f"'{name} {kind} = auto (the ...)'")
        if kind == "discount":
            params[name] = Param(name, "discount", default, tuple(DISCOUNT_PRESETS), meaning or "")
        elif kind == "number":
            params[name] = Param(name, "number", default, meaning=meaning or "",
                                 interval=interval or "(-inf, inf)")
        else:
            params[name] = Param(name, "enum", default, tuple(c.strip() for c in choices.split(",")), meaning or "")
    return params


def _conditions(text: str) -> tuple[tuple[str, str | None, str | None], ...]:
    """``a; b if opt = v`` (also ``a, b``) -> ((a, None, None), (b, opt, v))."""
    parts = [p.strip() for p in re.split(r"[;,]", text) if p.strip()]
    return tuple(_STAGE_RE.match(p).groups() for p in parts)  # type: ignore[union-attr]


_RANGE_RE = re.compile(r"^([\[(][^\])]*[\])])(?:\s+if\s+(\w+)\s*=\s*(\w+))?$")  # "[0, 1]" or "[0, 1] if opt = v"


def _ranges(text: str, metric: str) -> tuple[tuple[str, str | None, str | None], ...]:
    """``[0, 1] if opt = v; (-inf, inf)`` -> (("[0, 1]", opt, v), ("(-inf, inf)", None, None))."""
    found = [(_RANGE_RE.match(p.strip()), p.strip()) for p in text.split(";") if p.strip()]
    if not found or any(m is None or not _INTERVAL_RE.match(m.group(1)) for m, _ in found):
        raise RuntimeError(f"sql/{metric}.sql: header `range:` must give the values' interval, e.g. "
                           f"'-- range: [0, 1]' or '-- range: [0, 1] if opt = v; [0, inf)', got {text!r}")
    return tuple(m.groups() for m, _ in found)  # type: ignore[union-attr]


def _spec(name: str) -> MetricSpec:
    header, sql = read_template(name)
    stage = _conditions(header.get("stage", ""))
    k_rule = header.get("k", "required")
    if (k_rule not in K_RULES or header.get("summary", "mean") not in ("mean", "sum")
            or header.get("population", "truth") not in POPULATION_KINDS or header.get("list", "cut") not in ("cut", "full")):
        raise RuntimeError(f"sql/{name}.sql: k must be one of {K_RULES}; summary mean or sum; "
                           f"population one of {POPULATION_KINDS}; list cut or full")
    return MetricSpec(
        name=header.get("name", name),
        aliases=tuple(a.strip() for a in header.get("aliases", "").split(",") if a.strip()),
        k_rule=k_rule,
        summary=header.get("summary", "mean"),
        population=header.get("population", "truth"),
        full_list=header.get("list", "cut") == "full",
        ties=header.get("ties", ""),
        params=_parse_params(header.get("params", ""), name),
        stage=stage,
        needs=tuple(dict.fromkeys(w[0] for w in _conditions(header.get("needs", "")))),
        needs_when=_conditions(header.get("needs", "")),
        formula=header.get("formula", ""),
        cite=header.get("cite", ""),
        sql=sql,
        ranges=_ranges(header.get("range", ""), name),
    )


@lru_cache(maxsize=1)
def registry() -> dict[str, MetricSpec]:
    """Every metric, by canonical name, read from ``sql/*.sql``."""
    return {spec.name: spec for spec in map(_spec, template_names())}


def tie_averaged() -> list[str]:
    """The metrics with an exact expected value under ties='average' (some not with every option)."""
    return sorted(name for name, spec in registry().items() if spec.ties)


@lru_cache(maxsize=1)
def aliases() -> dict[str, str]:
    """Alias -> canonical name (``hr`` -> ``hit_rate``)."""
    return {alias: spec.name for spec in registry().values() for alias in spec.aliases}


def _suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def resolve_name(name: str) -> MetricSpec:
    """The spec for a metric name or alias; a :class:`RecsqlError` lists the valid names."""
    key = name.strip().lower()
    key = aliases().get(key, key)
    if key in registry():
        return registry()[key]
    foreign = names.spelled(name.strip())
    if foreign:
        raise RecsqlError(f"{name.strip()!r} is {foreign}: write it as a string (recsql.parse_metric, evaluate's "
                          "metrics); recsql.Metric takes recsql's names")
    valid = sorted(registry()) + sorted(aliases())
    raise RecsqlError(
        f"unknown metric {name!r}{_suggest(key, valid)}; valid metrics: {', '.join(sorted(registry()))}"
        f" (aliases: {', '.join(f'{a}={n}' for a, n in sorted(aliases().items()))}). "
        "trec_eval's and ir_measures' names work too (P_10, map_cut.10, AP@10, NumRet). "
        "Run `recsql metrics` for formulas, options and those names."
    )


def is_recsql_name(word: str) -> bool:
    """Whether ``word`` is a recsql metric name or alias, in any case."""
    key = word.strip().lower()
    return key in registry() or key in aliases()


class Metric:
    """A metric with its cutoff and options; hashable, comparable, printed canonically.

    >>> Metric("map", 10, denominator="relevant")
    Metric('map(denominator=relevant)@10')

    ``column`` is the name of its result column: the text the user asked for when it was parsed
    from a string ("named as asked", README "Metrics": ``P@10`` stays ``P@10``), else the canonical name.
    """

    __slots__ = ("name", "k", "options", "explicit", "asked")

    def __init__(self, name: str, k: int | None = None, **options: object) -> None:
        conflict = names.spelled(name.strip(), colliding_only=True) if isinstance(name, str) else None
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
                f"metric {spec.name!r}: unknown option {unknown[0]!r}{_suggest(unknown[0], spec.params)}; "
                f"its options are: {valid}"
            )
        normalized = {k_: spec.params[k_].normalize(spec.name, v) for k_, v in options.items()}
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
        opts = ",".join(f"{k}={v}" for k, v in self.options)
        return f"{self.name}{f'({opts})' if opts else ''}{'' if self.k is None else f'@{self.k}'}"

    def __repr__(self) -> str:
        return f"Metric({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Metric) and (self.name, self.k, self.options) == (
            other.name, other.k, other.options)

    def __hash__(self) -> int:
        return hash((self.name, self.k, self.options))


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
    k: str | None = None
    if rest.startswith("@"):
        k = rest[1:].strip()
    elif rest:
        raise RecsqlError(f"cannot read metric {text!r}: unexpected {rest!r}; write it as 'name@k'")
    resolve_name(name)
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


def parse_metrics(metrics) -> list[Metric]:
    """Parse a list of names / Metric objects (a single string is one metric; trec_eval's
    ``P.5,10`` is two, ``P_5`` and ``P_10``). A metric asked twice, under any spelling (``P@10``,
    ``precision@10``, ``P_10``), is computed once, under its first spelling — unless the spellings
    fix different options explicitly (``map@5`` and ``map(denominator=min)@5`` differ under
    convention="trec"), which keeps both."""
    from .conventions import CONVENTIONS  # noqa: PLC0415  (conventions imports this module)
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
            key = (metric, metric.explicit & frozenset(conventional))
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
