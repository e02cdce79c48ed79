"""The intent-aware metrics against ndeval (TREC Web track diversity), the reference tool: through
pyndeval (ndeval's C code) and through ir_measures' names, which resolve to recsql's metrics.

How the two are lined up:
- ndeval reads a run's documents by score; the run is given recsql's order (score descending, ties by
  item id) as distinct scores, so both see the same lists.
- ndeval (without -c) scores the queries of both the run and the qrels: recsql's population='intersection'
  (the users of intents with a list). ir_measures (iter_calc) reports a query of the qrels without a run
  as 0 and calc_aggregate averages over every query of the qrels: recsql's population='judged' (its
  convention's), every user of intents; population='relevant' (the default) averages over the users of
  intents with a relevant judgment, a user without a list scored 0.
- A judgment is relevant at relevance >= 1 in both (ndeval's relevance level 1, recsql's threshold).
- ndeval's alpha-DCG@1 and ERR-IA@1 are its raw sums, not normalised as at every other cutoff (up to
  |S| for a first item relevant to every intent; ndeval prints 2.0 for one relevant to two intents):
  recsql normalises at every k, so there ndeval's value is recsql's times |S| (checked below).
- ndeval supports cutoffs up to 20.
- ndeval's nNRBP is the whole list's NRBP over the whole greedy ideal list's: recsql's nnrbp@k with k the
  longest list or the most relevant items of a user, whichever is larger; where no intent has a relevant
  item ndeval divides 0 by 0 (NaN) and recsql gives 0, as for every other intent-aware metric.
"""
from __future__ import annotations

import io
import math

import ir_measures
import pandas as pd
import pyndeval
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import recsql
from support.strategies import ITEMS, USERS, recs_rows

NDEVAL = {"alpha_ndcg": "alpha-nDCG", "alpha_dcg": "alpha-DCG", "err_ia": "ERR-IA", "nerr_ia": "nERR-IA",
          "p_ia": "P-IA", "s_recall": "strec"}
WHOLE = {"nrbp": "NRBP", "map_ia": "MAP-IA"}
FIXTURE = "fixtures/data"


def _ranked(recs: pd.DataFrame) -> pd.DataFrame:
    return recs.sort_values(["user_id", "score", "item_id"], ascending=[True, False, True])


def _ndeval(recs: pd.DataFrame, intents: pd.DataFrame, measures: list[str], alpha=0.5, beta=0.5) -> dict:
    qrels = [(str(u), str(s), str(i), int(r)) for u, i, s, r in intents[["user_id", "item_id", "intent", "relevance"]]
             .itertuples(index=False)]
    run = []
    for user, rows in _ranked(recs).groupby("user_id", sort=False):
        run += [(str(user), str(item), 1000.0 - n) for n, item in enumerate(rows["item_id"])]
    return pyndeval.ndeval(qrels, run, measures=measures, alpha=alpha, beta=beta)


def _intent_counts(intents: pd.DataFrame) -> dict:
    relevant = intents[intents["relevance"] >= 1]
    return {str(u): rows["intent"].nunique() for u, rows in relevant.groupby("user_id")}


def _whole_depth(recs: pd.DataFrame, intents: pd.DataFrame) -> int:
    """The cutoff at which nnrbp@k is ndeval's nNRBP: the longest list or the most relevant items of a user."""
    relevant = intents[intents["relevance"] >= 1].groupby("user_id")["item_id"].nunique()
    return int(max(recs.groupby("user_id").size().max(), relevant.max() if len(relevant) else 1, 1))


def _compare(recs: pd.DataFrame, intents: pd.DataFrame, k: int, alpha: float = 0.5, beta: float = 0.5) -> None:
    asked = [f"{n}(alpha={alpha})@{k}" if n in ("alpha_ndcg", "alpha_dcg") else f"{n}@{k}" for n in NDEVAL]
    asked += [f"nrbp(alpha={alpha},beta={beta})", "map_ia", f"nnrbp(alpha={alpha},beta={beta})@{_whole_depth(recs, intents)}"]
    got = recsql.evaluate(recs, None, asked, intents=intents, population="intersection").per_user.set_index("user_id")
    # ndeval's ERR-IA family and P-IA/strec take α = 0.5 whatever alpha-nDCG's is: one call per α
    want = _ndeval(recs, intents, [f"{v}@{k}" for v in NDEVAL.values()] + list(WHOLE.values()) + ["nNRBP"], alpha, beta)
    fixed = _ndeval(recs, intents, [f"{v}@{k}" for v in NDEVAL.values()])
    counts = _intent_counts(intents)
    assert {str(u) for u in got.index} == set(want) - {"amean"}, (sorted(got.index), sorted(want))
    for user in got.index:
        mine = got.loc[user]
        theirs = want[str(user)]
        for metric, column in zip([*NDEVAL, *WHOLE], asked):
            source = theirs if metric in ("alpha_ndcg", "alpha_dcg") or metric in WHOLE else fixed[str(user)]
            tool = source[f"{NDEVAL[metric]}@{k}" if metric in NDEVAL else WHOLE[metric]]
            value = mine[column]
            if k == 1 and metric in ("alpha_dcg", "err_ia"):
                value *= counts.get(str(user), 0)  # ndeval leaves @1 unnormalised
            assert math.isclose(value, tool, rel_tol=1e-9, abs_tol=1e-12), (user, column, value, tool)
        nnrbp = theirs["nNRBP"]
        if counts.get(str(user), 0) == 0:  # no relevant item: ndeval's 0/0
            assert math.isnan(nnrbp) and mine[asked[-1]] == 0, (user, nnrbp, mine[asked[-1]])
        else:
            assert math.isclose(mine[asked[-1]], nnrbp, rel_tol=1e-9, abs_tol=1e-12), (user, mine[asked[-1]], nnrbp)


@st.composite
def intent_rows(draw) -> pd.DataFrame:
    rows = [{"user_id": u, "item_id": i, "intent": s, "relevance": draw(st.sampled_from([0, 1, 1, 2]))}
            for u, i, s in draw(st.lists(st.tuples(st.sampled_from(USERS[:5]), st.sampled_from(ITEMS),
                                                   st.sampled_from(["a", "b", "c", "d"])), unique=True, min_size=1))]
    return pd.DataFrame(rows).astype({"user_id": "int64", "item_id": "int64", "intent": "object", "relevance": "int64"})


@settings(max_examples=60, deadline=None)
@given(recs=recs_rows(), intents=intent_rows(), k=st.integers(1, 12),
       alpha=st.sampled_from([0.5, 0.25, 0.75]), beta=st.sampled_from([0.5, 0.8]))
def test_intent_aware_metrics_equal_ndeval_on_random_runs(recs, intents, k, alpha, beta):
    assume(recs)
    frame = pd.DataFrame(recs).astype({"user_id": "int64", "item_id": "int64", "score": "float64"})
    _compare(frame, intents, k, alpha, beta)


def _genre_intents() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The fixture's personal model with intents from its truth: each truth item is relevant to its
    category (a user's intents are the categories of the items they liked) and judged 0 for another."""
    both = pd.read_parquet(f"{FIXTURE}/recs.parquet")
    recs = both[both["model"] == "personal"].drop(columns="model").reset_index(drop=True)
    truth = pd.read_parquet(f"{FIXTURE}/truth.parquet")
    items = pd.read_parquet(f"{FIXTURE}/items.parquet")[["item_id", "category"]]
    judged = truth.merge(items, on="item_id").rename(columns={"category": "intent"})
    judged["relevance"] = (judged["relevance"] >= 1).astype("int64") * 2
    other = judged.assign(intent=judged["intent"] + "_other", relevance=0)
    return recs, pd.concat([judged, other])[["user_id", "item_id", "intent", "relevance"]]


@pytest.mark.parametrize("k", [1, 5, 10, 20])
def test_intent_aware_metrics_equal_ndeval_on_the_fixture(k):
    recs, intents = _genre_intents()
    _compare(recs, intents, k)


def test_ir_measures_names_give_ndevals_values():
    """ir_measures' own spelling (alpha_nDCG@10, ERR_IA@10, NRBP, P_IA@10, StRecall@10, AP_IA)
    computed by ir_measures (its pyndeval provider) and by recsql from the same names."""
    recs, intents = _genre_intents()
    names = ["alpha_nDCG@10", "alpha_nDCG(alpha=0.8)@5", "alpha_DCG@10", "ERR_IA@10", "nERR_IA@10", "NRBP",
             "NRBP(alpha=0.8, beta=0.7)", "P_IA@10", "StRecall@10", "AP_IA"]
    got = recsql.evaluate(recs, None, names, intents=intents)
    per_user = got.per_user.set_index("user_id")
    qrels = pd.DataFrame({"query_id": intents["user_id"].astype(str), "doc_id": intents["item_id"].astype(str),
                          "relevance": intents["relevance"], "iteration": intents["intent"]})
    ranked = _ranked(recs)
    run = pd.DataFrame({"query_id": ranked["user_id"].astype(str), "doc_id": ranked["item_id"].astype(str),
                        "score": 1000.0 - ranked.groupby("user_id").cumcount()})
    columns = dict(zip(names, [m.column for m in got.metrics]))
    for name in names:
        measure = ir_measures.parse_measure(name)
        want = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}
        assert want, name
        for user, value in want.items():
            if int(user) not in per_user.index:  # a user of intents without a list: ir_measures reports 0
                assert value == 0, (name, user, value)
                continue
            assert math.isclose(per_user.at[int(user), columns[name]], value, rel_tol=1e-9, abs_tol=1e-12), (name, user)
        assert set(per_user.index[per_user[columns[name]].notna()]) <= {int(u) for u in want}, name


def test_ir_measures_nnrbp_is_refused_for_nnrbp_at_the_whole_depth():
    """ir_measures' nNRBP has no cutoff: recsql refuses the name and points to nnrbp@k, which equals it
    (ir_measures' own value) at k = the longest list or the most relevant items of a user."""
    recs, intents = _genre_intents()
    with pytest.raises(recsql.RecsqlError, match=r"ir_measures' nNRBP .*write nnrbp@k"):
        recsql.evaluate(recs, None, ["nNRBP"], intents=intents)
    depth = _whole_depth(recs, intents)
    per_user = recsql.evaluate(recs, None, [f"nnrbp@{depth}"], intents=intents).per_user.set_index("user_id")
    qrels = pd.DataFrame({"query_id": intents["user_id"].astype(str), "doc_id": intents["item_id"].astype(str),
                          "relevance": intents["relevance"], "iteration": intents["intent"]})
    ranked = _ranked(recs)
    run = pd.DataFrame({"query_id": ranked["user_id"].astype(str), "doc_id": ranked["item_id"].astype(str),
                        "score": 1000.0 - ranked.groupby("user_id").cumcount()})
    want = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.nNRBP], qrels, run)
            if int(m.query_id) in per_user.index}
    assert len(want) > 10 and any(0 < v < 1 for v in want.values())
    for user, value in want.items():
        mine = per_user.at[int(user), f"nnrbp@{depth}"]
        if math.isnan(value):  # no relevant item: ndeval's 0/0, recsql's 0
            assert mine == 0 and _intent_counts(intents).get(user, 0) == 0, user
            continue
        assert math.isclose(mine, value, rel_tol=1e-9, abs_tol=1e-12), user


def test_the_greedy_ideal_breaks_ties_as_ndeval():
    """Items 1 {a, b}, 2 {c, d}, 3 {a, c} all gain 2 at the first step. ndeval takes the last docno of equal
    gains (3, leaving 1.5 and 1.5: ideal gains 2, 1.5, 1.5); the first (1) would leave 2 then 1 (2, 2, 1),
    a larger ideal. Every metric normalised by the ideal list gives ndeval's value."""
    recs = pd.DataFrame({"user_id": [1], "item_id": [1], "score": [1.0]})
    intents = pd.DataFrame({"user_id": [1] * 6, "item_id": [1, 1, 2, 2, 3, 3], "intent": list("abcdac"),
                            "relevance": [1] * 6})
    got = recsql.evaluate(recs, None, ["alpha_ndcg@3", "nerr_ia@3", "nnrbp@3"], intents=intents).per_user.iloc[0]
    want = _ndeval(recs, intents, ["alpha-nDCG@3", "nERR-IA@3", "nNRBP"])["1"]
    assert got["nnrbp@3"] == pytest.approx(2 / 3.125) == pytest.approx(want["nNRBP"])  # 2 / (2 + 1.5/2 + 1.5/4)
    assert got["alpha_ndcg@3"] == pytest.approx(want["alpha-nDCG@3"], rel=1e-12)
    assert got["nerr_ia@3"] == pytest.approx(want["nERR-IA@3"], rel=1e-12)


def test_a_cutoff_beyond_the_unrolled_ideal_is_refused():
    recs = pd.DataFrame({"user_id": [1], "item_id": [1], "score": [1.0]})
    intents = pd.DataFrame({"user_id": [1], "item_id": [1], "intent": ["a"], "relevance": [1]})
    with pytest.raises(recsql.RecsqlError, match="alpha_ndcg, nerr_ia and nnrbp support k <= 100 .*got k = 101"):
        recsql.evaluate(recs, None, ["alpha_ndcg@101"], intents=intents)
    assert recsql.evaluate(recs, None, ["alpha_dcg@101", "p_ia@101"], intents=intents).summary["p_ia@101"].iloc[0] \
        == pytest.approx(1 / 101)


def test_bad_intents_are_clear_errors():
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "score": [2.0, 1.0]})
    good = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "intent": ["a", "b"], "relevance": [1, 1]})
    with pytest.raises(recsql.RecsqlError, match="needs judgments per intent: pass intents="):
        recsql.evaluate(recs, None, ["alpha_ndcg@2"])
    repeated = pd.concat([good, good.head(1)])
    with pytest.raises(recsql.RecsqlError, match=r"intents has 1 duplicated \(user_id, item_id, intent\)"):
        recsql.evaluate(recs, None, ["alpha_ndcg@2"], intents=repeated)
    assert recsql.evaluate(recs, None, ["alpha_ndcg@2"], intents=repeated, duplicates="max").summary[
        "alpha_ndcg@2"].iloc[0] == pytest.approx(1.0)
    missing = good.assign(intent=[None, "b"])
    with pytest.raises(recsql.RecsqlError, match="intents column 'intent' has 1 NULL"):
        recsql.evaluate(recs, None, ["s_recall@2"], intents=missing)
    unnamed = good.rename(columns={"intent": "subtopic"})
    with pytest.raises(recsql.RecsqlError, match="intent_col"):
        recsql.evaluate(recs, None, ["s_recall@2"], intents=unnamed)
    assert recsql.evaluate(recs, None, ["s_recall@1"], intents=unnamed, intent_col="subtopic").summary[
        "s_recall@1"].iloc[0] == pytest.approx(0.5)
    before = good.copy()
    recsql.evaluate(recs, None, ["p_ia@2"], intents=good)
    pd.testing.assert_frame_equal(good, before)  # the user's frame is not changed


def test_the_command_line_reads_intents_and_names_its_flag(capsys):
    from recsql.cli import main
    args = ["evaluate", f"{FIXTURE}/recs.parquet", "--run-col", "model", "-m", "alpha_nDCG@10", "-m", "s_recall@5",
            "--format", "csv"]
    assert main([*args, "--intents", f"{FIXTURE}/intents.parquet"]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("model")
    want = recsql.evaluate(f"{FIXTURE}/recs.parquet", None, ["alpha_ndcg@10", "s_recall@5"], run_cols="model",
                           intents=f"{FIXTURE}/intents.parquet").summary.set_index("model")
    for run in want.index:
        assert printed.at[run, "alpha_nDCG@10"] == pytest.approx(want.at[run, "alpha_ndcg@10"], rel=1e-12)
        assert printed.at[run, "s_recall@5"] == pytest.approx(want.at[run, "s_recall@5"], rel=1e-12)
    assert main(args) == 2
    assert "pass --intents with columns 'user_id', 'item_id', 'intent'" in capsys.readouterr().err


def test_the_normalisers_positions_are_bounded():
    recs = pd.DataFrame({"user_id": [1], "item_id": [1], "score": [1.0]})
    intents = pd.DataFrame({"user_id": [1], "item_id": [1], "intent": ["a"], "relevance": [1]})
    with pytest.raises(recsql.RecsqlError, match="intent-aware metrics support k <= 10000 .*got k = 10001"):
        recsql.evaluate(recs, None, ["alpha_dcg@10001"], intents=intents)


IR_MEASURES = ["alpha_nDCG@{k}", "alpha_DCG@{k}", "ERR_IA@{k}", "nERR_IA@{k}", "P_IA@{k}", "StRecall@{k}", "AP_IA", "NRBP"]


def _ir_measures_inputs(recs: pd.DataFrame, intents: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    qrels = pd.DataFrame({"query_id": intents["user_id"].astype(str), "doc_id": intents["item_id"].astype(str),
                          "relevance": intents["relevance"], "iteration": intents["intent"]})
    ranked = _ranked(recs)
    run = pd.DataFrame({"query_id": ranked["user_id"].astype(str), "doc_id": ranked["item_id"].astype(str),
                        "score": 1000.0 - ranked.groupby("user_id").cumcount()})
    return qrels, run


@settings(max_examples=12, deadline=None)
@given(recs=recs_rows(), intents=intent_rows(), k=st.integers(2, 12))
def test_the_populations_match_ir_measures_with_users_without_lists(recs, intents, k):
    """Users of intents without a list (USERS[:5] in intents, any user in recs): population='judged' and
    ir_measures' convention average over every user of intents as ir_measures' calc_aggregate does (a query
    of the qrels missing from the run scores 0); population='relevant' over those with a relevant judgment,
    ir_measures' per-query values (iter_calc) averaged over them; n_users_intents counts them."""
    assume(recs)
    frame = _ranked(pd.DataFrame(recs).astype({"user_id": "int64", "item_id": "int64", "score": "float64"}))
    frame["score"] = 1000.0 - frame.groupby("user_id").cumcount()  # no ties: one order under every convention
    names = [n.format(k=k) for n in IR_MEASURES]
    measures = [ir_measures.parse_measure(n) for n in names]
    qrels, run = _ir_measures_inputs(frame, intents)
    whole = ir_measures.calc_aggregate(measures, qrels, run)
    per_query = {}
    for m in ir_measures.iter_calc(measures, qrels, run):
        per_query.setdefault(str(m.measure), {})[m.query_id] = m.value
    relevant = {str(u) for u in intents.loc[intents["relevance"] >= 1, "user_id"]}
    for population, users in (("judged", {str(u) for u in intents["user_id"]}), ("relevant", relevant)):
        for convention in ([None, "ir_measures"] if population == "judged" else [None]):
            options = {"convention": convention} if convention else {"population": population}
            got = recsql.evaluate(frame, None, names, intents=intents, **options)
            row = got.summary.iloc[0]
            assert row["n_users_intents"] == len(users), (population, convention, row["n_users_intents"])
            assert set(got.per_user["user_id"].astype(str)) == users, (population, convention)
            for name, measure, column in zip(names, measures, [m.column for m in got.metrics]):
                values = [per_query[str(measure)].get(u, 0.0) for u in users]
                want = whole[measure] if population == "judged" else (sum(values) / len(values) if values else None)
                if want is None:
                    assert pd.isna(row[column]), (population, name)
                    continue
                assert math.isclose(row[column], want, rel_tol=1e-9, abs_tol=1e-12), (population, convention, name,
                                                                                     row[column], want)


def test_a_user_of_intents_without_a_list_counts_as_zero_in_each_run():
    """Two runs, user 3 of intents in neither, user 2 only in run b: each run averages over its lists'
    users and the users of intents without a list there (0), as truth metrics do; population='intersection'
    keeps ndeval's (without -c) users with a list; intents carry no segment, so segments are refused
    outside 'intersection'."""
    recs = pd.DataFrame({"model": ["a", "a", "b", "b"], "user_id": [1, 1, 1, 2], "item_id": [10, 11, 11, 20],
                         "score": [0.9, 0.8, 0.9, 0.9]})
    intents = pd.DataFrame({"user_id": [1, 1, 2, 3, 4], "item_id": [10, 11, 20, 30, 40],
                            "intent": ["x", "y", "x", "x", "x"], "relevance": [1, 1, 1, 1, 0]})
    # s_recall@2: user 1 in run a 2/2, in run b 1/2; user 2 in run b 1/1; users 2 (run a) and 3: 0; user 4: none relevant
    got = recsql.evaluate(recs, None, ["s_recall@2"], intents=intents, run_cols="model").summary
    assert got[["model", "n_users_intents"]].values.tolist() == [["a", 3], ["b", 3]]
    assert got["s_recall@2"].tolist() == pytest.approx([1 / 3, 1.5 / 3])
    judged = recsql.evaluate(recs, None, ["s_recall@2"], intents=intents, run_cols="model", population="judged").summary
    assert judged["n_users_intents"].tolist() == [4, 4] and judged["s_recall@2"].tolist() == pytest.approx([1 / 4, 1.5 / 4])
    both = recsql.evaluate(recs, None, ["s_recall@2"], intents=intents, run_cols="model",
                           population="intersection").summary
    assert both["n_users_intents"].tolist() == [1, 2] and both["s_recall@2"].tolist() == pytest.approx([1.0, 0.75])
    # compare pairs each user of the population in both runs: user 2 (no list in run a) and user 3 (in neither)
    # pair with 0s: the differences b − a per user are 1/2 − 1, 1 − 0 and 0 − 0
    pairs = recsql.compare(recs, None, ["s_recall@2"], intents=intents, run_cols="model", baseline="a").tests
    assert pairs["n"].tolist() == [3] and pairs["mean_diff"].tolist() == pytest.approx([(-0.5 + 1 + 0) / 3])
    with pytest.warns(recsql.RecsqlWarning, match="no user of intents is in the intent-aware metrics' population"):
        empty = recsql.evaluate(recs, None, ["s_recall@2"], intents=intents.assign(relevance=0))
    assert empty.summary["n_users_intents"].tolist() == [0] and empty.summary["s_recall@2"].isna().all()
    segments = pd.DataFrame({"user_id": [1, 2, 3, 4], "country": ["BR", "BR", "DE", "DE"]})
    with pytest.raises(recsql.RecsqlError, match=r"segments=.*population='intersection'"):
        recsql.evaluate(recs, None, ["s_recall@2"], intents=intents, run_cols="model", segments=segments)
    seg = recsql.evaluate(recs, None, ["s_recall@2"], intents=intents, run_cols="model", segments=segments,
                          population="intersection").summary
    assert seg[["model", "country", "n_users_intents"]].values.tolist() == [["a", "BR", 1], ["b", "BR", 2]]


def test_a_sampled_run_counts_a_user_of_intents_without_a_list_in_each_sample():
    """Two samples of run a: user 2 has a list only in sample 2 (s_recall@2 = 1), so 0 in sample 1 and
    0.5 over the samples; user 1: 1 and 1/2, 0.75; user 3 (no list in any): 0. Under 'intersection' a user's
    mean is over the samples where it has a list, as for the truth metrics."""
    recs = pd.DataFrame({"model": ["a"] * 4, "sample": [1, 1, 2, 2], "user_id": [1, 1, 1, 2], "item_id": [10, 11, 11, 20],
                         "score": [0.9, 0.8, 0.9, 0.9]})
    intents = pd.DataFrame({"user_id": [1, 1, 2, 3, 4], "item_id": [10, 11, 20, 30, 40],
                            "intent": ["x", "y", "x", "x", "x"], "relevance": [1, 1, 1, 1, 0]})
    got = recsql.evaluate(recs, None, ["s_recall@2"], intents=intents, run_cols="model", sample_col="sample")
    assert got.per_user["s_recall@2"].tolist() == pytest.approx([0.75, 0.5, 0.0])
    assert got.summary["n_users_intents"].tolist() == [3] and got.summary["s_recall@2"].iloc[0] == pytest.approx(1.25 / 3)
    both = recsql.evaluate(recs, None, ["s_recall@2"], intents=intents, run_cols="model", sample_col="sample",
                           population="intersection")
    assert both.per_user["s_recall@2"].tolist() == pytest.approx([0.75, 1.0])


def _greedy(judged: dict, alpha: float, k: int) -> list[float]:
    """Plain Python: the greedy ideal list's gains (Clarke et al. 2008, ndeval's tie rule: the largest item id)."""
    seen: dict = {}
    left = dict(judged)  # item -> its intents
    gains = []
    for _ in range(min(k, len(judged))):
        gain = {item: sum(sorted((1 - alpha) ** seen.get(s, 0) for s in intents)) for item, intents in left.items()}
        best = max(gain, key=lambda item: (gain[item], item))
        gains.append(gain[best])
        for s in left.pop(best):
            seen[s] = seen.get(s, 0) + 1
    return gains


@settings(max_examples=60, deadline=None)
@example(rows=[(1, 1, "a"), (1, 1, "b"), (1, 2, "c"), (1, 2, "d"), (1, 3, "a"), (1, 3, "c")], alphas=[0.5], k=3)  # ties
@given(rows=st.lists(st.tuples(st.integers(1, 3), st.integers(1, 9), st.sampled_from("abcd")), min_size=1, unique=True),
       alphas=st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.9, 1.0]), min_size=1, max_size=3, unique=True),
       k=st.integers(1, 40))
def test_duckdbs_greedy_ideal_from_lists_is_the_chains_and_pythons(rows, alphas, k):
    """DuckDB's intent_ideal from per-user lists (sql/_intent_ideal.duckdb.sql) and the portable chain of steps
    (recsql/compose/intents.py), run on DuckDB over the same relevant judgments, and the plain-Python greedy
    list: the same picks' gains, step by step (the example: three items tied at the first step, of which the
    largest id leaves gains 2, 1.5, 1.5 and the smallest 2, 2, 1, as in test_the_greedy_ideal_breaks_ties_as_ndeval)."""
    import duckdb
    from recsql.compose.intents import ideal_chain, list_values
    from recsql.compose.rewrite import substitute
    from recsql.templates import read_template
    from recsql.trees import parse

    con = duckdb.connect()
    con.execute("CREATE TABLE intent_judged (user_id BIGINT, item_id BIGINT, intent VARCHAR)")
    con.executemany("INSERT INTO intent_judged VALUES (?, ?, ?)", [list(r) for r in rows])
    con.execute("CREATE TABLE intent_alphas AS SELECT CAST(UNNEST(?) AS DOUBLE) AS alpha", [alphas])
    ctes, ideal = ideal_chain(k)
    chain = "WITH " + ", ".join(c.sql("duckdb") for c in ctes) + " " + ideal.sql("duckdb")
    lists = substitute(parse(read_template("_intent_ideal.duckdb")[1], read="duckdb"), list_values(k), "test")
    got = {name: con.execute(f"SELECT user_id, alpha, step, gain FROM ({sql}) AS q ORDER BY 1, 2, 3").fetchall()
           for name, sql in (("chain", chain), ("lists", lists.sql("duckdb")))}
    got["grouped chain, in steps on SQLite"] = _grouped_on_sqlite(rows, alphas, k)
    judged: dict = {}
    for user, item, intent in rows:
        judged.setdefault(user, {}).setdefault(item, []).append(intent)
    python = [(user, alpha, step, gain) for user in sorted(judged) for alpha in sorted(alphas)
              for step, gain in enumerate(_greedy(judged[user], alpha, k), 1)]
    for name, found in got.items():
        assert [r[:3] for r in found] == [r[:3] for r in python], name
        for mine, want in zip(found, python):
            assert math.isclose(mine[3], want[3], rel_tol=1e-12, abs_tol=1e-15), (name, mine, want)


def _grouped_on_sqlite(rows: list, alphas: list, k: int) -> list[tuple]:
    """The grouped chain (recsql/compose/intents.py, positions of groupings and joins) over ``rows``, run as
    SQLite's runner runs it: in steps, each CTE read more than once a temporary table."""
    import sqlite3

    from recsql.compose.intents import ideal_chain
    from recsql.engines.sqlite import SQLiteRunner
    from recsql.engines.steps import fetch_in_steps
    from sqlglot import exp

    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE intent_judged (user_id INTEGER, item_id INTEGER, intent TEXT)")
    con.executemany("INSERT INTO intent_judged VALUES (?, ?, ?)", rows)
    con.execute("CREATE TABLE intent_alphas (alpha REAL)")
    con.executemany("INSERT INTO intent_alphas VALUES (?)", [(a,) for a in alphas])
    ctes, ideal = ideal_chain(k, grouped=True)
    query = exp.select("user_id", "alpha", "step", "gain").from_(ideal.subquery("q")).order_by("1", "2", "3")
    query.set("with_", exp.With(expressions=ctes))
    found = fetch_in_steps(SQLiteRunner(con), query.sql("sqlite"))
    return [tuple(r) for r in found.itertuples(index=False, name=None)]


@pytest.mark.parametrize("at_least", [False, True], ids=["windows", "grouped"])
@pytest.mark.parametrize("name", ["sqlite", "mysql", "clickhouse"])
def test_runners_in_steps_take_the_grouped_chain_from_their_cutoff_with_duckdbs_values(name, at_least, monkeypatch):
    """On SQLite, MariaDB and ClickHouse a cutoff long enough to be run in steps gets the grouped chain
    (recsql/compose/intents.py, grouped_from), one before it the chain of windows; both give DuckDB's values (its
    per-user lists) user by user, over 5 users with 45 judged items each, 1 to 3 intents per item."""
    import random
    from contextlib import ExitStack

    from recsql.compose.intents import GROUPED, grouped_from
    from recsql.dialects import dialect
    from recsql.engines.steps import fetch_in_steps
    from sqlglot import exp
    from support.engines import start

    assert set(GROUPED) == {"sqlite", "mysql", "clickhouse"}  # this test's engines
    first = grouped_from(name, dialect(name).step_depth)
    assert first > 1
    k = first if at_least else first - 1
    rng = random.Random(7)
    intents = pd.DataFrame([(u, i, s, 1) for u in range(1, 6) for i in rng.sample(range(1, 80), 45)
                            for s in rng.sample("abcdefg", rng.randint(1, 3))], columns=["user_id", "item_id", "intent", "relevance"])
    recs = pd.DataFrame([(u, i, rng.random()) for u in range(1, 6) for i in rng.sample(range(1, 80), 50)],
                        columns=["user_id", "item_id", "score"])
    metrics = [f"alpha_ndcg@{k}", f"nerr_ia@{k}"]
    want = recsql.evaluate(recs, None, metrics, intents=intents).per_user
    ran: list[str] = []  # the CTEs of each statement run in steps
    monkeypatch.setattr("recsql.engines.steps.fetch_in_steps", lambda runner, tree, *a, **kw: (
        ran.extend(cte.alias_or_name for cte in tree.find_all(exp.CTE)), fetch_in_steps(runner, tree, *a, **kw))[1])
    with ExitStack() as stack:
        engine = start(name, stack)
        names = {role: engine.load(frame) for role, frame in (("recs", recs), ("intents", intents))}
        got = recsql.evaluate(names["recs"], None, metrics, intents=names["intents"], con=engine.con).per_user
    grouped = f"intent_best_{k}" in ran
    assert grouped == at_least, (name, k, len(ran))
    assert got["user_id"].tolist() == want["user_id"].tolist() == [1, 2, 3, 4, 5]
    for metric in metrics:
        assert got[metric].tolist() == pytest.approx(want[metric].tolist(), rel=1e-12, abs=1e-15), metric
    assert 0 < want[metrics[0]].min() < want[metrics[0]].max() < 1


def test_a_list_can_beat_the_greedy_ideal_and_score_above_one():
    """The greedy ideal is not always the best list: of items 1 {a, b}, 2 {c, d}, 3 {a, c}, tied at the first step,
    the greedy list takes 3 (gains 2, 1.5, 1.5) and the list 1, 2, 3 gains 2, 2, 1. Its normalised scores are above
    1, as ndeval's are, and within the range the registry declares (the report's histograms are drawn over it)."""
    recs = pd.DataFrame({"user_id": [1] * 3, "item_id": [1, 2, 3], "score": [0.9, 0.8, 0.7]})
    intents = pd.DataFrame({"user_id": [1] * 6, "item_id": [1, 1, 2, 2, 3, 3], "intent": list("abcdac"),
                            "relevance": [1] * 6})
    asked = ["alpha_ndcg@3", "nerr_ia@3", "nnrbp@3"]
    got = recsql.evaluate(recs, None, asked, intents=intents).per_user.iloc[0]
    want = _ndeval(recs, intents, ["alpha-nDCG@3", "nERR-IA@3", "nNRBP"])["1"]
    dcg = 2 + 2 / math.log2(3) + 1 / 2
    assert got["alpha_ndcg@3"] == pytest.approx(dcg / (2 + 1.5 / math.log2(3) + 1.5 / 2), rel=1e-12)
    for name, theirs in zip(asked, ["alpha-nDCG@3", "nERR-IA@3", "nNRBP"]):
        assert got[name] > 1 and got[name] == pytest.approx(want[theirs], rel=1e-12), name
        spec = recsql.parse_metric(name)
        assert spec.spec.value_range(spec.all_options()) == "[0, inf)", name
