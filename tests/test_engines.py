"""The same numbers on seven real engines: DuckDB, SQLite, PostgreSQL, MariaDB, Spark SQL,
ClickHouse (chdb) and DataFusion. Each engine is started for real (servers by tests/support/servers.py);
a missing engine FAILS here, it is never skipped.

Every check compares the engine's result, computed by the rendered query running there, with the
DuckDB result (itself checked against worked examples, oracles and the reference elsewhere):
the worked examples and oracle cases, the trec_eval test files, random cases, in-engine summaries,
and text ids whose collation would otherwise change ties or merge ids."""
from __future__ import annotations

import json
import math
from contextlib import ExitStack
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recsql
from support.cases import TREC_EVAL as TREC, load, metric_of
from support.engines import ENGINES, start
from recsql.engines import runner_for
from support.strategies import SELF_CONTAINED, metrics, recs_rows, truth_rows

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")


@pytest.fixture(scope="module", params=ENGINES)
def engine(request):
    with ExitStack() as stack:
        yield start(request.param, stack)


def normalized(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    out = frame.copy()
    for key in keys:
        out[key] = out[key].astype(str)
    return out.sort_values(keys).reset_index(drop=True)


def assert_same(got: pd.DataFrame, want: pd.DataFrame, keys: list[str]) -> None:
    got, want = normalized(got, keys), normalized(want, keys)
    assert list(got.columns) == list(want.columns)
    assert got[keys].equals(want[keys]), (got[keys], want[keys])
    for column in got.columns.difference(keys):
        for a, b in zip(got[column], want[column]):
            assert (pd.isna(a) and pd.isna(b)) or math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12), (column, a, b)


def both(engine, frames: dict[str, pd.DataFrame | None], metric_list, **kw):
    """Evaluate on the engine (tables loaded there) and on DuckDB (the same DataFrames)."""
    names = {role: (engine.load(frame) if frame is not None else None) for role, frame in frames.items()}
    on_engine = recsql.evaluate(names["recs"], names["truth"], metric_list, items=names.get("items"), con=engine.con, **kw)
    on_duckdb = recsql.evaluate(frames["recs"], frames["truth"], metric_list, items=frames.get("items"), **kw)
    return on_engine, on_duckdb


def _groups():
    """Fixture cases batched into few evaluations: cases with the same options and id types become
    runs (column `case`) of one evaluation, with truth carrying the run key."""
    cases = [c for c in load("worked/seeds.json") if c["issue"] == 2] + load("worked/recsql.json")
    cases += [c for name in ("ranx", "pytrec_eval", "ir_measures") for c in load(f"oracles/{name}.json")]
    groups: dict[str, list[dict]] = {}
    for case in cases:
        if not case["recs"]:
            continue
        order = "rank" if "rank" in case["recs"][0] else "score"
        ids = tuple(type(case["recs"][0][c]).__name__ for c in ("user_id", "item_id"))
        key = json.dumps([case.get("options", {}), order, ids, case["id"] if case.get("items") else ""], sort_keys=True)
        groups.setdefault(key, []).append(case)
    return list(groups.values())


GROUPS = _groups()


@pytest.mark.parametrize("group", GROUPS, ids=[f"{g[0]['id']}+{len(g) - 1}" for g in GROUPS])
def test_fixture_cases(engine, group):
    order = "rank" if "rank" in group[0]["recs"][0] else "score"
    recs = pd.concat([pd.DataFrame(c["recs"]).assign(case=c["id"]) for c in group], ignore_index=True)
    truth = pd.concat([pd.DataFrame(c["truth"]).assign(case=c["id"]) for c in group], ignore_index=True)
    if "relevance" not in truth:
        truth["relevance"] = 1
    truth["relevance"] = truth["relevance"].astype(float)
    recs[order] = recs[order].astype(float if order == "score" else "int64")
    items = pd.DataFrame(group[0]["items"]) if group[0].get("items") else None
    asked = list(dict.fromkeys(metric_of(c) for c in group))
    kw = {**group[0].get("options", {}), ("rank_col" if order == "rank" else "score_col"): order}
    got, want = both(engine, {"recs": recs, "truth": truth, "items": items}, asked, run_cols=["case"], **kw)
    assert_same(got.per_user, want.per_user, ["case", "user_id"])
    assert_same(got.summary, want.summary, ["case"])


def _trec(name: str, columns: list[str]) -> pd.DataFrame:
    return pd.read_csv(TREC / name, sep=r"\s+", header=None, names=columns, comment=None, dtype={"qid": str, "docno": str})


def test_trec_eval_test_files(engine):
    run = _trec("results.test", ["qid", "q0", "docno", "rank", "score", "tag"])[["qid", "docno", "score"]]
    qrels = _trec("qrels.rel_level", ["qid", "iter", "docno", "rel"])[["qid", "docno", "rel"]]
    asked = ["ndcg@10", "ndcg(gain=exponential,ideal=list)@20", "map(denominator=relevant)@100", "recall@50",
             "precision@5", "mrr@10", "r_precision", "hit_rate@3", "f1@10", "cg@5"]
    kw = dict(user_col="qid", item_col="docno", relevance_col="rel")
    for threshold in (1, 2):
        got, want = both(engine, {"recs": run, "truth": qrels}, asked, threshold=threshold, **kw)
        assert_same(got.per_user, want.per_user, ["qid"])
        assert_same(got.summary, want.summary, [])


@pytest.mark.parametrize("convention", ["trec", "ir_measures", "ranx", "replay", "msr"])
def test_conventions_and_tie_rules(engine, convention):
    """Each convention (tie rule, population, negative relevance, gain rule, option defaults) and
    ties='average' give DuckDB's numbers; the trec_eval measures run everywhere."""
    run = _trec("results.test", ["qid", "q0", "docno", "rank", "score", "tag"])[["qid", "docno", "score"]]
    run["score"] = run["score"].round(1)  # many ties
    qrels = _trec("qrels.rel_level", ["qid", "iter", "docno", "rel"])[["qid", "docno", "rel"]]
    qrels.loc[qrels.index[::7], "rel"] = -1  # unjudged under trec
    # queries judged only with negative values, one with a list and one without: in trec's population
    qrels.loc[qrels["qid"] == qrels["qid"].iloc[0], "rel"] = -1
    qrels = pd.concat([qrels, pd.DataFrame({"qid": ["no_list"] * 2, "docno": ["a", "b"], "rel": [-1, -2]})],
                      ignore_index=True).astype(qrels.dtypes.to_dict())
    kw = dict(user_col="qid", item_col="docno", relevance_col="rel")
    asked = ["map", "ndcg", "map@10", "ndcg@10", "mrr", "bpref", "rbp", "precision@5", "recall@20", "judged@10",
             "num_ret", "num_rel", "num_rel_ret", "set_p", "set_recall", "set_f", "r_precision", "hit_rate@3"]
    got, want = both(engine, {"recs": run, "truth": qrels}, asked, convention=convention, **kw)
    assert_same(got.per_user, want.per_user, ["qid"])
    assert_same(got.summary, want.summary, [])
    # every convention here keeps a truth user judged only with negative values: trec and ir_measures
    # count every qrels query (trec_eval -c), ranx does too, replay and msr read every truth row as relevant
    assert "no_list" in set(got.per_user["qid"])
    averaged = ["precision@5", "recall@20", "ndcg@10", "dcg(gain=exponential)@10", "hit_rate@3", "cg@5", "rbp@10"]
    got, want = both(engine, {"recs": run, "truth": qrels}, averaged, convention=convention, ties="average", **kw)
    assert_same(got.per_user, want.per_user, ["qid"])


def test_integer_ids_tie_as_text(engine):
    """trec_eval compares docnos as text ('9' > '100' > '10'), and so do recsql's trec, ir_measures
    and ranx conventions with INTEGER id columns, on every engine; ir_measures' RR@k and Judged@k
    order tied docnos ascending (its msmarco and judged providers), a negative judgment judged."""
    recs = pd.DataFrame({"user_id": [1, 1, 1], "item_id": [9, 10, 100], "score": [1.0, 1.0, 1.0]})
    truth = pd.DataFrame({"user_id": [1, 1], "item_id": [9, 100], "relevance": [1.0, -1.0]})
    expected = {"trec": {"mrr": 1.0, "precision@1": 1.0}, "recsql": {"mrr": 1.0, "precision@1": 1.0},
                "ranx": {"mrr": 1 / 3, "precision@1": 0.0},
                "ir_measures": {"mrr": 1.0, "mrr@3": 1 / 3, "judged@2": 0.5, "precision@1": 1.0}}
    names = {role: engine.load(frame) for role, frame in (("recs", recs), ("truth", truth))}
    for convention, want in expected.items():
        got = recsql.evaluate(names["recs"], names["truth"], list(want), con=engine.con, convention=convention)
        assert got.summary[list(want)].iloc[0].tolist() == pytest.approx(list(want.values())), (convention, got.summary)


def test_beyond_accuracy_metrics(engine):
    """Every beyond-accuracy metric (docs/guide/metrics.md, "Beyond accuracy and user models") gives DuckDB's numbers (itself checked against the
    hand-computed cases and the reference), with every side input: items (probability, category),
    feature rows, interactions, a baseline and a catalog; and without truth."""
    data = Path(__file__).resolve().parent.parent / "fixtures" / "data"
    recs = pd.read_parquet(data / "recs.parquet").query("user_id < 40").reset_index(drop=True)
    recs["model"] = recs["model"].astype(str)
    truth = pd.read_parquet(data / "truth.parquet").query("user_id < 60").astype({"relevance": float})
    items = pd.read_parquet(data / "items.parquet").astype({"category": str})
    items["probability"] = (items["item_id"] % 7) / 10.0
    features = pd.DataFrame([(i, f, float((i * (j + 3)) % 5 - 1)) for i in items["item_id"] for j, f in enumerate("xyz")
                             if (i + j) % 4], columns=["item_id", "feature", "value"])
    interactions = pd.read_parquet(data / "truth.parquet")[["user_id", "item_id"]]
    interactions["weight"] = (interactions["item_id"] % 4) * 0.5  # the history's weights (miscalibration), some 0
    baseline = recs[recs["model"] == "popular"][["user_id", "item_id", "score"]].copy()
    baseline["score"] = -baseline["item_id"].astype(float)  # another order
    catalog = items[items["item_id"] % 3 > 0][["item_id"]]
    asked = ["novelty@5", "novelty(p=items)@5", "surprisal@5", "arp@5", "unexpectedness@5", "serendipity@5",
             "diversity@5", "diversity(by=features)@5", "coverage@10", "gini@10", "personalization@5", "auc@10", "auc",
             "accuracy@3", "err@5", "err(max_grade=2)@5", "pfound@5", "spearman@10", "kendall@10", "rbp@10",
             "aplt@5", "aclt(head=0.5)@10", "rbo@10", "rbo(p=0.5)@5", "intersection@5", "jaccard@10",
             "miscalibration@10", "miscalibration(alpha=0.2,by=features)@5", "entropy@10", "entropy(base=2,by=features)@5",
             "alpha_ndcg@5", "alpha_ndcg(alpha=0.25)@10", "alpha_dcg@5", "err_ia@10", "nerr_ia@5", "nrbp",
             "nrbp(alpha=0.2,beta=0.8)@10", "nnrbp@5", "nnrbp(alpha=0.25,beta=0.8)@10", "p_ia@5", "s_recall@10", "map_ia", "entropy(patience=0.85,base=2)@5",
             "miscalibration(patience=0.5)@10", "exposure_disparity@10", "exposure_disparity(target=merit,combine=l2)@5",
             "exposure_disparity(weight=geometric,combine=variance)@5", "exposure_disparity(weight=uniform,combine=max_abs_dev)@10",
             "exposure_gini@10", "exposure_gini(weight=log,over=groups)@5", "exposure_entropy(base=2)@10",
             "exposure_entropy(weight=uniform)@5", "lt_coverage@10", "lt_coverage(head=0.5)@5", "pop_rsp@10", "pop_reo@5",
             "awrf@10", "awrf(target=items,by=features,weight=geometric)@5", "ee_l@10", "ee_d(model=gerr)@5",
             "ee_r(patience=0.8)@10"]
    # intents: each truth item relevant to its category, and judged 0 for a second intent
    intents = truth.merge(items[["item_id", "category"]], on="item_id").rename(columns={"category": "intent"})
    intents = pd.concat([intents, intents.assign(intent=intents["intent"] + "_b", relevance=0.0)])[
        ["user_id", "item_id", "intent", "relevance"]].reset_index(drop=True)
    frames = {"recs": recs, "truth": truth, "items": items, "item_features": features, "interactions": interactions,
              "expected_recs": baseline, "catalog": catalog, "intents": intents}
    names = {role: engine.load(frame) for role, frame in frames.items()}
    got = recsql.evaluate(names.pop("recs"), names.pop("truth"), asked, con=engine.con, run_cols=["model"],
                          interaction_weight_col="weight", **names)
    want = recsql.evaluate(frames.pop("recs"), frames.pop("truth"), asked, run_cols=["model"],
                           interaction_weight_col="weight", **frames)
    assert_same(got.per_user, want.per_user, ["model", "user_id"])
    assert_same(got.summary, want.summary, ["model"])
    lists_only = ["novelty@5", "diversity@5", "coverage@10", "personalization@5"]
    got = recsql.evaluate(engine.load(recs), None, lists_only, con=engine.con, run_cols=["model"],
                          items=engine.load(items), interactions=engine.load(interactions))
    want = recsql.evaluate(recs, None, lists_only, run_cols=["model"], items=items, interactions=interactions)
    assert_same(got.summary, want.summary, ["model"])


def test_long_tail_with_the_head_from_items(engine):
    """The long-tail metrics with the head from the items' flags (head_col: split=items) give DuckDB's numbers
    (itself checked against the hand-computed cases and the reference), with the flag a boolean column and a
    0/1 integer one, some listed items missing from items (in neither group), and split=interactions beside."""
    data = Path(__file__).resolve().parent.parent / "fixtures" / "data"
    recs = pd.read_parquet(data / "recs.parquet").query("user_id < 40").reset_index(drop=True)
    recs["model"] = recs["model"].astype(str)
    truth = pd.read_parquet(data / "truth.parquet").query("user_id < 60").astype({"relevance": float})
    items = pd.read_parquet(data / "items.parquet")[["item_id"]]
    items = items[items["item_id"] % 11 > 0].reset_index(drop=True)  # every 11th item missing: in neither group
    items["is_head"] = (items["item_id"] % 5 == 0).astype("boolean")  # a boolean column where the engine has one
    items["head01"] = (items["item_id"] % 3 == 0).astype("int64")
    interactions = pd.read_parquet(data / "truth.parquet")[["user_id", "item_id"]]
    interactions = interactions[(interactions["user_id"] + interactions["item_id"]) % 3 > 0]  # some relevant unseen
    asked = ["aplt@5", "aclt@10", "lt_coverage@10", "lt_coverage@5", "pop_rsp@10", "pop_reo@10",
             "aplt(split=interactions)@5", "pop_rsp(split=interactions,head=0.5)@5"]
    frames = {"recs": recs, "truth": truth, "items": items, "interactions": interactions}
    names = {role: engine.load(frame) for role, frame in frames.items()}
    for flag in ("is_head", "head01"):
        got = recsql.evaluate(names["recs"], names["truth"], asked, con=engine.con, run_cols=["model"],
                              items=names["items"], interactions=names["interactions"], head_col=flag)
        want = recsql.evaluate(recs, truth, asked, run_cols=["model"], items=items, interactions=interactions,
                               head_col=flag)
        assert want.summary[asked].notna().all(axis=None), want.summary  # every metric has a number here
        assert_same(got.per_user, want.per_user, ["model", "user_id"])
        assert_same(got.summary, want.summary, ["model"])


def test_off_policy_estimators(engine):
    """The off-policy estimators (docs/guide/logs.md) give DuckDB's numbers (themselves checked against obp, the
    hand-worked cases and the reference): logs with positions, a reward model, both targets, two runs."""
    data = Path(__file__).resolve().parent.parent / "fixtures" / "data"
    recs = pd.read_parquet(data / "recs.parquet").query("user_id < 40").reset_index(drop=True)
    recs["model"] = recs["model"].astype(str)
    # each list's scores divided by their sum: target=scores reads them as probabilities (the order unchanged)
    recs["score"] = recs["score"] / recs.groupby(["model", "user_id"])["score"].transform("sum")
    truth = pd.read_parquet(data / "truth.parquet").query("user_id < 60").reset_index(drop=True)
    logs = pd.DataFrame({"user_id": truth["user_id"], "item_id": truth["item_id"], "position": 1 + truth["item_id"] % 3,
                         "propensity": 0.2 + 0.1 * (truth["item_id"] % 5), "reward": truth["relevance"].astype(float)})
    pairs = pd.concat([recs[["user_id", "item_id"]], truth[["user_id", "item_id"]]]).drop_duplicates()
    model = pairs.assign(reward=0.1 * (pairs["item_id"] % 7)).reset_index(drop=True)
    asked = ["ips", "ips(cap=2)", "snips", "dm", "dr", "switch_dr(tau=3)", "ess", "max_weight", "ips(target=scores)",
             "dr(target=scores)"]
    got = recsql.evaluate(engine.load(recs), None, asked, con=engine.con, run_cols=["model"], logs=engine.load(logs),
                          reward_model=engine.load(model))
    want = recsql.evaluate(recs, None, asked, run_cols=["model"], logs=logs, reward_model=model)
    assert want.summary["ips"].notna().all()
    assert_same(got.summary, want.summary, ["model"])


def test_slate_off_policy_estimators(engine):
    """The slate estimators (docs/guide/logs.md, "Slates") and pbm_ips give DuckDB's numbers (themselves checked against obp,
    the hand-worked cases and the reference): per user a logged slate of run a's top 4, as listed, with two
    positions swapped or reversed, two runs; one run matches no logged item (the self-normalized estimators
    NULL) and one has a position whose weights sum to 0."""
    data = Path(__file__).resolve().parent.parent / "fixtures" / "data"
    recs = pd.read_parquet(data / "recs.parquet").query("user_id < 40").reset_index(drop=True)
    recs["model"] = recs["model"].astype(str)
    first = recs[recs["model"] == recs["model"].min()].sort_values(["user_id", "score", "item_id"],
                                                                    ascending=[True, False, True])
    rows = []
    for user, items in first.groupby("user_id")["item_id"]:
        slate = list(items)[:4]
        slate = slate if user % 3 == 0 else [slate[0], *slate[1:][::-1]] if user % 3 == 1 else slate[::-1]
        # and on some slates a fifth position that no list matches (its weights sum to 0: the self-normalized
        # estimators add 0 there)
        slate += list(items)[6:7] if user % 3 == 1 else []
        rows += [{"user_id": user, "item_id": item, "position": k, "propensity": 0.2 + 0.1 * (item % 5),
                  "slate_p": 0.01 + 0.01 * (user % 4), "cascade_p": 0.5 / k, "reward": float(item % 2)}
                 for k, item in enumerate(slate, start=1)]
    logs = pd.DataFrame(rows)
    asked = ["slate_ips", "slate_iips", "slate_rips", "slate_snips", "slate_sniips", "slate_snrips", "pbm_ips",
             "pbm_ips(examination=1 / rank, logging=ranking)"]
    columns = dict(slate_propensity_col="slate_p", cascade_propensity_col="cascade_p")
    got = recsql.evaluate(engine.load(recs), None, asked, con=engine.con, run_cols=["model"], logs=engine.load(logs),
                          **columns)
    want = recsql.evaluate(recs, None, asked, run_cols=["model"], logs=logs, **columns)
    assert (want.summary[asked] > 0).any().all()
    assert want.summary[["slate_sniips", "slate_snrips"]].isna().any().all()  # a run no row of which weighs anything
    assert_same(got.summary, want.summary, ["model"])


def test_a_stochastic_target_per_position(engine):
    """target=positions (docs/guide/logs.md, "The target policy"): per run and user, each of run's top 3 as listed
    with probability 0.7 and reversed with 0.3, given as (item, position, probability) rows; the estimators and
    the probabilities' checks give DuckDB's numbers (themselves checked against obp and the reference:
    tests/test_logs_positions.py)."""
    data = Path(__file__).resolve().parent.parent / "fixtures" / "data"
    recs = pd.read_parquet(data / "recs.parquet").query("user_id < 30").reset_index(drop=True)
    recs["model"] = recs["model"].astype(str)
    ranked = recs.sort_values(["model", "user_id", "score", "item_id"], ascending=[True, True, False, True])
    policy, logged = [], []
    for (model, user), items in ranked.groupby(["model", "user_id"])["item_id"]:
        top = list(items)[:3]
        for weight, ranking in ((0.7, top), (0.3, top[::-1])):
            policy += [{"model": model, "user_id": user, "item_id": item, "position": k, "score": weight}
                       for k, item in enumerate(ranking, start=1)]
        if model == ranked["model"].min():  # the logged slate: the top 3 of the first run, shifted by one
            logged += [{"user_id": user, "item_id": item, "position": k, "propensity": 0.2 + 0.1 * (item % 5),
                        "reward": float((item + user) % 2)} for k, item in enumerate(top[1:] + top[:1], start=1)]
    policy = pd.DataFrame(policy).groupby(["model", "user_id", "item_id", "position"], as_index=False)["score"].sum()
    logs = pd.DataFrame(logged)
    pairs = pd.concat([policy[["user_id", "item_id"]], logs[["user_id", "item_id"]]]).drop_duplicates()
    model = pairs.assign(reward=0.1 * (pairs["item_id"] % 7)).reset_index(drop=True)
    asked = [f"{name}(target=positions)" for name in ("ips", "snips", "dm", "dr", "slate_iips", "slate_sniips")]
    got = recsql.evaluate(engine.load(policy), None, asked, con=engine.con, run_cols=["model"], logs=engine.load(logs),
                          reward_model=engine.load(model))
    want = recsql.evaluate(policy, None, asked, run_cols=["model"], logs=logs, reward_model=model)
    assert (want.summary[asked].iloc[0] > 0).all()  # the first run weighs its logged slates
    assert_same(got.summary, want.summary, ["model"])
    over = pd.concat([policy, policy.iloc[[0]].assign(item_id=-1, position=1, score=0.5)])  # position 1 sums to 1.5
    with pytest.raises(recsql.RecsqlError, match=r"sum above 1"):
        recsql.evaluate(engine.load(over), None, asked[:1], con=engine.con, run_cols=["model"], logs=engine.load(logs))


def test_a_stochastic_target_of_whole_slates(engine):
    """target=slates (docs/guide/logs.md, "The target policy"): per run, the target's probability of each logged
    slate's prefix (a product of factors down the slate, one recs row per logged row); the slate and cascade
    estimators, their ess and max_weight, and the prefixes' checks give DuckDB's numbers (themselves checked against
    obp and the reference: tests/test_logs_slates.py)."""
    data = Path(__file__).resolve().parent.parent / "fixtures" / "data"
    recs = pd.read_parquet(data / "recs.parquet").query("user_id < 30").reset_index(drop=True)
    models = sorted(recs["model"].astype(str).unique())
    ranked = recs.sort_values(["user_id", "score", "item_id"], ascending=[True, False, True])
    prefixes, logged = [], []
    for user, items in ranked.groupby("user_id")["item_id"]:
        slate = list(dict.fromkeys(items))[:3]
        joint, cascade = 0.05 + 0.01 * (user % 4), 1.0
        for k, item in enumerate(slate, start=1):
            cascade *= 0.5 + 0.1 * (item % 4)
            logged.append({"user_id": user, "item_id": item, "position": k, "propensity": 0.5, "slate_propensity": joint,
                           "cascade_propensity": cascade, "reward": float((item + user) % 2)})
        for r, model in enumerate(models):
            prefix = 1.0
            for k, item in enumerate(slate, start=1):
                prefix *= 0.2 + 0.2 * ((item + r + k) % 5)  # 0.2 .. 1.0
                prefixes.append({"model": model, "user_id": user, "item_id": item, "position": k, "score": prefix})
    policy, logs = pd.DataFrame(prefixes), pd.DataFrame(logged)
    columns = {"slate_propensity_col": "slate_propensity", "cascade_propensity_col": "cascade_propensity"}
    asked = [f"{name}(target=slates)" for name in ("slate_ips", "slate_snips", "slate_rips", "slate_snrips")] + [
        f"{name}(target=slates,weights={kind})" for name in ("ess", "max_weight") for kind in ("slate", "cascade")]
    got = recsql.evaluate(engine.load(policy), None, asked, con=engine.con, run_cols=["model"], logs=engine.load(logs),
                          **columns)
    want = recsql.evaluate(policy, None, asked, run_cols=["model"], logs=logs, **columns)
    assert len(want.summary) == len(models) and (want.summary[asked] > 0).all().all()
    assert_same(got.summary, want.summary, ["model"])
    rising = policy.assign(score=policy["score"].where(policy["position"] != 2, 1.0))  # above the first position's
    with pytest.raises(recsql.RecsqlError, match=r"row\(s\) exceed the score of an earlier position"):
        recsql.evaluate(engine.load(rising), None, asked[:1], con=engine.con, run_cols=["model"],
                        logs=engine.load(logs), **columns)
    with pytest.raises(recsql.RecsqlError, match=r"recs \(target=slates\) and logs disagree on 1 row"):
        recsql.evaluate(engine.load(policy.iloc[1:]), None, asked[:1], con=engine.con, run_cols=["model"],
                        logs=engine.load(logs), **columns)


def test_logs_per_run(engine):
    """Logs that carry the run column (docs/guide/logs.md, "Logs per run"): each run estimated on its own rows,
    a run without logs NULL, as DuckDB gives them (themselves the reference's: tests/test_logs_per_run.py)."""
    data = Path(__file__).resolve().parent.parent / "fixtures" / "data"
    recs = pd.read_parquet(data / "recs.parquet").query("user_id < 30").reset_index(drop=True)
    recs["model"] = recs["model"].astype(str)
    models = sorted(recs["model"].unique())
    ranked = recs.sort_values(["model", "user_id", "score", "item_id"], ascending=[True, True, False, True])
    rows = []
    for (model, user), items in ranked.groupby(["model", "user_id"])["item_id"]:
        if model == models[-1]:
            continue  # the last run has no logs: its estimates are NULL
        slate = list(items)[:3] if user % 2 else list(items)[1:4][::-1]
        rows += [{"model": model, "user_id": user, "item_id": item, "position": k, "propensity": 0.2 + 0.1 * (item % 5),
                  "reward": float((item + user) % 2)} for k, item in enumerate(slate, start=1)]
    logs = pd.DataFrame(rows)
    asked = ["ips", "snips", "slate_iips", "pbm_ips"]
    got = recsql.evaluate(engine.load(recs), None, asked, con=engine.con, run_cols=["model"], logs=engine.load(logs),
                          min_ess_share=0)
    want = recsql.evaluate(recs, None, asked, run_cols=["model"], logs=logs, min_ess_share=0)
    assert want.summary[asked].iloc[:-1].notna().all().all() and want.summary[asked].iloc[-1].isna().all()
    assert_same(got.summary, want.summary, ["model"])


def test_sampled_runs(engine):
    """A stochastic run's sampled lists (sample_col): expected exposure over the samples and a per-list or
    global metric's mean over them give DuckDB's numbers (themselves checked against the reference:
    tests/test_expected_exposure.py), per user and in the summary."""
    data = Path(__file__).resolve().parent.parent / "fixtures" / "data"
    recs = pd.read_parquet(data / "recs.parquet").query("user_id < 30").reset_index(drop=True)
    recs["model"] = recs["model"].astype(str)
    sampled = pd.concat([recs.assign(sample=s, score=recs["score"] * (1 + ((recs["item_id"] * (s + 3)) % 7) / 10))
                         for s in range(3)]).query("not (sample == 2 and user_id % 5 == 0)").reset_index(drop=True)
    truth = pd.read_parquet(data / "truth.parquet").query("user_id < 40").astype({"relevance": float})
    asked = ["ee_l@10", "ee_d(model=gerr)@5", "ee_r@10", "ndcg@10", "recall@5", "coverage@10", "gini@5"]
    got = recsql.evaluate(engine.load(sampled), engine.load(truth), asked, con=engine.con, run_cols=["model"],
                          sample_col="sample")
    want = recsql.evaluate(sampled, truth, asked, run_cols=["model"], sample_col="sample")
    assert_same(got.per_user, want.per_user, ["model", "user_id"])
    assert_same(got.summary, want.summary, ["model"])


def test_summary_sql_runs_in_the_engine(engine):
    recs = pd.DataFrame({"model": ["a", "a", "a", "b", "b"], "user_id": [1, 1, 2, 1, 2],
                         "item_id": [1, 2, 1, 3, 2], "score": [0.3, 0.2, 0.9, 0.5, 0.5]})
    truth = pd.DataFrame({"user_id": [1, 1, 2, 3], "item_id": [2, 3, 2, 1], "relevance": [1.0, 2.0, 3.0, 1.0]})
    r, t = engine.load(recs), engine.load(truth)
    asked = ["ndcg@2", "map@2", "ndcg(ideal=list)@2", "ndcg(ideal=k_slots)@3", "precision(denominator=list)@3"]
    with runner_for(engine.con) as runner:
        fetched = runner.fetch(recsql.to_sql(r, t, asked, dialect=runner.dialect, run_cols=["model"]))
    in_engine = fetched.to_pandas() if hasattr(fetched, "to_pandas") else fetched
    want = recsql.evaluate(recs, truth, asked, run_cols=["model"]).summary
    # the rendered SQL carries the input checks (0 on clean input); evaluate's summary leaves them out
    from recsql.compose import DIAGNOSTICS
    checks = [c for c in DIAGNOSTICS if c in in_engine.columns]
    assert set(checks) == {"recs_invalid_rows", "recs_duplicate_rows", "truth_invalid_rows", "truth_duplicate_rows"}
    assert (in_engine[checks] == 0).all().all(), in_engine[checks]
    assert_same(in_engine.drop(columns=checks), want, ["model"])


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(recs=recs_rows(), truth=truth_rows(), asked=st.lists(metrics(SELF_CONTAINED), min_size=1, max_size=6, unique_by=str),
       threshold=st.sampled_from([1, 2]), population=st.sampled_from(["relevant", "intersection"]))
def test_random_cases(engine, recs, truth, asked, threshold, population):
    recs_df = pd.DataFrame(recs, columns=["user_id", "item_id", "score"]).astype({"user_id": "int64", "item_id": "int64", "score": float})
    truth_df = pd.DataFrame(truth, columns=["user_id", "item_id", "relevance"]).astype({"user_id": "int64", "item_id": "int64", "relevance": float})
    items = pd.DataFrame({"item_id": range(1, 10), "price": [float(i * 3 % 7) for i in range(1, 10)]})
    got, want = both(engine, {"recs": recs_df, "truth": truth_df, "items": items}, asked,
                     threshold=threshold, population=population)
    assert_same(got.per_user, want.per_user, ["user_id"])
    assert_same(got.summary, want.summary, [])


def test_text_ids_tie_and_case_like_duckdb(engine):
    """'B' < 'a' bytewise; a locale or case-insensitive collation would reorder the tie or merge
    'a' with 'A'. recsql compares text ids bytewise on every engine."""
    recs = pd.DataFrame({"user_id": ["u", "u", "u", "U"], "item_id": ["a", "B", "A", "a"], "score": [1.0, 1.0, 1.0, 2.0]})
    truth = pd.DataFrame({"user_id": ["u", "U"], "item_id": ["a", "A"], "relevance": [1.0, 1.0]})
    asked = ["mrr@3", "ndcg@2", "hr@1"]
    if engine.can("collations"):  # a column with the server's usual case-insensitive / locale collation
        names = {role: engine.load(frame, text=engine.loose_text) for role, frame in (("recs", recs), ("truth", truth))}
        got = recsql.evaluate(names["recs"], names["truth"], asked, con=engine.con)
        want = recsql.evaluate(recs, truth, asked)
    else:
        got, want = both(engine, {"recs": recs, "truth": truth}, asked)
    assert_same(got.per_user, want.per_user, ["user_id"])
    assert list(want.per_user["mrr@3"]) == [0.0, 1 / 3]  # U: "a" is not "A"; u: A < B < a, the hit is 3rd


def test_missing_table_is_a_clear_error(engine):
    with pytest.raises(recsql.RecsqlError, match="recs"):
        recsql.evaluate("no_such_table_here", "no_such_truth", ["ndcg@5"], con=engine.con)


def test_dataframe_inputs(engine):
    """Spark takes Spark DataFrames, DuckDB takes pandas; a server engine refuses a pandas frame
    with the fix (load it into a table) instead of failing inside the driver."""
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "score": [0.5, 0.7]})
    truth = pd.DataFrame({"user_id": [1], "item_id": [1], "relevance": [1.0]})
    if engine.can("dataframes"):
        before = engine.tables()
        result = recsql.evaluate(engine.frame(recs), engine.frame(truth), ["mrr@2"], con=engine.con)
        assert result.summary["mrr@2"].iloc[0] == 0.5
        assert engine.tables() == before  # no view of the frames left behind
    else:
        with pytest.raises(recsql.RecsqlError, match="load it into a table there"):
            recsql.evaluate(recs, truth, ["mrr@2"], con=engine.con)


def test_the_capability_table_has_a_harness_for_each_engine_and_a_test_for_each_flag():
    """support/capabilities.py names each engine the harness starts (one class each) and no flag
    that no test reads: a flag is asked for by name, ``engines_with("x")`` or ``engine.can("x")``."""
    from support import capabilities, engines as harness
    classes, found = [harness.Engine], set()
    while classes:
        cls = classes.pop()
        classes += cls.__subclasses__()
        found.add(cls.name)
    assert set(capabilities.ENGINES) <= found
    assert all(flags <= set(capabilities.FLAGS) for flags in capabilities.CAPABILITIES.values())
    tests = "".join(path.read_text(encoding="utf-8") for path in Path(__file__).parent.glob("test_*.py"))
    unread = [flag for flag in capabilities.FLAGS
              if f'engines_with("{flag}")' not in tests and f'can("{flag}")' not in tests and f'"{flag}"),' not in tests]
    assert unread == []
