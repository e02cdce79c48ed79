"""The dbt package's SQL without dbt: `recsql dbt model`'s models and the `recsql.evaluate` macro
(rendered with jinja2 in a minimal dbt-like context, tests/dbt_jinja.py) run on DuckDB and SQLite
over the integration seeds give recsql.evaluate's numbers to 1e-9, for many random combinations of
metrics, options and switches; and no CTE of their SQL is always empty (an input not given is not
written as an empty CTE, nor joined).

The references are recsql.evaluate's numbers (tested against external tools elsewhere), never the
generated SQL's.
"""
from __future__ import annotations

import random
import re
import sqlite3
from pathlib import Path

import duckdb
import jinja2
import numpy as np
import pandas as pd
import pytest
import sqlglot
from sqlglot import exp

import recsql
from recsql.conventions import CONVENTIONS, measure_rule
from recsql.dbt.evaluate import NEED_INPUT, EXTRA_SWITCHES, MAX_RUNS, PER_RUNS, _cutoffs, _variants, averaged, refused, served, _metric
from recsql.dbt.model import ModelSpec, render_model
from recsql.dbt.names import output_name
from recsql.dbt.package import read_specs
from recsql.metrics import registry
from dbt_jinja import CompilerError, Package
from frames import assert_same_values

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "dbt" / "integration_tests" / "seeds"
NAMES = ("recs", "recs_single", "recs_two_keys", "recs_three_keys", "recs_four_keys", "recs_duplicates", "truth",
         "items", "interactions", "baseline", "catalog", "recs_text", "truth_text", "item_features")
# The recommendations with 0 to 4 run keys, and the run columns the macro is called with for each.
BY_RUNS = {0: ("recs_single", []), 1: ("recs", ["model"]), 2: ("recs_two_keys", ["model", "variant"]),
           3: ("recs_three_keys", ["model", "variant", "fold"]), 4: ("recs_four_keys", ["model", "variant", "fold", "seed"])}


def _seed(name: str) -> pd.DataFrame:
    return pd.read_csv(SEEDS / f"{name}.csv")


def with_run_key(frame: pd.DataFrame, column: str, values: tuple) -> pd.DataFrame:
    """``frame`` with one more run key ``column`` (after the others): at ``values[0]`` its rows as they
    are, at ``values[1]`` with the scores of each list rotated by one row (the same ties, other orders).
    How seeds/recs_three_keys.csv (``fold``) and recs_four_keys.csv (``seed``) were made from
    recs_two_keys.csv: :func:`test_run_key_seeds`."""
    keys = list(frame.columns[:frame.columns.get_loc("user_id") + 1])
    rotated = frame.assign(score=frame.groupby(keys, sort=False)["score"].transform(lambda s: np.roll(s.to_numpy(), 1)))
    both = pd.concat([frame.assign(**{column: values[0]}), rotated.assign(**{column: values[1]})], ignore_index=True)
    return both[[*keys[:-1], column, *frame.columns[len(keys) - 1:]]]


def test_run_key_seeds():
    three = with_run_key(_seed("recs_two_keys"), "fold", ("x", "y"))
    pd.testing.assert_frame_equal(_seed("recs_three_keys"), three)
    pd.testing.assert_frame_equal(_seed("recs_four_keys"), with_run_key(three, "seed", (1, 2)))
    assert max(BY_RUNS) == MAX_RUNS


def _duckdb() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name in NAMES:
        frame = _seed(name)  # noqa: F841 (read by DuckDB's replacement scan)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM frame")
    return con


def _sqlite() -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    for name in NAMES:
        _seed(name).to_sql(name, con, index=False)
    return con


def _fetch(con, sql: str) -> pd.DataFrame:
    if isinstance(con, sqlite3.Connection):
        return pd.read_sql_query(sql, con)
    return con.execute(sql).df()


def _checks(frame: pd.DataFrame) -> list[str]:
    """The input-check columns of a result (lower case)."""
    return [c for c in frame.columns if c.endswith(("_invalid_rows", "_duplicate_rows"))]


def _same_order(actual: pd.DataFrame, expected: pd.DataFrame, where: str) -> None:
    """recsql.evaluate's columns in its order (the input checks aside)."""
    actual = actual.rename(columns=str.lower)
    assert [c for c in actual.columns if c not in _checks(actual)] == [c.lower() for c in expected.columns], where


def _same(actual: pd.DataFrame, expected: pd.DataFrame, keys: list[str], where: str) -> None:
    """Every row and number equal (to 1e-9; NULL where recsql.evaluate has NaN); input checks all 0."""
    actual = actual.rename(columns=str.lower)
    checks = _checks(actual)
    assert (actual[checks] == 0).all().all(), where
    actual = actual.drop(columns=checks)
    expected = expected.rename(columns=str.lower)
    assert sorted(actual.columns) == sorted(expected.columns), (where, list(actual.columns), list(expected.columns))
    actual = actual[list(expected.columns)]
    if keys:
        actual, expected = (f.astype({k: str for k in keys}).sort_values(keys).reset_index(drop=True)
                            for f in (actual, expected))
    assert_same_values(actual, expected, where)


def _expected(recs: str, metrics: list[str], output: str, column_names: str = "safe", **options) -> pd.DataFrame:
    inputs = {role: _seed(options.pop(role)) for role in ("truth", "items", "interactions", "baseline", "catalog", "item_features")
              if options.get(role)}
    result = recsql.evaluate(_seed(recs), inputs.pop("truth", None), metrics, **inputs, **options)
    frame = result.per_user if output == "per_user" else result.summary
    if column_names == "as_asked":
        return frame
    return frame.rename(columns={m.column: output_name(m.column) for m in result.metrics})


def _ctes_not_empty(con, sql: str, read: str, where: str) -> None:
    """Every CTE of the statement returns rows on the seeds (none is written always empty)."""
    tree = sqlglot.parse_one(sql, read=read)
    with_ = tree.args["with_"]
    for cte in with_.expressions:
        probe = exp.select(exp.Count(this=exp.Star())).from_(cte.alias)
        probe.set("with_", with_.copy())
        (count,) = _fetch(con, probe.sql(dialect=read)).iloc[0]
        assert count > 0, f"{where}: CTE {cte.alias} is empty:\n{cte.sql(dialect=read, pretty=True)}"


# ---------------------------------------------------------------- `recsql dbt model`

EXTRA_MODELS = [  # inputs left out: nothing of them may appear in the SQL
    ModelSpec("lists_only", ["novelty@5", "arp@5", "coverage@5", "gini@5", "personalization@3", "diversity@5"],
              inputs={"recs": "ref('recs')", "items": "ref('items')", "interactions": "ref('interactions')"},
              options={"run_cols": ["model"]}),
    ModelSpec("no_side_inputs", ["ndcg@5", "err@5", "auc", "coverage@5"], options={"run_cols": ["model"]}),
    ModelSpec("baseline_only", ["unexpectedness@5", "serendipity@5", "recall@5"],
              inputs={"recs": "ref('recs')", "truth": "ref('truth')", "baseline": "ref('baseline')"},
              options={"run_cols": ["model"]}, output="per_user"),
]


def _model_cases() -> list[ModelSpec]:
    specs = [s for s in read_specs(ROOT / "dbt") if s.name != "dirty_recs_fail_the_build" and not s.text_ids]
    return specs + EXTRA_MODELS


@pytest.mark.parametrize("spec", _model_cases(), ids=lambda s: s.name)
def test_model_sql_on_duckdb(spec):
    """The model's SQL (dbt-duckdb's) on DuckDB: recsql.evaluate's numbers; no always-empty CTE and
    no trace of an input not given."""
    sql = render_model(spec, "duckdb")
    for role in ("items", "interactions", "baseline", "item_features", "truth"):  # catalog_in: items, else recs and truth
        if role not in spec.inputs:
            assert f"{role}_in" not in sql, (spec.name, role)
    sql = jinja2.Template(sql).render(**{role: ref.split("'")[1] for role, ref in spec.inputs.items()})
    con = _duckdb()
    _ctes_not_empty(con, sql, "duckdb", spec.name)
    options = {role: ref.split("'")[1] for role, ref in spec.inputs.items() if role != "recs"}
    expected = _expected(spec.inputs["recs"].split("'")[1], spec.metrics, spec.output, **options, **spec.options)
    keys = list(spec.options.get("run_cols", [])) + (["user_id"] if spec.output == "per_user" else [])
    _same(_fetch(con, sql), expected, keys, spec.name)


# ---------------------------------------------------------------- the recsql.evaluate macro

def _served(rng: random.Random, k: int | None) -> list[str]:
    """Served metric variants (every option written out, numbers in their interval) for a cutoff k
    (None: metrics without a cutoff too)."""
    out = []
    for name, spec in registry().items():
        for options in _variants(name):
            if served(name, options):
                continue
            for has_k in _cutoffs(name):
                if spec.full_list and has_k and k is not None:
                    continue
                if not has_k and k is not None:
                    continue
                cut = (k or rng.randint(1, 6)) if has_k else None
                if refused(_metric(name, cut, options, 0.5)):
                    continue
                numbers = {p: rng.choice([v for v in (0.3, 0.7, 0.9, 1.5, 2.5) if spec.params[p].allows(v)])
                           for p, v in options.items() if v == "#"}
                written = ",".join(f"{p}={numbers.get(p, v)}" for p, v in options.items())
                out.append(f"{name}{f'({written})' if written else ''}{'' if cut is None else f'@{cut}'}")
    return out


def _random_call(rng: random.Random) -> dict:
    runs = rng.randint(0, MAX_RUNS)
    recs, run_cols = BY_RUNS[runs]
    pool = _served(rng, None if rng.random() < 0.5 else rng.randint(1, 6))
    metrics = list(dict.fromkeys(rng.sample(pool, min(len(pool), rng.randint(1, 6)))))
    call = dict(recs=recs, metrics=metrics, run_cols=run_cols, output=rng.choice(["summary", "per_user"]),
                population=rng.choice(["relevant", "intersection", "judged"]),
                threshold=rng.choice([None, 1, 2, 0.5, 99]), ties=rng.choice(EXTRA_SWITCHES["ties"]))
    if rng.random() < 0.3:
        call.update(score_col=None, rank_col="score")
    if rng.random() < 0.3:  # a de-duplicating policy, on recommendations with duplicated keys when they have one run key
        call.update(duplicates=rng.choice(["best", "max"]), recs="recs_duplicates" if runs == 1 else recs)
    if rng.random() < 0.3:  # no relevance column: every truth row has relevance 1
        call.update(relevance_col=None)
    if rng.random() < 0.4:  # a convention: the tie rule, population and threshold its own unless given
        call.update(convention=rng.choice([c for c in CONVENTIONS if c != "recsql"]))
        if rng.random() < 0.5:  # metrics as the convention's users write them: its option defaults apply
            k = rng.randint(1, 6)
            call.update(metrics=rng.sample(BARE_METRICS, rng.randint(1, 5)) + [f"{m}@{k}" for m in rng.sample(BARE_CUT, 2)])
        for option in ("ties", "population", "threshold"):
            if rng.random() < 0.5:
                call[option] = None
        call["metrics"] = [m for m in call["metrics"] if not _own_rule(call, m)] or ["precision@3"]
    if call.get("ties") == "average":  # the metrics with an exact expected value over tied positions
        call["metrics"] = [m for m in call["metrics"] if averaged(recsql.parse_metric(m))] or ["precision@3"]
    for role in ("interactions", "items", "catalog", "baseline", "item_features"):  # a side input when a metric reads it, and some more
        if role in _side_inputs(call["metrics"]) or rng.random() < 0.2:
            call[role] = role
    return call


def _side_inputs(metrics: list[str]) -> set[str]:
    """The side inputs the metrics read: interactions (novelty, surprisal, arp), items (their prices:
    money_precision, money_recall; ...), item_features (diversity by feature vectors)."""
    return {NEED_INPUT[n] for m in map(recsql.parse_metric, metrics) for n in m.spec.requires(m.all_options())}


# Metrics with options a convention sets (map's denominator, rbp's p, ndcg's ideal, judged's denominator).
BARE_METRICS = ["map", "ndcg", "rbp", "mrr", "bpref", "r_precision", "num_rel_ret", "auc"]
BARE_CUT = ["map", "ndcg", "rbp", "judged", "precision", "recall", "hit_rate", "err"]


def _own_rule(call: dict, metric: str) -> bool:
    """Whether the call's convention computes ``metric`` under a tie rule or reading of negative
    relevance of its own (README, Conventions): the macro refuses it
    (:func:`test_macro_refuses_a_metric_its_convention_computes_its_own_way`). A population of its own
    (msr's ndcg) it computes (:func:`test_macro_metric_populations`)."""
    conv = CONVENTIONS[call["convention"]]
    rule = measure_rule(conv.measures, recsql.parse_metric(metric))
    if rule is None:
        return False
    ties = call.get("ties") or conv.ties
    has_relevance = call.get("relevance_col", "relevance") is not None
    return ((rule.ties is not None and call.get("ties") is None and rule.ties != ties)
            or (rule.negative_unjudged is not None and has_relevance and rule.negative_unjudged != conv.negative_unjudged))


def _render(package: Package, call: dict) -> str:
    args = {k: v for k, v in call.items() if k != "recs"}
    return package.evaluate(recs=call["recs"], truth="truth", **args)


def _expected_call(call: dict) -> pd.DataFrame:
    options = {k: v for k, v in call.items() if k not in ("recs", "metrics", "output")}
    return _expected(call["recs"], call["metrics"], call["output"], truth="truth", **options)


CALLS = 64


@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_macro_random_calls(adapter):
    """recsql.evaluate rendered for random metric lists, options and switches (run keys, score or
    rank, population, output, threshold, tie rule, cutoffs): recsql.evaluate's numbers, and every CTE has rows."""
    package = Package(adapter)
    con = _duckdb() if adapter == "duckdb" else _sqlite()
    rng = random.Random(f"recsql-dbt-{adapter}")
    for n in range(CALLS):
        call = _random_call(rng)
        sql = _render(package, call)
        where = f"call {n}: {call}"
        if n % 4 == 0:
            _ctes_not_empty(con, sql, adapter, where)
        keys = call["run_cols"] + (["user_id"] if call["output"] == "per_user" else [])
        _same(_fetch(con, sql), _expected_call(call), keys, where)


def test_macro_ties_item_id_desc():
    """ties='item_id_desc' orders tied scores by item id descending: on the seeds' tied scores it gives
    recsql.evaluate's numbers for that rule, which differ from ties='item_id''s."""
    package = Package("duckdb")
    con = _duckdb()
    metrics = ["precision@1", "ndcg@3", "mrr@5", "map@5", "auc@5"]
    got = {}
    for ties in ("item_id", "item_id_desc"):
        call = dict(recs="recs", metrics=metrics, run_cols=["model"], output="per_user", ties=ties)
        got[ties] = _fetch(con, _render(package, call))
        _same(got[ties], _expected_call(call), ["model", "user_id"], ties)
    first, second = (got[t].sort_values(["model", "user_id"]).reset_index(drop=True) for t in ("item_id", "item_id_desc"))
    changed = [m for m in map(output_name, metrics) if not np.allclose(first[m], second[m], equal_nan=True)]
    assert changed, "ties='item_id_desc' gave ties='item_id''s numbers"


AVERAGE_CASES = [["precision@2", "recall@3", "hit_rate@1", "hit_rate@3", "ndcg@3", "num_rel_ret@2"],
                 ["ndcg(gain=exponential)@4", "dcg(discount=jarvelin)@3", "cg@2", "f1@3", "rbp(p=0.7)@5"],
                 ["ndcg", "rbp", "idcg", "num_rel_ret"], ["ndcg(ideal=k_slots)@3", "idcg(ideal=k_slots)@4", "precision@1"]]


@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_macro_ties_average(adapter):
    """ties='average': the expected value over every order of tied items (the seeds' lists have tied
    scores), for each metric that has one, cut or whole, k slots included, with 0-2 run keys, both
    outputs, score or rank and a convention: recsql.evaluate's numbers; they differ from ties='item_id''s."""
    package = Package(adapter)
    con = _duckdb() if adapter == "duckdb" else _sqlite()
    differs = set()
    for n, metrics in enumerate(AVERAGE_CASES):
        for output in ("summary", "per_user"):
            for runs in (0, 1, 2):
                recs, run_cols = BY_RUNS[runs]
                call = dict(recs=recs, metrics=metrics, run_cols=run_cols, output=output, ties="average",
                            **({"convention": "trec"} if n == 1 else {}), **({"rank_col": "score", "score_col": None} if n == 2 else {}))
                sql = _render(package, call)
                keys = run_cols + (["user_id"] if output == "per_user" else [])
                got = _fetch(con, sql)
                _same(got, _expected_call(call), keys, str(call))
                if output == "per_user":
                    fixed = _fetch(con, _render(package, {**call, "ties": "item_id"}))
                    got, fixed = (f.sort_values(keys).reset_index(drop=True) for f in (got, fixed))
                    differs |= {m for m in map(output_name, metrics) if not np.allclose(got[m], fixed[m], equal_nan=True)}
    assert {"hit_rate_at_1", "precision_at_2", "ndcg_at_3"} <= differs, differs


# Integer item ids whose order as text differs from their order as numbers ('9' after '10'), tied; a
# negative judgment (unjudged under trec and ir_measures), judgments below the threshold (no gain under ranx);
# users judged only with negative values, with a list (5) and without (4): in trec's population.
TIED_RECS = pd.DataFrame({"user_id": [1, 1, 1, 1, 2, 2, 2, 5, 5], "item_id": [9, 10, 100, 7, 9, 10, 11, 1, 2],
                          "score": [0.5, 0.5, 0.4, 0.3, 0.9, 0.9, 0.9, 0.2, 0.1]})
TIED_TRUTH = pd.DataFrame({"user_id": [1, 1, 1, 1, 2, 2, 3, 4, 4, 5], "item_id": [9, 10, 100, 8, 10, 12, 1, 1, 2, 2],
                           "relevance": [1, -1, 2, 3, 1, 0, 1, -1, -2, -1]})
CONVENTION_METRICS = ["precision@1", "ndcg@3", "map@3", "mrr", "rbp@3", "bpref", "ndcg", "map", "judged@2", "err@3"]


@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_macro_conventions(adapter):
    """convention= as in recsql.evaluate: each convention's tie rule (trec and ir_measures order tied
    integer ids as text, '9' after '10'), population, reading of negative relevance, gains and option
    defaults give recsql.evaluate's numbers, per user and summarised; under trec the tie rule differs
    from ties='item_id_desc' on these ids, so the ids are compared as text."""
    package = Package(adapter)
    con = _duckdb() if adapter == "duckdb" else _sqlite()
    for name, frame in (("tied_recs", TIED_RECS), ("tied_truth", TIED_TRUTH)):
        if adapter == "duckdb":
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM frame")
        else:
            frame.to_sql(name, con, index=False)
    got = {}
    for convention in CONVENTIONS:
        for output in ("per_user", "summary"):
            metrics = [m for m in CONVENTION_METRICS if not _own_rule(dict(convention=convention), m)]
            sql = package.evaluate(recs="tied_recs", truth="tied_truth", metrics=metrics, output=output,
                                   convention=convention)
            expected = recsql.evaluate(TIED_RECS, TIED_TRUTH, metrics, convention=convention)
            frame = expected.per_user if output == "per_user" else expected.summary
            frame = frame.rename(columns={m.column: output_name(m.column) for m in expected.metrics})
            got[convention, output] = _fetch(con, sql)
            _same(got[convention, output], frame, ["user_id"] if output == "per_user" else [], f"{convention} {output}")
    as_numbers = _fetch(con, package.evaluate(recs="tied_recs", truth="tied_truth", metrics=["precision@1"],
                                              output="per_user", ties="item_id_desc", population="judged"))
    trec = got["trec", "per_user"].sort_values("user_id")
    # user 1: 9 (relevant) before 10 as text, 10 (judged -1) first as numbers; user 2: 9 first as text,
    # 11 as numbers, neither relevant; user 3: no list; users 4 and 5: judged only -1 (trec_eval -c counts them)
    assert list(trec["precision_at_1"]) == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert list(trec["user_id"]) == [1, 2, 3, 4, 5]
    assert list(as_numbers.sort_values("user_id")["precision_at_1"]) == [0.0, 0.0, 0.0, 0.0, 0.0]


def test_macro_refuses_a_metric_its_convention_computes_its_own_way():
    """A metric a convention ranks or judges unlike its others (ir_measures' RR@k and Judged@k: another
    tie rule and reading of negative judgments) is a compiler error naming what to do; with
    population= given, msr's ndcg is the plain one."""
    package = Package("duckdb")
    con = _duckdb()
    for convention, metric, options in (("ir_measures", "mrr@5", {}), ("ir_measures", "judged@5", {}),
                                        ("ir_measures", "mrr@5", {"ties": "item_id"})):
        with pytest.raises(CompilerError, match=f"convention='{convention}' computes '{re.escape(metric)}' unlike its "
                                                "other metrics.*ranked and judged a second time.*`recsql dbt model`"):
            package.evaluate(recs="recs", truth="truth", metrics=["precision@3", metric], run_cols=["model"],
                             convention=convention, **options)
    call = dict(recs="recs", metrics=["ndcg@5", "map@5"], run_cols=["model"], output="summary", convention="msr",
                population="intersection")
    _same(_fetch(con, _render(package, call)), _expected_call(call), ["model"], str(call))
    call = dict(call, convention="ir_measures", metrics=["mrr", "map@5"], population=None)  # RR without a cutoff: as trec
    _same(_fetch(con, _render(package, call)), _expected_call(call), ["model"], str(call))


@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_macro_metric_populations(adapter):
    """A metric its convention averages over a population of its own (Microsoft Recommenders' ndcg:
    every truth user, the others the users with both truth and a list) is computed as recsql.evaluate
    computes it: its values kept for its own users, the per-user rows of either population, and the
    summary's count of its users, n_users_ndcg, beside n_users (written only when a metric averages
    over the call's population). The fixture has truth users without a list, so the two differ."""
    package = Package(adapter)
    con = _duckdb() if adapter == "duckdb" else _sqlite()
    cases = [dict(metrics=["ndcg@3", "precision@2", "ndcg@5", "map@4"], run_cols=["model"]),
             dict(metrics=["ndcg@3"], run_cols=[]), dict(metrics=["recall@2", "ndcg"], run_cols=["model", "variant"])]
    seen = set()
    for case in cases:
        recs = BY_RUNS[len(case["run_cols"])][0]
        for output in ("summary", "per_user"):
            call = dict(recs=recs, output=output, convention="msr", **case)
            got, expected = _fetch(con, _render(package, call)), _expected_call(call)
            _same(got, expected, case["run_cols"] + (["user_id"] if output == "per_user" else []), str(call))
            if output == "summary":
                seen.add(tuple(c for c in got.columns if c.startswith("n_users")))
                _same_order(got, expected, str(call))
                if "precision@2" in case["metrics"] or "recall@2" in case["metrics"]:
                    assert (got["n_users_ndcg"] != got["n_users"]).any(), str(call)
    assert seen == {("n_users", "n_users_ndcg"), ("n_users_ndcg",)}


SIDE_CASES = [["novelty@3", "ndcg@3", "surprisal@2"], ["arp@4"], ["surprisal@5", "precision@2", "arp@1", "mrr"],
              ["novelty(p=interactions)@2", "err@3", "kendall@4"], ["money_precision@3", "money_recall@2", "ndcg@3"],
              ["money_recall@4", "arp@3", "spearman@4"], ["money_precision@1"],
              ["novelty(p=items)@3", "money_precision@2", "ndcg@3"], ["novelty(p=items)@4", "novelty@2", "mrr"],
              # the items' categories compared in pairs (diversity), with kendall's pairs, with the items'
              # other attributes; and pairs and attributes read without categories
              ["diversity@3", "ndcg@3"], ["diversity@4", "kendall@3", "money_precision@2", "diversity(by=category)@2"],
              ["kendall@4", "money_recall@3", "novelty(p=items)@2"],
              # the item feature vectors compared in pairs, alone, with the categories and kendall's pairs, with
              # the items' other attributes
              ["diversity(by=features)@3", "ndcg@3"],
              ["diversity(by=features)@4", "diversity@3", "kendall@2", "money_precision@2"],
              ["diversity(by=features)@2", "novelty(p=items)@3", "mrr"]]


@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_macro_side_inputs(adapter):
    """interactions= and items= and the metrics that read them (novelty, surprisal, arp; the money
    metrics, novelty(p=items) and diversity: README, "Beyond accuracy"), alone or with truth metrics and other
    optional parts of the stage, 0-2 run keys, both outputs: recsql.evaluate's numbers; the list-only
    metrics over the users with a list (the seeds have some without truth: n_users_with_recs beside
    n_users). Without those metrics interactions= and items= change nothing; novelty with items= and
    no interactions= reads the items' probabilities (p=items), as recsql.evaluate does."""
    package = Package(adapter)
    con = _duckdb() if adapter == "duckdb" else _sqlite()
    for n, metrics in enumerate(SIDE_CASES):
        for output in ("summary", "per_user"):
            runs = n % 3
            recs, run_cols = BY_RUNS[runs]
            call = dict(recs=recs, metrics=metrics, run_cols=run_cols, output=output,
                        **{role: role for role in _side_inputs(metrics)})
            sql = _render(package, call)
            assert ("interactions_in" in sql) == ("interactions" in call) and ("items_in" in sql) == ("items" in call)
            assert ("features_in" in sql) == ("item_features" in call)
            assert ("interaction_users" in sql) == any(m.startswith(("novelty", "surprisal")) and "p=items" not in m
                                                       for m in metrics)
            keys = run_cols + (["user_id"] if output == "per_user" else [])
            got, expected = _fetch(con, sql), _expected_call(call)
            _same(got, expected, keys, str(call))
            if output == "summary":
                _same_order(got, expected, str(call))
            if adapter == "duckdb":
                _ctes_not_empty(con, sql, "duckdb", str(call))
    for output in ("summary", "per_user"):  # novelty fitted to the inputs given: p=items
        call = dict(recs="recs_two_keys", metrics=["novelty@3", "precision@2"], run_cols=["model", "variant"],
                    output=output, items="items")
        sql = _render(package, call)
        assert "interactions_in" not in sql and "items_in" in sql
        got, expected = _fetch(con, sql), _expected_call(call)
        _same(got, expected, call["run_cols"] + (["user_id"] if output == "per_user" else []), str(call))
        assert not got["novelty_at_3"].isna().all()
    call = dict(recs="recs", metrics=["ndcg@3"], run_cols=["model"], output="summary")
    assert "interactions" not in _render(package, call)
    _same(_fetch(con, _render(package, {**call, "interactions": "interactions", "items": "items", "item_features": "item_features"})),
          _expected_call(call), ["model"], "unused")
    assert "features_in" not in _render(package, {**call, "item_features": "item_features"})


def _side_calls(cases: list[list[str]], sides: tuple[dict, ...], inputs_of):
    """(call, side inputs) for each metric list with each set of side inputs (besides those its metrics
    read, ``inputs_of``), at 0-2 run keys, both outputs."""
    for n, metrics in enumerate(cases):
        recs, run_cols = BY_RUNS[n % 3]
        for side in sides:
            for output in ("summary", "per_user"):
                yield dict(recs=recs, metrics=metrics, run_cols=run_cols, output=output,
                           **{**{role: role for role in inputs_of(metrics)}, **side}), side


def _checked_call(package: Package, con, adapter: str, call: dict) -> tuple[str, pd.DataFrame]:
    """A call rendered and run: its numbers (and a summary's column order) are recsql.evaluate's, and on
    DuckDB no CTE of a summary is empty; the SQL and the result."""
    sql = _render(package, call)
    got, expected = _fetch(con, sql), _expected_call(call)
    _same(got, expected, call["run_cols"] + (["user_id"] if call["output"] == "per_user" else []), str(call))
    if call["output"] == "summary":
        _same_order(got, expected, str(call))
        if adapter == "duckdb":
            _ctes_not_empty(con, sql, "duckdb", str(call))
    return sql, got


GLOBAL_CASES = [["coverage@3"], ["coverage@3", "gini@2", "personalization@3", "ndcg@3"],
                ["personalization@2", "arp@3", "kendall@3", "precision@1"], ["gini@4", "coverage@2", "mrr", "gini@2"]]
# The catalog coverage and gini count: the catalog input, else the items input, else every item of truth and recs.
CATALOGS = ({}, {"catalog": "catalog"}, {"items": "items"}, {"catalog": "catalog", "items": "items", "interactions": "interactions"})


@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_macro_global_metrics(adapter):
    """The global metrics (coverage, gini, personalization: one value per run, README "Beyond
    accuracy") alone or with others, over the catalog input, the items or every item of truth and
    recs, 0-2 run keys: recsql.evaluate's summary, with no user count of their own, and per-user
    rows without them (none at all when only they are asked). The seeds' catalog differs from the
    items of truth and recs (items never recommended, a recommended item outside it), so which
    catalog is read shows in the numbers."""
    package = Package(adapter)
    con = _duckdb() if adapter == "duckdb" else _sqlite()
    seen: dict[str, set] = {}
    for call, side in _side_calls(GLOBAL_CASES, CATALOGS, _side_inputs):
        sql, got = _checked_call(package, con, adapter, call)
        metrics = call["metrics"]
        assert ("catalog_in" in sql) == any(m.startswith(("coverage", "gini", "personalization")) for m in metrics)
        if call["output"] == "summary" and "coverage@3" in metrics:
            seen.setdefault(side.get("catalog", side.get("items", "")), set()).add(tuple(got["coverage_at_3"]))
        if call["output"] == "per_user":
            assert not any(c.startswith(("coverage", "gini", "personalization")) for c in got.columns)
            assert len(got) > 0 or metrics == ["coverage@3"], str(call)
    assert seen["catalog"] != seen[""], "the catalog input changed no coverage"


BASELINE_CASES = [["unexpectedness@3"], ["serendipity@3", "ndcg@3", "precision@1"],
                  ["serendipity@2", "arp@2", "kendall@3", "coverage@2"], ["unexpectedness@1", "mrr", "serendipity@4"]]
# serendipity's baseline: the baseline input, else the interactions' most popular items
BASELINES = ({"baseline": "baseline"}, {"interactions": "interactions"}, {"baseline": "baseline", "interactions": "interactions"})


@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_macro_baseline(adapter):
    """baseline= with unexpectedness and serendipity (README "Beyond accuracy": the baseline's top k,
    else for serendipity the k most popular items of interactions), alone or with others, 0-2 run
    keys, both outputs: recsql.evaluate's numbers and the baseline's checks; unexpectedness over the
    users with a list. serendipity's numbers differ between the two baselines on the seeds."""
    package = Package(adapter)
    con = _duckdb() if adapter == "duckdb" else _sqlite()
    seen: dict[str, set] = {}
    # the inputs the other metrics read (serendipity's baseline is the case's)
    others = lambda metrics: _side_inputs([m for m in metrics if not m.startswith("serendipity")])  # noqa: E731
    for call, side in _side_calls(BASELINE_CASES, BASELINES, others):
        metrics = call["metrics"]
        if any(m.startswith("unexpectedness") for m in metrics) and "baseline" not in side:
            continue
        sql, got = _checked_call(package, con, adapter, call)
        assert ("baseline_in" in sql) == ("baseline" in side), str(call)
        # the popular items are built when interactions are given (and read by serendipity only without a baseline)
        assert ("item_popularity" in sql) == ("interactions" in call and any(m.startswith(("serendipity", "arp")) for m in metrics)), str(call)
        if call["output"] == "summary" and "serendipity@3" in metrics:
            seen.setdefault("baseline" if "baseline" in side else "popular", set()).add(tuple(got["serendipity_at_3"]))
    assert seen["baseline"] != seen["popular"], "serendipity gave the same numbers with both baselines"


# Beyond the run keys the statements are composed for (MAX_RUNS): recs_four_keys with a fifth key (text)
# and a sixth (numbers), each value of a new key a copy of the lists with their scores rotated.
MORE_RUNS = {5: ["model", "variant", "fold", "seed", "shard"], 6: ["model", "variant", "fold", "seed", "shard", "slice"]}
MANY_KEYS_METRICS = ["ndcg@3", "map@5", "mrr", "auc@4", "kendall@3", "spearman@4", "err@3", "ndcg(ideal=list)@3",
                     "ndcg(ideal=k_slots)@2", "coverage@3", "personalization@2", "novelty@3", "money_precision@3",
                     "diversity(by=category)@3", "diversity(by=features)@3", "unexpectedness@3", "serendipity@3"]


def _more_keys(runs: int) -> pd.DataFrame:
    frame = with_run_key(_seed("recs_four_keys"), "shard", ("p", "q"))
    return frame if runs == 5 else with_run_key(frame, "slice", (7, 8))


@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_macro_any_number_of_run_keys(adapter):
    """Every list of run keys in the package's statements is a loop over the call's run columns
    (recsql.dbt.run_loops): with 5 and 6 run keys, more than the statements are composed for, both
    outputs, score or rank, every stage part and side input: recsql.evaluate's numbers. No adapter's
    statement refuses more run keys."""
    package = Package(adapter)
    con = _duckdb() if adapter == "duckdb" else _sqlite()
    sides = {role: role for role in ("items", "interactions", "catalog", "baseline", "item_features")}
    for runs, run_cols in MORE_RUNS.items():
        frame = _more_keys(runs)
        name = f"recs_{runs}_keys"
        if adapter == "duckdb":
            con.register(name, frame)
        else:
            frame.to_sql(name, con, index=False)
        for output, order in (("summary", {}), ("per_user", {}), ("summary", {"score_col": None, "rank_col": "score"})):
            call = dict(metrics=MANY_KEYS_METRICS, run_cols=run_cols, output=output, **order, **sides)
            sql = package.evaluate(recs=name, truth="truth", **call)
            options = {k: v for k, v in call.items() if k not in ("metrics", "output", *sides)}
            result = recsql.evaluate(frame, _seed("truth"), MANY_KEYS_METRICS, **{r: _seed(r) for r in sides}, **options)
            expected = result.per_user if output == "per_user" else result.summary
            expected = expected.rename(columns={m.column: output_name(m.column) for m in result.metrics})
            keys = run_cols + (["user_id"] if output == "per_user" else [])
            _same(_fetch(con, sql), expected, keys, f"{runs} run keys, {output}, {order}")
    for path in sorted((ROOT / "dbt" / "macros" / "evaluate_sql").glob("*.sql")):
        assert PER_RUNS not in path.read_text(), path.name


def test_macro_missing_side_input():
    """A metric whose side input is missing fails with recsql.evaluate's message, word for word (the
    other choice of an option not written included); the side inputs the macro does not take yet fail
    naming `recsql dbt model`."""
    package = Package("duckdb")
    for metric in ("novelty@5", "novelty(p=interactions)@5", "novelty(p=items)@5", "surprisal@3", "arp@2", "money_precision@3", "money_recall@4",
                   "unexpectedness@3", "serendipity@4", "diversity@3", "diversity(by=category)@3"):
        with pytest.raises(recsql.RecsqlError) as python:
            recsql.evaluate(_seed("recs"), _seed("truth"), ["precision@3", metric], run_cols=["model"])
        with pytest.raises(CompilerError) as macro:
            package.evaluate(recs="recs", truth="truth", metrics=["precision@3", metric], run_cols=["model"])
        assert str(macro.value) == f"recsql.evaluate: {python.value}"
    # a column named in the message is the call's own
    for metric, option in (("novelty(p=items)@5", "probability_col"), ("diversity@5", "category_col")):
        with pytest.raises(recsql.RecsqlError) as python:
            recsql.evaluate(_seed("recs"), _seed("truth"), [metric], run_cols=["model"], **{option: "c"})
        with pytest.raises(CompilerError) as macro:
            package.evaluate(recs="recs", truth="truth", metrics=[metric], run_cols=["model"], **{option: "c"})
        assert "'c'" in str(python.value) and str(macro.value) == f"recsql.evaluate: {python.value}"
    # feature vectors: from item_features= rows only (recsql.evaluate also reads an array column of items=
    # on DuckDB), so the macro's fix names item_features= alone, with the call's columns
    for items in ({}, {"items": "items"}):
        with pytest.raises(CompilerError) as macro:
            package.evaluate(recs="recs", truth="truth", metrics=["precision@3", "diversity(by=features)@3"],
                             feature_col="f", value_col="v", **items)
        assert str(macro.value) == ("recsql.evaluate: metric 'diversity(by=features)@3' needs item feature vectors: pass "
                                    "item_features= with rows ('item_id', 'f', 'v'); recsql.evaluate in dbt does not read "
                                    "them from an array column of items= (a model written by `recsql dbt model` for DuckDB does)")


TEXT_METRICS = ["ndcg@3", "precision@2", "recall@4", "mrr", "hit_rate@1", "map@4"]


@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_macro_text_ids(adapter):
    """text_ids: the ids named are compared under the adapter's binary collation, as recsql.evaluate
    compares text ids ('A' and 'a' two items, ties in byte order); the seeds' ids differ only in case.
    Without text_ids (and dbt not executing, so nothing is read from the warehouse) no COLLATE is written;
    a name that is not an id column is refused with evaluate's message."""
    package = Package(adapter)
    con = _duckdb() if adapter == "duckdb" else _sqlite()
    collate = {"duckdb": 'COLLATE "binary"', "sqlite": 'COLLATE "BINARY"'}[adapter]
    for text_ids in (["user_id", "item_id"], "item_id"):
        for output in ("summary", "per_user"):
            sql = package.evaluate(recs="recs_text", truth="truth_text", metrics=TEXT_METRICS, output=output,
                                   text_ids=text_ids)
            assert sql.count(collate) == 2 * len([text_ids] if isinstance(text_ids, str) else text_ids), sql
            expected = _expected("recs_text", TEXT_METRICS, output, truth="truth_text")
            _same(_fetch(con, sql), expected, ["user_id"] if output == "per_user" else [], f"{text_ids} {output}")
    plain = package.evaluate(recs="recs_text", truth="truth_text", metrics=TEXT_METRICS)
    assert "COLLATE" not in plain
    with pytest.raises(recsql.RecsqlError) as python:
        recsql.to_sql(TEXT_METRICS, "recs_text", "truth_text", text_ids=["user"])
    with pytest.raises(CompilerError) as macro:
        package.evaluate(recs="recs_text", truth="truth_text", metrics=TEXT_METRICS, text_ids=["user"])
    assert str(macro.value) == f"recsql.evaluate: {python.value}"


FEATURE_CASES = [["err@5"], ["pfound(p_break=0.3)@4", "err(max_grade=2)", "ndcg@3"], ["kendall@4", "kendall@2"],
                 ["spearman@3", "spearman@5"], ["ndcg(ideal=list)@3", "idcg(ideal=list)@5", "map@5"],
                 ["ndcg(ideal=k_slots)@4", "idcg(gain=exponential,ideal=k_slots)@2"],
                 ["err@5", "kendall@3", "spearman@4", "ndcg(ideal=list)@3", "ndcg(ideal=k_slots)@5",
                  "pfound(max_grade=3,p_break=0.2)", "pfound(max_grade=3,p_break=0.4)@2", "precision@3"],
                 # auc's tie bounds (a factorised switch, with the wide stacked and ranked)
                 ["auc@4", "ndcg@3"], ["auc", "auc@2", "map"], ["auc@5", "err@3", "kendall@4"]]


@pytest.mark.parametrize("adapter", ["duckdb", "sqlite"])
def test_macro_stage_features(adapter):
    """The metrics that need an optional part of the ranked-rows stage (cascades for err and pfound,
    pairs for kendall, rank correlation rows for spearman, the list's own ideal order, k slots, auc's
    tie bounds), each alone and all together, with 0-2 run keys and both outputs: recsql.evaluate's
    numbers, and every CTE of the statement has rows (a part nobody asked for is not written)."""
    package = Package(adapter)
    con = _duckdb() if adapter == "duckdb" else _sqlite()
    for metrics in FEATURE_CASES:
        for output in ("summary", "per_user"):
            for runs in (0, 1, 2):
                recs, run_cols = BY_RUNS[runs]
                call = dict(recs=recs, metrics=metrics, run_cols=run_cols, output=output)
                sql = _render(package, call)
                where = str(call)
                _ctes_not_empty(con, sql, adapter, where)
                keys = run_cols + (["user_id"] if output == "per_user" else [])
                _same(_fetch(con, sql), _expected_call(call), keys, where)
    plain = _render(package, dict(recs="recs", metrics=["ndcg@3", "map@5"], run_cols=["model"], output="summary"))
    for cte in ("cascade_rows", "list_pairs", "corr_rows", "list_ideal", "slots"):
        assert f"{cte} AS" not in plain, cte


def test_macro_refuses_what_it_does_not_serve():
    """A metric or option the macro does not compute is a compiler error naming `recsql dbt model`
    (ties='average': its expected value over tied positions exists for a few metrics only, and the
    macro's statements are composed for every served metric); a value evaluate refuses, or more run
    columns than the macro has statements for, is a compiler error too."""
    package = Package("duckdb")
    unserved = [f"{name}@5" if registry()[name].k_rule != "none" else name for name in registry()
                if all(served(name, o) for o in _variants(name))]
    for name in registry():  # and each option choice it does not serve, its options written in any order
        spec = registry()[name]
        for options in _variants(name):
            if served(name, options) and not all(served(name, o) for o in _variants(name)):
                written = ",".join(f"{p}={'0.5' if v == '#' else v}" for p, v in reversed(options.items()))
                unserved.append(f"{name}({written})" + ("@5" if spec.k_rule != "none" else ""))
    assert unserved == []  # every metric of the registry, with every choice of its options
    # options it does not serve, or not valid for evaluate either
    refusals = [(dict(metrics=["ndcg(ideal=list)"]), "metric 'ndcg\\(ideal=list\\)' needs a cutoff with these options"),
                (dict(metrics=["ndcg(ideal=k_slots)@10001"]), "ideal=k_slots supports k <= 10000 .*; got k = 10001"),
                (dict(ties="random"), "ties='random' is not valid; choose one of item_id, item_id_desc, average"),
                (dict(metrics=["dcg(discount=1/rank)@5"]),
                 r"option discount=1/rank is not valid; choose one of log2, jarvelin \(a custom discount is SQL .*"
                 r"write this model with `recsql dbt model`\)"),
                (dict(metrics=["ndcg(discount=1/LOG2(rank+1))@5"]),
                 r"only the discounts log2 and jarvelin are served \(a custom discount is SQL .*`recsql dbt model`\)")]
    for options, message in refusals:
        with pytest.raises(CompilerError, match=message):
            package.evaluate(recs="recs", truth="truth", **{"metrics": ["ndcg@5"], "run_cols": ["model"], **options})
    for metric in ("map@5", "ndcg(ideal=list)@5", "auc@5", "err@3"):  # no exact expected value under ties='average'
        with pytest.raises(recsql.RecsqlError) as python:
            recsql.to_sql(["ndcg@5", metric], "recs", "truth", ties="average")
        with pytest.raises(CompilerError) as macro:
            package.evaluate(recs="recs", truth="truth", metrics=["ndcg@5", metric], ties="average")
        assert str(macro.value) == f"recsql.evaluate: {python.value}"


def test_model_takes_evaluates_inputs_and_options():
    """A model's inputs and options are recsql.Inputs' (evaluate's and to_sql's), checked by it: a bad
    value gets to_sql's error, word for word."""
    from recsql.dbt.model import _OPTIONS, ROLES
    from recsql.errors import RecsqlError
    from recsql.inputs import field_names
    assert [*ROLES, *_OPTIONS] == field_names()
    for bad in (dict(ties="random"), dict(population="all"), dict(duplicates="keep"), dict(convention="nope"),
                dict(threshold="x"), dict(score_col=None)):
        with pytest.raises(RecsqlError) as ours:
            render_model(ModelSpec("m", ["ndcg@5"], options=bad), "duckdb")
        with pytest.raises(RecsqlError) as theirs:
            recsql.to_sql(["ndcg@5"], "recs", "truth", **bad)
        assert str(ours.value) == str(theirs.value), bad
