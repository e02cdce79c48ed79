"""The metric registry: every metric's description, read from the headers of the SQL templates
(``sql/*.sql``: name, family, aliases, cutoff, options, stage features, needs, range, formula, citation).

>>> spec = registry()["ndcg"]
>>> spec.k_rule, sorted(spec.params)[:2], resolve_name("hr").name
('optional', ['discount', 'gain'], 'hit_rate')

A metric with its cutoff and options, and the parsing of metric names: recsql/metrics.py.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import lru_cache

from . import names
from .errors import RecsqlError
from .families import FAMILIES
from .templates import read_template, template_names

# "name kind = default", optionally followed by "(what the default means)": required for `auto`.
# A discount may take one word besides: "examination discount or logs = logs".
# A number may say the values it takes as an interval: "p number in (0, 1) = 0.8".
_PARAM_RE = re.compile(r"^(\w+)\s+(enum\(([^)]*)\)|discount(?:\s+or\s+\w+)?|number(?:\s+in\s+([\[(][^\])]*[\])]))?)"
                       r"\s*=\s*(\S+)(?:\s+\((.+)\))?$")
_INTERVAL_RE = re.compile(r"^([\[(])\s*(-inf|[-+]?[\d.]+)\s*,\s*(inf|[-+]?[\d.]+)\s*([\])])$")
# the named position discounts (sql/_discounts.sql; recsql/discounts.py, which needs sqlglot, reads
# custom ones: recsql/metrics.py imports it only when one is given, so the registry loads without sqlglot)
DISCOUNT_PRESETS: tuple[str, ...] = ("log2", "jarvelin")
K_RULES = ("required", "optional", "none")  # header `k:` — a cutoff is needed, allowed, or not allowed
_STAGE_RE = re.compile(r"^(\w+)(?:\s+if\s+(\w+)\s*=\s*(\w+))?$")  # "feature" or "feature if option = value"
# header `population:` — whose values the summary averages (docs/guide/metrics.md, "Beyond accuracy and user models"):
# users of the population of the ranked-rows stage (docs/guide/populations.md)
# (needs truth), users with recommendations (lists only, no truth needed), the users of intents under
# `population=` (the intent-aware metrics: intents in the role of truth), or one number per run.
POPULATION_KINDS = ("truth", "lists", "intents", "global")


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
        """Validate a user-given number or enum value and return its canonical text (a discount is
        read by recsql/discounts.py: :class:`recsql.metrics.Metric` calls it)."""
        text = str(value).strip()
        if self.kind == "number":
            return _number(text, metric, self)
        if text not in self.choices:
            raise RecsqlError(
                f"metric {metric!r}: option {self.name}={text!r} is not valid; "
                f"choose one of {', '.join(self.choices)}{suggest(text, self.choices)}"
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
    family: str  # a key of recsql.families.FAMILIES: what kind of quality it measures
    k_rule: str  # "required" | "optional" (no cutoff = the whole list) | "none"
    params: dict[str, Param]
    stage: tuple[tuple[str, str, str], ...]  # (feature, option, value that switches it on)
    needs: tuple[str, ...]  # every input or column the metric may need (names of ``requires``)
    formula: str
    cite: str
    sql: str = field(repr=False)
    summary: str = "mean"  # how the summary aggregates per-user values: mean, or sum (counts)
    population: str = "truth"  # truth | lists | intents | global (POPULATION_KINDS)
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
        """Scored against truth: its population is truth's, or its header needs it (a global metric over
        the users with truth, pop_rsp and pop_reo)."""
        return self.population == "truth" or "truth" in self.needs


def _parse_params(text: str, metric: str) -> dict[str, Param]:
    params: dict[str, Param] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        match = _PARAM_RE.match(part)
        if not match:
            raise RuntimeError(f"sql/{metric}.sql: cannot read param {part!r}")
        name, kind, choices, interval, default, meaning = match.groups()
        kind, *extra = kind.split()  # "discount or logs": a discount, or the word after "or"
        if interval is not None and not _INTERVAL_RE.match(interval):
            raise RuntimeError(f"sql/{metric}.sql: param {name}: cannot read the interval {interval!r}")
        if default == "auto" and not meaning:
            raise RuntimeError(f"sql/{metric}.sql: param {name} defaults to auto; say what it means: "
                               f"'{name} {kind} = auto (the ...)'")
        if kind == "discount":
            params[name] = Param(name, "discount", default, (*DISCOUNT_PRESETS, *extra[1:]), meaning or "")
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


def _family(header: dict[str, str], metric: str) -> str:
    """The header's required ``family:``, one of :data:`recsql.families.FAMILIES`."""
    family = header.get("family", "")
    if family not in FAMILIES:
        found = f"`family: {family}` is not a family" if family else "the header has no `family:` line"
        raise RecsqlError(f"sql/{metric}.sql: {found}{suggest(family, FAMILIES)}; write '-- family: <one of "
                          f"{', '.join(FAMILIES)}>' (recsql/families.py)")
    return family


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
        family=_family(header, name),
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


def suggest(word: str, choices) -> str:
    """`` (did you mean 'x'?)`` for the choice closest to ``word``, or nothing."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def resolve_name(name: str) -> MetricSpec:
    """The spec for a metric name or alias; a :class:`RecsqlError` lists the valid names."""
    key = name.strip().lower()
    key = aliases().get(key, key)
    if key in registry():
        return registry()[key]
    foreign = names.spelled(name.strip(), is_recsql_name)
    if foreign:
        raise RecsqlError(f"{name.strip()!r} is {foreign}: write it as a string (recsql.parse_metric, evaluate's "
                          "metrics); recsql.Metric takes recsql's names")
    valid = sorted(registry()) + sorted(aliases())
    raise RecsqlError(
        f"unknown metric {name!r}{suggest(key, valid)}; valid metrics: {', '.join(sorted(registry()))}"
        f" (aliases: {', '.join(f'{a}={n}' for a, n in sorted(aliases().items()))}). "
        "trec_eval's and ir_measures' names work too (P_10, map_cut.10, AP@10, NumRet). "
        "Run `recsql metrics` for formulas, options and those names."
    )


def is_recsql_name(word: str) -> bool:
    """Whether ``word`` is a recsql metric name or alias, in any case."""
    key = word.strip().lower()
    return key in registry() or key in aliases()
