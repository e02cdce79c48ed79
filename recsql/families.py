"""The metric families: what kind of quality a metric measures, one family per metric (its SQL
header's ``family:`` line), in the order the docs' reference and the report show them.

>>> [f.key for f in FAMILIES.values()][:3], FAMILIES["fairness"].title
(['accuracy', 'user_models', 'intent_aware'], 'Fairness of exposure')
>>> of = {"coverage@10": "coverage", "ndcg@10": "accuracy", "gini@5": "coverage"}
>>> [(f.key, columns) for f, columns in grouped(["coverage@10", "ndcg@10", "gini@5"], of.get)]
[('accuracy', ['ndcg@10']), ('coverage', ['coverage@10', 'gini@5'])]

Where a metric could sit in two families, the choice and why:

- ``user_models`` is its own family rather than part of ``accuracy``: ERR, RBP and pFound score
  relevance through a model of how far a user reads (persistence, a cascade that stops at a
  satisfying item, a chance to leave), with that model's parameters, so they answer "how much
  would a reader of this model gain" rather than "how many relevant items, where". DCG and its
  relatives stay in ``accuracy``: their discount is fixed, not a reader's behaviour.
- ``intent_aware`` (α-nDCG, ERR-IA, S-recall, ...) is relevance to each of a user's intents, with
  redundancy penalised: neither plain accuracy nor a list's diversity alone.
- ``entropy`` (the spread of a list's categories) is ``diversity``, not ``calibration``: it never
  looks at the user's history, which is what calibration (``miscalibration``) compares the list with.
- ``personalization`` (how different users' lists are from each other) is ``diversity`` across
  users; ``coverage`` and ``gini`` (how much of the catalog is shown, how evenly) are ``coverage``.
- ``arp`` (average popularity of the listed items) joins APLT, ACLT and the popularity-bias
  metrics in ``long_tail`` (Abdollahpouri et al. 2019 define ARP, APLT and ACLT together);
  ``pop_rsp`` and ``pop_reo`` split the items by popularity (short head, long tail), so they are
  ``long_tail`` too, while ``fairness`` compares groups of items given as categories (providers,
  genres) and the spread of exposure over the catalog weighted by position (exposure Gini, entropy).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Family:
    """A family of metrics: its key (the header's word), its title and what its metrics measure."""

    key: str
    title: str
    description: str


FAMILIES: dict[str, Family] = {f.key: f for f in (
    Family("accuracy", "Accuracy",
           "How many of the relevant items the list holds and how high it ranks them, against the truth."),
    Family("user_models", "User models",
           "The relevance a reader gains from the list under a model of how far they read (persistence, a "
           "cascade that stops at a satisfying item)."),
    Family("intent_aware", "Intent-aware",
           "Relevance to each of a user's intents, a list that covers more of them and repeats fewer scoring "
           "higher."),
    Family("revenue", "Revenue",
           "Accuracy weighted by the items' prices: the share of the money listed or relevant that the hits "
           "bring."),
    Family("novelty", "Novelty and serendipity",
           "How unfamiliar the listed items are: how rarely they were seen, or how far from an expected "
           "(obvious) list, relevant or not."),
    Family("diversity", "Diversity",
           "How different the items of a list are from each other, and how different users' lists are."),
    Family("calibration", "Calibration",
           "How far a list's categories are from the shares of the user's own history."),
    Family("coverage", "Catalog coverage",
           "How much of the catalog the lists show, and how evenly their exposure is spread over it."),
    Family("long_tail", "Long tail and popularity bias",
           "How popular the listed items are: the share of the long tail in the lists, and whether the "
           "short head is favoured beyond its merit."),
    Family("fairness", "Fairness of exposure",
           "How the attention the positions give is shared among groups of items, or over the catalog's "
           "items."),
    Family("run_agreement", "Run agreement",
           "How much a run's lists agree with a reference run's (say the model in production)."),
    Family("off_policy", "Off-policy estimates from logs",
           "What the run's lists would have earned on logged traffic, estimated from a logging policy's "
           "impressions, propensities and rewards (and a reward model), with the weights' diagnostics."),
)}


def grouped(items: Iterable[T], family: Callable[[T], str]) -> list[tuple[Family, list[T]]]:
    """``items`` by family, in the families' order, each family's items in their own order; a family
    without items is left out. ``family`` gives an item's family key."""
    found: dict[str, list[T]] = {}
    for item in items:
        found.setdefault(family(item), []).append(item)
    return [(f, found[key]) for key, f in FAMILIES.items() if key in found]
