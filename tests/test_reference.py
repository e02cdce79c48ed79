"""Self-test of the reference oracle: expected values worked out by hand (or taken from the worked
examples, fixtures/worked/seeds.json)."""
from __future__ import annotations

import math

import pytest

from support.reference import mean, reference

L2 = math.log2


def ranked(user, items):
    """Recs for one user in the given order (score descending)."""
    return [{"user_id": user, "item_id": it, "score": float(len(items) - i)} for i, it in enumerate(items)]


def judged(user, rels):
    """Truth rows from {item: relevance}."""
    return [{"user_id": user, "item_id": it, "relevance": r} for it, r in rels.items()]


# u1 list a b c d; truth a, c, x relevant (R = 3)
RECS = ranked("u1", ["a", "b", "c", "d"])
TRUTH = [{"user_id": "u1", "item_id": it} for it in ["a", "c", "x"]]  # relevance missing -> 1


@pytest.mark.parametrize("denominator, k, expected", [
    ("min", 4, (1 / 1 + 2 / 3) / 3),
    ("relevant", 4, (1 / 1 + 2 / 3) / 3),
    ("hits", 4, (1 / 1 + 2 / 3) / 2),
    ("k", 4, (1 / 1 + 2 / 3) / 4),
    ("min", 2, (1 / 1) / 2),       # D = min(2, 3)
    ("relevant", 2, (1 / 1) / 3),
    ("hits", 2, (1 / 1) / 1),
    ("k", 2, (1 / 1) / 2),
])
def test_map_denominators(denominator, k, expected):
    got = reference(RECS, TRUTH, "map", k, {"denominator": denominator})
    assert got == {"u1": pytest.approx(expected)}


def test_map_default_and_alias():
    assert reference(RECS, TRUTH, "ap", 4) == {"u1": pytest.approx((1 + 2 / 3) / 3)}


def test_simple_metrics():
    def one(name, k, options=None):
        return reference(RECS, TRUTH, name, k, options)["u1"]
    assert one("hit_rate", 1) == 1.0
    assert one("precision", 4) == pytest.approx(2 / 4)
    assert one("precision", 10) == pytest.approx(2 / 10)
    assert one("precision", 10, {"denominator": "list"}) == pytest.approx(2 / 4)
    assert one("recall", 4) == pytest.approx(2 / 3)
    p, r = 2 / 4, 2 / 3
    assert one("f1", 4) == pytest.approx(2 * p * r / (p + r))
    assert one("mrr", 4) == 1.0
    assert one("r_precision", None) == pytest.approx(2 / 3)  # top R = 3: a, b, c


# graded: a=3, c=1, x=2, y=0 (R = 3 at threshold 1); list a b c d (b, d unjudged)
GRADED = judged("u1", {"a": 3, "c": 1, "x": 2, "y": 0})


@pytest.mark.parametrize("name, k, options, expected", [
    ("cg", 4, {}, 3 + 0 + 1 + 0),
    ("cg", 4, {"gain": "exponential"}, 7 + 0 + 1 + 0),
    ("dcg", 3, {}, 3 / L2(2) + 0 + 1 / L2(4)),
    ("dcg", 3, {"gain": "exponential"}, 7 / L2(2) + 1 / L2(4)),
    ("dcg", 3, {"discount": "jarvelin"}, 3 / 1 + 0 / 1 + 1 / L2(3)),
    ("dcg", 3, {"discount": lambda i: 1 / i}, 3 / 1 + 1 / 3),
    ("idcg", 3, {}, 3 / 1 + 2 / L2(3) + 1 / L2(4)),
    ("ndcg", 3, {}, (3 + 1 / 2) / (3 + 2 / L2(3) + 1 / 2)),
    ("ndcg", 3, {"ideal": "truth"}, (3 + 1 / 2) / (3 + 2 / L2(3) + 1 / 2)),
    ("ndcg", 3, {"ideal": "list"}, (3 + 1 / 2) / (3 + 1 / L2(3))),
    ("ndcg", 4, {"ideal": "binary"}, (1 + 1 / 2) / (1 + 1 / L2(3) + 1 / 2)),        # min(4, R=3) slots
    ("ndcg", 4, {"ideal": "k_slots"}, (1 + 1 / 2) / (1 + 1 / L2(3) + 1 / 2 + 1 / L2(5))),   # binary gains on the list
    ("ndcg", 3, {"gain": "exponential"}, (7 + 1 / 2) / (7 + 3 / L2(3) + 1 / 2)),
])
def test_gain_metrics(name, k, options, expected):
    assert reference(RECS, GRADED, name, k, options) == {"u1": pytest.approx(expected)}


def test_threshold_2():
    # relevant: a (3), x (2); c (1) no longer relevant, but its gain still counts
    def one(name, k, options=None):
        return reference(RECS, GRADED, name, k, options, threshold=2)["u1"]
    assert one("recall", 4) == pytest.approx(1 / 2)
    assert one("precision", 4) == pytest.approx(1 / 4)
    assert one("map", 4) == pytest.approx((1 / 1) / 2)
    assert one("ndcg", 4, {"ideal": "binary"}) == pytest.approx(1 / (1 + 1 / L2(3)))
    assert one("dcg", 3) == pytest.approx(3 + 1 / 2)
    # a user whose only truth is below threshold leaves the population
    assert reference(RECS, judged("u1", {"c": 1}), "recall", 4, threshold=2) == {}


def test_ties_broken_by_item_id():
    recs = [{"user_id": 1, "item_id": "b", "score": 1.0},
            {"user_id": 1, "item_id": "a", "score": 1.0},
            {"user_id": 1, "item_id": "c", "score": 2.0}]
    truth = [{"user_id": 1, "item_id": "a"}]
    assert reference(recs, truth, "mrr", 3) == {1: pytest.approx(1 / 2)}  # c, a, b
    assert reference(recs, truth, "precision", 2) == {1: pytest.approx(1 / 2)}
    truth_b = [{"user_id": 1, "item_id": "b"}]
    assert reference(recs, truth_b, "hit_rate", 2) == {1: 0.0}


def test_rank_column_renumbered():
    # ranks with a tie and gaps: c(2), then a(5) and b(5) tied -> a before b; positions 1, 2, 3
    recs = [{"user_id": 1, "item_id": "b", "rank": 5},
            {"user_id": 1, "item_id": "a", "rank": 5},
            {"user_id": 1, "item_id": "c", "rank": 2}]
    truth = [{"user_id": 1, "item_id": "b"}]
    assert reference(recs, truth, "mrr", 10, use_rank=True) == {1: pytest.approx(1 / 3)}
    assert reference(recs, truth, "dcg", 10, use_rank=True) == {1: pytest.approx(1 / L2(4))}


def test_population():
    recs = RECS + ranked("u3", ["a"])              # u3: recs, but no truth -> never counted
    truth = TRUTH + [{"user_id": "u2", "item_id": "a"}]  # u2: truth, but no recs
    got = reference(recs, truth, "recall", 4)
    assert got == {"u1": pytest.approx(2 / 3), "u2": 0.0}
    assert mean(got) == pytest.approx((2 / 3 + 0) / 2)
    for name in ["hit_rate", "precision", "map", "mrr", "ndcg", "r_precision", "f1"]:
        assert reference(recs, truth, name, None if name == "r_precision" else 4)["u2"] == 0.0
    inter = reference(recs, truth, "recall", 4, population="intersection")
    assert inter == {"u1": pytest.approx(2 / 3)}
    assert mean(reference([], [], "recall", 4)) is None


def test_money_seed_001():
    rec = [143, 156, 1134, 991, 27, 1543, 3345, 533, 11, 43]
    prices = dict(zip(rec, [400, 60, 40, 40, 90, 13, 18, 24, 120, 140]))
    prices.update({521: 301, 32: 202})
    truth = [{"user_id": 0, "item_id": it} for it in [521, 32, 143, 991]]
    recs = ranked(0, rec)
    got = reference(recs, truth, "money_precision", 5, items=prices)[0]
    assert got == pytest.approx((400 + 40) / (400 + 60 + 40 + 40 + 90)) and got == pytest.approx(0.6984126984126984)
    got = reference(recs, truth, "money_recall", 10, items=prices)[0]
    assert got == pytest.approx((400 + 40) / (301 + 202 + 400 + 40)) and got == pytest.approx(0.46659597030752914)
    assert reference(recs, truth, "precision", 5)[0] == pytest.approx(0.4)
    assert reference(recs, truth, "recall", 3)[0] == pytest.approx(0.25)


def binary_lists(lists):
    """Seed 000/004 style: one user per 0/1 list; item j of user u relevant iff lists[u][j]."""
    recs, truth = [], []
    for u, rels in enumerate(lists):
        recs += ranked(u, list(range(len(rels))))
        truth += [{"user_id": u, "item_id": j, "relevance": r} for j, r in enumerate(rels) if r]
    return recs, truth


def test_spec_worked_examples():
    recs, truth = binary_lists([[0, 0, 1, 0, 1], [1, 0, 0, 0, 0], [0, 0, 0, 1, 0]])
    assert mean(reference(recs, truth, "mrr", 5)) == pytest.approx(0.5277777777777778)
    assert mean(reference(recs, truth, "map", 5, {"denominator": "hits"})) == pytest.approx(0.5388888888888889)
    assert mean(reference(recs, truth, "ndcg", 5, {"ideal": "list"})) == pytest.approx(0.6581492890751395)
    assert reference(recs, truth, "dcg", 5)[0] == pytest.approx(0.8868528072345416)

    recs, truth = binary_lists([[0, 0, 1], [0, 1, 0], [1, 0, 0]])
    assert mean(reference(recs, truth, "mrr", 3)) == pytest.approx(0.611111111111111)

    recs = ranked(0, list(range(6)))
    truth = judged(0, dict(enumerate([3, 2, 3, 0, 1, 2])))
    assert reference(recs, truth, "dcg", 2)[0] == pytest.approx(4.2618595071429155)
    assert reference(recs, truth, "dcg", 3)[0] == pytest.approx(5.7618595071429155)
    assert reference(recs, truth, "ndcg", 3)[0] == pytest.approx(0.9777813616305049)

    recs = ranked(0, [2, 5, 7, 4, 11, 9, 8, 10, 12, 3])
    truth = [{"user_id": 0, "item_id": it} for it in [1, 3, 5, 7, 9, 11]]
    assert reference(recs, truth, "map", 8, {"denominator": "hits"})[0] == pytest.approx(0.6083333333333333)
    disc = lambda i: 1.0 / (i if i <= 2 else L2(i))  # noqa: E731
    got = reference(recs, truth, "ndcg", 5, {"discount": disc, "ideal": "k_slots"})[0]
    assert got == pytest.approx(0.510061109328546)

    recs = ranked(0, ["A", "C", "B", "E", "F"])
    truth = [{"user_id": 0, "item_id": it} for it in "ABCDE"]
    assert reference(recs, truth, "recall", 5)[0] == pytest.approx(0.8)
    assert reference(recs, truth, "precision", 5)[0] == pytest.approx(0.8)

    ratings = ranked(0, list(range(5)))
    truth = judged(0, dict(enumerate([5, 3, 2, 1, 2])))
    assert reference(ratings, truth, "cg", 5)[0] == pytest.approx(13)
    assert reference(ratings, truth, "dcg", 5, {"gain": "exponential"})[0] == pytest.approx(38.50774325477722)


def test_errors():
    with pytest.raises(ValueError):
        reference(RECS + RECS[:1], TRUTH, "recall", 4)
    with pytest.raises(ValueError):
        reference(RECS, TRUTH, "map", 4, {"denominator_typo": "k"})
