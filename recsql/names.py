"""trec_eval's and ir_measures' own measure names, and the recsql metric each one means.

A name sets the measure's *definition* (its recsql metric and the options that give the tool's
formula, written as explicit options, so a convention does not change them); the tie rule and the
population come from ``convention=`` ("trec" for trec_eval's numbers, "ir_measures" for
ir_measures'). Result columns keep the name as asked.

>>> from recsql.metrics import parse_metric, parse_metrics
>>> m = parse_metric("map_cut_10")
>>> str(m), m.column, sorted(m.explicit)
('map(denominator=relevant)@10', 'map_cut_10', ['denominator'])
>>> [str(m) for m in (parse_metric("P.10"), parse_metric("AP@10"), parse_metric("nDCG(dcg='exp-log2')@5"))]
['precision@10', 'map(denominator=relevant)@10', 'ndcg(gain=exponential)@5']
>>> [(m.column, str(m)) for m in parse_metrics(["ndcg_cut.5,10"])]
[('ndcg_cut_5', 'ndcg@5'), ('ndcg_cut_10', 'ndcg@10')]

Rules, in order (``lookup``):

1. A trec_eval measure with parameters, as trec_eval prints it (``P_10``) or as ``-m`` takes it
   (``P.10``, ``P.5,10``, ``set_F.0.5``). Several cutoffs are several metrics, named as trec_eval
   prints them (``P_5``, ``P_10``).
2. An ir_measures name spelled as ir_measures spells it (``AP@10``, ``Judged@10``,
   ``SetF(beta=0.5)``), parameters in its syntax.
3. Otherwise recsql's own names and aliases, in any case (``ap@10``, ``judged@10``, ``ndcg@10``).
4. Then the foreign names of rule 2 in any case (``numret``), where no recsql name is spelled so.

A spelling that is also a recsql name or alias with the same definition (``map``, ``ndcg``,
``nDCG@10``, ``P@10``, ``RR``, ``Rprec``, ``bpref``, ``set_P``, ``num_ret``, ``rbp``, ...) is
``shared``: it resolves as that recsql name (the convention fills in its options). Where the tool's
exact spelling means something else than recsql's name in another case (``AP@10``/``MAP@10`` ÷ R
against recsql's ``ap@10``/``map@10`` ÷ min(k, R); ``Judged@10`` ÷ min(k, n) against ``judged@10``
÷ k; ``ERR@10`` with grades up to 4 against ``err@10`` with the largest grade in truth), the exact
spelling is the tool's and every other case recsql's.
"""
from __future__ import annotations

import ast
import math
import re
from typing import Callable, NamedTuple

from .errors import RecsqlError
from .foreign_names import (FOREIGN_NAMES, IR_NAMES, IR_REFUSED, IRM, NDCG_TREC,  # noqa: F401 - names.*: tests, docs
                            NOT_IMPLEMENTED, TREC, TREC_NAMES, TREC_REFUSED, ForeignName)

_TREC_BY_NAME = {n.name: n for n in TREC_NAMES}
_IR_BY_NAME = {n.name: n for n in IR_NAMES}
_TREC_FAMILIES = {n.name for n in TREC_NAMES if n.cutoff == "required" or n.params}


class Resolved(NamedTuple):
    """What a foreign name means: build ``Metric(metric, k, **options)``, named ``column``."""

    metric: str
    k: int | str | None
    options: dict[str, str]
    column: str


# `P_10`, `P.10`, `P.5,10`, `set_F.0.5`, `iprec_at_recall_0.10`: a name, then `_` or `.`, then numbers
_TREC_RE = re.compile(r"^(\w+?)[._](\d[\d.,]*)$")
_TREC_ANY_PARAM_RE = re.compile(r"^(\w+?)\.(.*)$")  # `ndcg.1=0,2=1`, `rbp.p=0.8`: other -m parameters
_WORD_RE = re.compile(r"^(\w+)")


def _casefold_match(word: str, table: dict, is_recsql: Callable[[str], bool]):
    """``table[word]``, else the entry spelled like ``word`` in another case when no recsql name is."""
    if word in table:
        return table[word]
    if is_recsql(word):
        return None
    found = [v for k, v in table.items() if k.lower() == word.lower()]
    return found[0] if len(found) == 1 else None


def lookup(text: str, is_recsql: Callable[[str], bool]) -> list[Resolved] | None:
    """The metrics a foreign name means (several for ``P.5,10``), or None when ``text`` is not one
    (recsql's own syntax then reads it). Raises a RecsqlError for a foreign name recsql refuses.

    ``is_recsql(word)``: whether ``word`` is a recsql metric name or alias (any case)."""
    s = text.strip()
    match = _TREC_RE.match(s)
    if match:
        family = _family(match.group(1))
        if family is not None:
            return _trec(family, match.group(2), s)
    match = _TREC_ANY_PARAM_RE.match(s)
    if match and _family(match.group(1)) is not None:
        _trec_params_refused(_family(match.group(1)), s)
    match = _WORD_RE.match(s)
    if not match:
        return None
    word, rest = match.group(1), s[match.end():].strip()
    entry = _casefold_match(word, _IR_BY_NAME, is_recsql)
    if entry is not None:
        return _ir(entry, rest, s, is_recsql)
    for tool, table in ((TREC, TREC_REFUSED), (IRM, IR_REFUSED)):
        why = _casefold_match(word, table, is_recsql)
        if why is not None:
            raise RecsqlError(f"metric {s!r}: {_of(tool)} {word} {why}. {_LIST_HINT}")
    return None


def _of(tool: str) -> str:
    return f"{tool}'" if tool.endswith("s") else f"{tool}'s"


_LIST_HINT = "`recsql metrics` lists recsql's metrics and the trec_eval and ir_measures names it accepts"


def _family(word: str) -> str | None:
    """The trec_eval measure ``word`` names, in any case (``p`` of ``p_10``: no recsql name is
    written with ``_10`` or ``.10`` after it, so no recsql name is shadowed)."""
    known = {**{n: n for n in _TREC_BY_NAME}, **{n: n for n in TREC_REFUSED}}
    if word in known:
        return word
    found = [k for k in known if k.lower() == word.lower()]
    return found[0] if len(found) == 1 else None


def _trec(family: str, args: str, asked: str) -> list[Resolved]:
    """``P_10`` / ``P.10`` / ``P.5,10`` / ``set_F.0.5`` -> the recsql metrics."""
    if family in TREC_REFUSED:
        raise RecsqlError(f"metric {asked!r}: trec_eval's {family} {TREC_REFUSED[family]}. {_LIST_HINT}")
    entry = _TREC_BY_NAME[family]
    values = [v.strip() for v in args.split(",")]
    if entry.cutoff == "required":
        if not all(re.fullmatch(r"\d+", v) for v in values):
            raise RecsqlError(f"metric {asked!r}: trec_eval's {family} takes whole-number cutoffs "
                              f"({family}_10, {family}.10 or {family}.5,10), got {args!r}")
        ks = list(dict.fromkeys(int(v) for v in values))
        options = dict(entry.options)
        if len(ks) == 1:
            return [Resolved(entry.metric, ks[0], options, asked)]
        return [Resolved(entry.metric, k, dict(options), f"{family}_{k}") for k in ks]
    if "beta" in entry.params:  # set_F.x
        if len(values) != 1:
            raise RecsqlError(f"metric {asked!r}: trec_eval's set_F takes one parameter x (set_F.0.5), got {args!r}")
        return [Resolved(entry.metric, None, _beta(values[0], asked, "set_F.x"), asked)]
    _trec_params_refused(family, asked)
    raise AssertionError("unreachable")


_TREC_NO_PARAMS = {
    "ndcg": "trec_eval's ndcg takes gain values (ndcg.1=0,2=1), which recsql does not support; its gains are "
            "ndcg(gain=linear|exponential|binary); for a cutoff write ndcg_cut_10",
    "map": "trec_eval's map takes no cutoff: write map_cut_10 (÷ R) or recsql's map@10 (÷ min(10, R))",
    "rbp": "write rbp(p=0.8) for trec_eval's -m rbp.p=0.8 (convention='trec' gives rbp p = 0.9)",
    "recip_rank": "trec_eval's recip_rank takes no cutoff: write mrr@10 (or ir_measures' RR@10)",
}


def _trec_params_refused(family: str, asked: str) -> None:
    if family in TREC_REFUSED:
        raise RecsqlError(f"metric {asked!r}: trec_eval's {family} {TREC_REFUSED[family]}. {_LIST_HINT}")
    entry = _TREC_BY_NAME[family]
    hint = _TREC_NO_PARAMS.get(family) or (
        f"write trec_eval's {family} as {entry.written}" if family in _TREC_FAMILIES
        else f"trec_eval's {family} takes no parameters here: write {family}")
    raise RecsqlError(f"metric {asked!r}: {hint}")


def _beta(text: object, asked: str, form: str) -> dict[str, str]:
    """trec_eval's set_F parameter x (ir_measures' SetF beta) weighs R x times P: x = β²."""
    try:
        x = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        x = float("nan")
    if not (x > 0 and math.isfinite(x)):
        raise RecsqlError(f"metric {asked!r}: {form} must be a number > 0, got {text!r}")
    return {"beta": repr(math.sqrt(x))}


# ------------------------------------------------------------------ ir_measures

def _ir_call(rest: str, asked: str) -> tuple[dict[str, object] | None, str | None]:
    """``(params)@k`` -> ({param: value} or None when unreadable as ir_measures' syntax, k text)."""
    params_text, k = "", None
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                params_text, rest = rest[1:i], rest[i + 1:].strip()
                break
        else:
            return None, None
    if rest.startswith("@"):
        k = rest[1:].strip()
    elif rest:
        return None, None
    if not params_text.strip():
        return {}, k
    try:
        call = ast.parse(f"_({params_text})", mode="eval").body
    except SyntaxError:
        return None, k
    if not isinstance(call, ast.Call) or call.args or any(kw.arg is None for kw in call.keywords):
        return None, k
    params: dict[str, object] = {}
    for kw in call.keywords:
        node = kw.value
        if isinstance(node, ast.Name):  # dcg=log2 unquoted: the word
            params[kw.arg] = node.id
            continue
        try:
            params[kw.arg] = ast.literal_eval(node)
        except ValueError:
            params[kw.arg] = _Unreadable(ast.get_source_segment(f"_({params_text})", node) or "?")
    return params, k


class _Unreadable(str):
    """A parameter value that is not a Python literal (a recsql option value, or a mistake)."""


def _ir(entry: ForeignName, rest: str, asked: str, is_recsql: Callable[[str], bool]) -> list[Resolved] | None:
    params, k = _ir_call(rest, asked)
    if entry.shared and (params is None or not set(params) & set(entry.params)):
        return None  # recsql's own name, with recsql's options if any: recsql's syntax reads it
    if params is None:
        raise RecsqlError(f"cannot read metric {asked!r}: write ir_measures' parameters as Python literals, "
                          f"e.g. nDCG(dcg='exp-log2')@10 or SetF(beta=0.5)")
    if "cutoff" in params:
        if k is not None:
            raise RecsqlError(f"metric {asked!r}: give the cutoff once, as @k or cutoff=")
        k = str(params.pop("cutoff"))
    unknown = sorted(set(params) - set(entry.params))
    if unknown:
        valid = ", ".join(p for p in entry.params if p != "cutoff") or "none"
        raise RecsqlError(f"metric {asked!r}: ir_measures' {entry.name} has no parameter {unknown[0]!r} that "
                          f"recsql reads; its parameters: {valid}. recsql's options go on recsql's name: "
                          f"{entry.metric}({unknown[0]}=...)")
    if entry.cutoff == "required" and k is None:
        raise RecsqlError(f"metric {asked!r}: ir_measures' {entry.name} needs a cutoff here: write {entry.name}@10"
                          + (" (k >= the longest list for the whole list)" if entry.name == "Judged" else ""))
    if entry.cutoff == "none" and k is not None:
        raise RecsqlError(f"metric {asked!r}: ir_measures' {entry.name} takes no cutoff; write {entry.name}")
    options = dict(entry.options)
    if entry.metric == "ndcg" and params:  # the name with its parameters: trec_eval's nDCG, explicit
        options.update(NDCG_TREC)
    for key, value in params.items():
        options.update(_ir_param(entry, key, value, asked, _without(entry, params, key, k)))
    return [Resolved(entry.metric, k, options, asked)]


def _without(entry: ForeignName, params: dict[str, object], drop: str, k: str | None) -> str:
    """The name written again without parameter ``drop`` (for error messages)."""
    rest = ", ".join(f"{p}={v!r}" for p, v in params.items() if p != drop)
    return f"{entry.name}{f'({rest})' if rest else ''}{'' if k is None else f'@{k}'}"


def _ir_param(entry: ForeignName, key: str, value: object, asked: str, plain: str) -> dict[str, str]:
    """One ir_measures parameter -> recsql options, or a RecsqlError saying what to write."""
    if isinstance(value, _Unreadable):
        raise RecsqlError(f"metric {asked!r}: ir_measures' parameter {key}={value} is not a literal; "
                          f"write e.g. nDCG(dcg='exp-log2')@10")
    if key == "rel":
        instead = "NumRelRet" if entry.name == "NumRet" else plain
        raise RecsqlError(
            f"metric {asked!r}: ir_measures' rel= (a relevance level for this measure alone) is not supported: "
            f"recsql has one relevance threshold per evaluation. Write {instead} and pass threshold={value!r} "
            f"(CLI --threshold {value}); ir_measures' default rel=1 is recsql's default threshold")
    if key == "judged_only":
        if value is False:
            return {}
        raise RecsqlError(f"metric {asked!r}: ir_measures' judged_only=True (rank only the judged documents) is "
                          f"not supported; drop the unjudged rows from the recommendations first, or write {plain}")
    if key == "relative":
        if value is False:
            return {}
        raise RecsqlError(f"metric {asked!r}: ir_measures' SetP(relative=True) (SetRelP) {NOT_IMPLEMENTED}")
    if key == "dcg":
        gains = {"log2": "linear", "exp-log2": "exponential"}
        if value not in gains:
            raise RecsqlError(f"metric {asked!r}: ir_measures' nDCG dcg= is 'log2' or 'exp-log2', got {value!r}")
        return {"gain": gains[str(value)]}
    if key == "gains":
        raise RecsqlError(f"metric {asked!r}: ir_measures' custom gains= mapping is not supported; recsql's gains are "
                          f"nDCG (gain = relevance), nDCG(dcg='exp-log2') (2^rel − 1) or ndcg(gain=binary)")
    if key in ("alpha", "beta") and entry.metric in ("alpha_ndcg", "alpha_dcg", "nrbp"):
        return {key: repr(float(value))}
    if key == "beta":
        return _beta(value, asked, "SetF beta")
    raise AssertionError(key)


# ------------------------------------------------------------------ listing

def listing() -> str:
    """The foreign names as text, for ``recsql metrics``."""
    lines = ["", "trec_eval and ir_measures names (the definition only: pass convention='trec' or 'ir_measures' "
                 "for the tool's ties and population):"]
    for tool, names in ((TREC, TREC_NAMES), (IRM, IR_NAMES)):
        lines.append(f"  {tool}:")
        for n in names:
            lines.append(f"    {n.written:<26} = {n.means:<40} {n.note}")
    lines.append("  refused, with what to write instead: " + ", ".join(sorted(TREC_REFUSED) + sorted(IR_REFUSED)))
    return "\n".join(lines)


def spelled(name: str, is_recsql_name: Callable[[str], bool], colliding_only: bool = False) -> str | None:
    """What the bare word ``name`` is, when it is a trec_eval or ir_measures spelling that is not
    one of recsql's names with the same meaning (for error messages); ``colliding_only``: only the
    exact spellings whose other cases are recsql's names with another meaning (AP, Judged, ...).
    ``is_recsql_name(word)``: whether ``word`` is a recsql metric name or alias (any case), as
    :func:`lookup`'s ``is_recsql``."""
    entry = _IR_BY_NAME.get(name)
    if entry is not None and not entry.shared and (is_recsql_name(name) or not colliding_only):
        return f"ir_measures' name for {entry.means} ({entry.note})"
    for tool, table in ((IRM, IR_REFUSED), (TREC, TREC_REFUSED)):
        if name in table and (is_recsql_name(name) or not colliding_only):
            return f"{_of(tool)} {name} — {table[name]}"
    if colliding_only:
        return None
    match = _TREC_RE.match(name)
    trec = _TREC_BY_NAME.get(name) or (_TREC_BY_NAME.get(_family(match.group(1)) or "") if match else None)
    if trec is not None and not trec.shared and not is_recsql_name(name):
        return f"trec_eval's {trec.written} = {trec.means}"
    return None
