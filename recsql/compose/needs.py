"""What the metrics need against what was given: metric variants fitted to the inputs, clear
errors naming the missing input, and each metric's population and ranking view.
"""

from __future__ import annotations

from sqlglot import exp

from ..conventions import measure_rule
from ..errors import RecsqlError
from ..metrics import Metric, registry
from ..trees import nodes, parse
from .plan import (INTENT_POPULATION_SQL, MAIN_LIST_FEATURES, METRIC_POPULATION_SQL, POPULATION_SQL, SECOND_SRC, TIES,
                   Plan, View)


# What each need of a metric header (`needs:`) requires: one of these inputs, and the fix when none is given.
_REQUIREMENTS: dict[str, tuple[set[str], str]] = {
    "price": ({"items"}, "needs item prices: pass items= with columns {item} and {price}"),
    "probability": ({"items"}, "needs item probabilities: pass items= with columns {item} and {probability}"),
    "category": ({"items"}, "needs item categories: pass items= with columns {item} and {category}"),
    "features": ({"items", "item_features"}, "needs item feature vectors: pass items= with an array column {features}, "
                                             "or item_features= with rows ({item}, {feature}, {value})"),
    "interactions": ({"interactions"}, "needs training interactions: pass interactions= with columns {user} and {item}"),
    "expected_recs": ({"expected_recs"}, "needs expected_recs: pass expected_recs= (another recommender's lists, columns like recs)"),
    "intents": ({"intents"}, "needs judgments per intent: pass intents= with columns {user}, {item}, {intent} and "
                             "optionally relevance (rows: user, item, intent, grade; a grade >= 1 is relevant)"),
    "logs": ({"logs"}, "needs logged impressions: pass logs= with columns {user} (the context), {item} (the item "
                       "shown), {position} (optional: 1 for every row when absent), {propensity} (the logging "
                       "policy's probability of that item there, in (0, 1]) and {reward}"),
    # the slate estimators' logged propensities of a slate: columns of logs, "given" when their option names one
    "slate_propensity": ({"slate_propensity"}, "needs each logged slate's joint propensity, the logging policy's "
                                               "probability of the whole slate (the same on each of its rows): pass "
                                               "slate_propensity_col='<column>' naming that column of logs"),
    "cascade_propensity": ({"cascade_propensity"}, "needs the logging policy's cascade propensity of each logged row, "
                                                   "its probability of the slate's items at positions 1..k on the row "
                                                   "of position k: pass cascade_propensity_col='<column>' naming that "
                                                   "column of logs"),
    "reward_model": ({"reward_model"}, "needs a reward model: pass reward_model= with columns {user}, {item} and "
                                       "{reward} (the predicted reward of each logged and recommended item)"),
    "truth": ({"truth"}, "needs truth (relevance judgments): pass truth= with columns {user} and {item}"),
    # given as the pseudo-input "head_col": items= and head_col= both given (given_roles)
    "head": ({"head_col"}, "needs the items' head flags (split=items): pass items= with columns {item} and a head flag "
                           "(true/false or 1/0), and name that column: head_col="),
    "interactions_or_expected_recs": ({"interactions", "expected_recs"}, "needs expected_recs= (another recommender's lists) or "
                                 "interactions= (its k most popular items are then the expected lists)"),
}


# Needs given only by an option that names their column (head_col): giving it chooses, for the options the user
# did not write, the choice that reads it (the long-tail metrics' split=items), whatever else is given.
_CHOSEN_BY_OPTION = frozenset({"head"})

# Options that mean nothing under another option's choice: (option, choice) -> {option: why}; written
# explicitly, such an option is refused rather than ignored.
_IDLE_OPTIONS: dict[tuple[str, str], dict[str, str]] = {
    ("split", "items"): {"head": "head= sizes the head by a share of interactions, but with split=items (the default "
                                 "when head_col= is given) the items' head flags decide the head"},
}


def given_roles(roles: set[str], head_col: str | None, slate_propensity_col: str | None = None,
                cascade_propensity_col: str | None = None) -> set[str]:
    """The inputs given (``roles``) and the needs an optional column meets: ``head_col`` when items carry a
    named head flag (a head_col without items is refused), ``slate_propensity`` and ``cascade_propensity``
    when logs carry those propensities."""
    if head_col and "items" not in roles:
        raise RecsqlError(f"head_col={head_col!r} names the items column flagging the head, but items= was not given: "
                          "pass items= with the item column and that flag, or leave head_col= out")
    met = {"head_col"} if head_col else set()
    if "logs" in roles:
        met |= {need for need, column in (("slate_propensity", slate_propensity_col),
                                          ("cascade_propensity", cascade_propensity_col)) if column}
    return roles | met


def fit_to_inputs(metric: Metric, given: set[str]) -> Metric:
    """``metric`` with an enum option the user did not write moved to the first choice whose inputs
    are given, when its default's are not: novelty's ``p`` is ``interactions`` by default, and the
    items' given probability (``p=items``) when only ``items`` is given; and to the choice that reads a
    need given by naming its column (``_CHOSEN_BY_OPTION``: head_col makes the long-tail metrics'
    ``split`` ``items``). Unchanged otherwise (and :func:`check_inputs` then names what is missing)."""
    def met(options: dict[str, str]) -> bool:
        return all(_REQUIREMENTS[need][0] & given for need in metric.spec.requires(options))

    def fitted(name: str, choice: str) -> Metric:
        moved = Metric(metric.name, metric.k, **{**dict(metric.options), name: choice})
        moved.explicit, moved.asked = metric.explicit, metric.asked
        return moved

    options = metric.all_options()
    enums = [(name, param) for name, param in metric.spec.params.items()
             if param.kind == "enum" and name not in metric.explicit]
    for name, param in enums:
        for choice in param.choices:
            chosen = metric.spec.requires({**options, name: choice}) & _CHOSEN_BY_OPTION
            if chosen and met({**options, name: choice}) and choice != options[name]:
                return fitted(name, choice)
    if met(options):
        return metric
    for name, param in enums:
        for choice in param.choices:
            if met({**options, name: choice}):
                return fitted(name, choice)
    return metric


def check_inputs(metrics: list[Metric], given: set[str], columns: dict[str, str]) -> set[str]:
    """Refuse a metric whose inputs were not ``given`` (roles: truth, items, interactions, ...), naming
    the input and its columns (``columns``: user, item, price, ... -> the column names); returns the
    needs of the metrics asked."""
    names = {k: repr(v) for k, v in columns.items()}
    needed: set[str] = set()
    for m in metrics:
        options = m.all_options()
        for (option, choice), idle in _IDLE_OPTIONS.items():
            for name in sorted(set(idle) & m.explicit) if options.get(option) == choice else []:
                raise RecsqlError(f"metric {str(m)!r}: {idle[name]}; drop {name}=, or write {option}=interactions to "
                                  f"split by the share of interactions ({name}= then sizes it)")
        if m.spec.needs_truth and "truth" not in given:
            raise RecsqlError(f"metric {str(m)!r} needs truth (relevance judgments): pass truth=; only "
                              f"{', '.join(sorted(n for n, s in registry().items() if not s.needs_truth))} work without it")
        for need in m.spec.requires(m.all_options()):
            inputs, fix = _REQUIREMENTS[need]
            if not inputs & given:
                raise RecsqlError(f"metric {str(m)!r} {fix.format(**names)}{_alternatives(m, given, names)}")
            needed.add(need)
    return needed


def _alternatives(metric: Metric, given: set[str], names: dict[str, str]) -> str:
    """The other choices of the options the user did not write that need other inputs, each with
    what it needs (``; or write p=items, which needs item probabilities: ...``)."""
    options = metric.all_options()
    mine = metric.spec.requires(options)
    out = []
    for name, param in metric.spec.params.items():
        if param.kind != "enum" or name in metric.explicit:
            continue
        for choice in param.choices:
            other = metric.spec.requires({**options, name: choice})
            missing = sorted(n for n in other if not _REQUIREMENTS[n][0] & given)
            if choice != options[name] and other != mine and missing:
                out.append(f"; or write {name}={choice}, which {_REQUIREMENTS[missing[0]][1].format(**names)}")
    return "".join(out)


def plan_inputs(plan: Plan) -> tuple[set[str], dict[str, str]]:
    """The roles a plan was given and its column names, for :func:`check_inputs`."""
    given = given_roles({role for role in ("truth", "items", "interactions", "catalog", "expected_recs", "item_features",
                                           "intents", "logs", "reward_model") if getattr(plan, role) is not None},
                        plan.head_col, plan.slate_propensity_col, plan.cascade_propensity_col)
    return given, dict(item=plan.item_col, user=plan.user_col, price=plan.price_col, probability=plan.probability_col,
                       category=plan.category_col, features=plan.features_col, feature=plan.feature_col,
                       value=plan.value_col, intent=plan.intent_col, position=plan.position_col or "position",
                       propensity=plan.propensity_col, reward=plan.reward_col)


def metric_population(plan: Plan, metric: Metric) -> str:
    """Whom ``metric`` averages over: ``lists`` or ``global`` by its kind; a truth metric's population is
    its measure rule's (a convention's per-measure exception) or else the plan's, and so is an intent-aware
    metric's (``relevant``, ``judged``, ``intersection``, read on intents as on truth)."""
    if metric.spec.population not in ("truth", "intents"):
        return metric.spec.population
    rule = measure_rule(plan.rules, metric)
    return rule.population if rule is not None and rule.population else plan.population


def population_condition(plan: Plan, metric: Metric) -> exp.Expression:
    return parse(population_sql(plan, metric))


def population_sql(plan: Plan, metric: Metric) -> str:
    """The condition on a user's flags (per-user rows) of ``metric``'s population."""
    population = metric_population(plan, metric)
    if metric.spec.population == "intents":
        return INTENT_POPULATION_SQL[population]
    return POPULATION_SQL.get(population) or METRIC_POPULATION_SQL[population]


def metric_view(plan: Plan, metric: Metric) -> View:
    """How ``metric``'s list is ranked and judged: (tie rule, negative relevance unjudged)."""
    rule = measure_rule(plan.rules, metric)
    ties = rule.ties if rule is not None and rule.ties else plan.ties
    negative = plan.negative_unjudged if rule is None or rule.negative_unjudged is None else rule.negative_unjudged
    return ties, negative


def second_view(plan: Plan, metrics: list[Metric]) -> tuple[View | None, list[Metric]]:
    """The one view other than the plan's that some metrics need (a convention whose tool computes
    them in another way: ir_measures' RR@k and Judged@k), and those metrics. They read the list
    under it from src 9 of the stage, ranked a second time: the price of a second window (or
    top-k) over the recommendations, paid only when such a metric is asked."""
    main = (plan.ties, plan.negative_unjudged)
    others = [(m, metric_view(plan, m)) for m in metrics if metric_view(plan, m) != main]
    views = list(dict.fromkeys(view for _, view in others))
    if not views:
        return None, []
    if len(views) > 1:
        raise RecsqlError(f"convention {plan.convention!r} ranks {', '.join(str(m) for m, _ in others)} in more than "
                          "one other way; ask for them in separate evaluations")
    for m, (ties, _) in others:
        if ties not in TIES or ties == "average" or m.spec.features(m.all_options()) & MAIN_LIST_FEATURES:
            raise RecsqlError(f"metric {str(m)!r} is ranked under its own tie rule ({ties}) by convention "
                              f"{plan.convention!r} and cannot be computed with these options")
    return views[0], [m for m, _ in others]


def on_second_list(tree: exp.Expression) -> exp.Expression:
    """A metric expression reading the list under the second view: ``src = 1`` -> ``src = 9``."""
    for eq in nodes(tree, exp.EQ):
        if (isinstance(eq.this, exp.Column) and eq.this.name == "src" and isinstance(eq.expression, exp.Literal)
                and eq.expression.this == "1"):
            eq.set("expression", exp.Literal.number(SECOND_SRC))
    return tree
