"""What the ranked-rows stage is built for: the optional parts (features) the asked metrics' headers name,
each with what it is built for (a cutoff, a cascade's grades, an intent-aware depth), and the cutoffs the
lists and the ideal order are cut at. :func:`recsql.compose.stage.build_stage` keeps the parts named here.
"""

from __future__ import annotations

from ..errors import RecsqlError
from ..metrics import Metric
from .intents import MAX_IDEAL_K
from .plan import MAX_SLOTS

ATTENTION = ("attention", "attention_groups")  # features keyed by (position weight, patience, cutoff)


def _feature_key(feature: str, metric: Metric) -> object:
    """What a feature is built for: the metric's cutoff, or for cascades (metric, max_grade)."""
    if feature == "cascade":
        return metric.name, metric.all_options().get("max_grade", "auto")
    if feature in ("intent_depths", "intent_ideal"):
        return float(metric.all_options()["alpha"]), metric.k
    if feature == "category_shares":
        options = metric.all_options()
        weight = options.get("weight", "geometric")
        return metric.k, weight, float(options.get("patience", 1)) if weight == "geometric" else 1.0
    if feature == "expected_exposure":
        options = metric.all_options()
        return options["model"], float(options["patience"]), float(options["utility"]) if options["model"] == "gerr" \
            else 0.0, metric.k
    if feature in ATTENTION:
        options = metric.all_options()
        weight = options.get("weight", "log")
        return weight, float(options["patience"]) if weight == "geometric" else 0.0, metric.k
    return metric.k or 0


def largest_cutoff(metrics: list[Metric]) -> int | None:
    """The cutoff a list is cut at for these metrics (None: the whole list)."""
    if any(m.k is None or m.spec.full_list for m in metrics):
        return None
    return max((m.k for m in metrics), default=1)


def stage_features(metrics: list[Metric]) -> dict[str, set]:
    """The optional parts of the stage these metrics need, each with what it is built for; a metric
    whose part cannot be built (an ideal order cut at no k, too many slots) raises."""
    features: dict[str, set] = {}
    for m in metrics:
        if m.k is None and m.spec.features(m.all_options()) & {"list_ideal", "slots"}:
            raise RecsqlError(f"metric {str(m)!r} needs a cutoff with these options (its ideal order is cut at k): "
                              f"write it as '{m}@10'")
        for feat in m.spec.features(m.all_options()):
            features.setdefault(feat, set()).add(_feature_key(feat, m))
    if max(features.get("slots", {0})) > MAX_SLOTS:
        raise RecsqlError(f"ideal=k_slots supports k <= {MAX_SLOTS} (its ideal positions are generated in SQL); "
                          f"got k = {max(features['slots'])}")
    for feature, limit, why in (("intent_ideal", MAX_IDEAL_K, "alpha_ndcg, nerr_ia and nnrbp support k <= {} (their greedy "
                                                           "ideal list is unrolled in SQL, one step per position)"),
                                ("intent_depths", MAX_SLOTS, "the intent-aware metrics support k <= {} (their "
                                                             "normalisers' positions are generated in SQL)")):
        largest = max((k for _, k in features.get(feature, ())), default=0)
        if largest > limit:
            raise RecsqlError(f"{why.format(limit)}; got k = {largest}: ask a smaller cutoff")
    if max(features.get("agreement", {0})) > MAX_SLOTS:
        raise RecsqlError(f"rbo supports k <= {MAX_SLOTS} (its depths are generated in SQL); "
                          f"got k = {max(features['agreement'])}")
    return features


def ideal_cutoff(metrics: list[Metric], features: dict) -> int | None:
    """How many positions of each user's truth order the metrics read (None: all of them): the
    largest cutoff, unless a metric has none or reads every truth row (stage feature truth_rows)."""
    return None if "truth_rows" in features else largest_cutoff(metrics)
