"""Bad input, hostile names and faults (issue: clear errors, nothing lost, nothing injected).

The catalogue runs on every executed engine: each row is an input mistake, the words its
RecsqlError must contain, and the capability an engine needs to store that input at all
(support/capabilities.py: MariaDB has no NaN or infinity; SQLite stores NaN as NULL; Arrow-backed
engines read a pandas NaN as NULL)."""
from __future__ import annotations

from contextlib import ExitStack

import duckdb
import numpy as np
import pandas as pd
import pytest

import recsql
from support.capabilities import engines_with
from support.engines import ENGINES, start

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")

RECS = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [1, 2, 1], "score": [0.5, 0.4, 0.3]})
TRUTH = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 3], "relevance": [1.0, 2.0]})


def with_value(frame: pd.DataFrame, column: str, value) -> pd.DataFrame:
    """``frame`` with row 0 of ``column`` set to ``value``; None is a real NULL (nullable dtype)."""
    out = frame.copy()
    if value is None:
        nullable = {"i": "Int64", "f": "Float64"}.get(out[column].dtype.kind, "string")
        out[column] = out[column].astype(nullable)
        out.loc[0, column] = pd.NA
    else:
        out.loc[0, column] = value
    return out


NULL_OR_NAN = ("NULL", "NaN or infinite")
CATALOGUE = [
    # id, recs, truth, options, words (any of a tuple), the capability storing it needs (None: any engine)
    ("null user", with_value(RECS, "user_id", None), TRUTH, {}, ["recs column 'user_id'", "NULL"], None),
    ("null item in truth", RECS, with_value(TRUTH, "item_id", None), {}, ["truth column 'item_id'", "NULL"], None),
    ("null score", with_value(RECS, "score", None), TRUTH, {}, ["recs column 'score'", "NULL"], None),
    ("null relevance", RECS, with_value(TRUTH, "relevance", None), {}, ["truth column 'relevance'", "NULL"], None),
    ("nan score", with_value(RECS, "score", float("nan")), TRUTH, {}, ["recs column 'score'", NULL_OR_NAN], "non_finite"),
    ("infinite score", with_value(RECS, "score", float("inf")), TRUTH, {}, ["'score'", "NaN or infinite"], "non_finite"),
    ("minus infinite relevance", RECS, with_value(TRUTH, "relevance", float("-inf")), {},
     ["truth column 'relevance'", "NaN or infinite"], "non_finite"),
    ("duplicate recs", pd.concat([RECS, RECS.iloc[:1]], ignore_index=True), TRUTH, {},
     ["recs has 1 duplicated", "duplicates='best'"], None),
    ("duplicate truth", RECS, pd.concat([TRUTH, TRUTH.iloc[:1]], ignore_index=True), {},
     ["truth has 1 duplicated", "duplicates='max'"], None),
    ("text score", RECS.assign(score=["a", "b", "c"]), TRUTH, {}, ["'score'", "must be a number"], None),
    ("text relevance", RECS, TRUTH.assign(relevance=["x", "y"]), {}, ["'relevance'", "must be a number"], None),
    ("id types differ", RECS, TRUTH.assign(item_id=["1", "3"]), {}, ["item ids differ in type", "Cast one side"], None),
    ("missing column", RECS.rename(columns={"score": "points"}), TRUTH, {}, ["has no column 'score'", "score_col="], None),
    ("renamed rank column missing", RECS, TRUTH, {"rank_col": "position"}, ["'position'", "rank_col="], None),
    ("k is zero", RECS, TRUTH, {"metrics": ["ndcg@0"]}, ["k must be >= 1"], None),
    ("k is not whole", RECS, TRUTH, {"metrics": ["ndcg@2.5"]}, ["whole number"], None),
    ("unknown option", RECS, TRUTH, {"metrics": ["map(denom=k)@3"]}, ["unknown option 'denom'"], None),
    ("float id not whole", with_value(RECS.astype({"item_id": float}), "item_id", 1.5), TRUTH, {},
     ["recs column 'item_id' holds floating-point ids", "not a whole number", "Cast the column to BIGINT"], None),
    ("nan id", with_value(RECS.astype({"user_id": float}), "user_id", float("nan")), TRUTH, {},
     ["recs column 'user_id'", ("NULL", "not a whole number within ±2^53 (or NaN")], "non_finite"),
    ("relevance too large for exponential gains", RECS, TRUTH.assign(relevance=[2000.0, 1.0]),
     {"metrics": ["ndcg(gain=exponential)@3"]}, ["'relevance'", "above 1000", "gain=linear"], None),
    ("k_slots beyond its limit", RECS, TRUTH, {"metrics": ["ndcg(ideal=k_slots)@20000"]}, ["k <= 10000"], None),
]


@pytest.fixture(scope="module", params=ENGINES)
def engine(request):
    with ExitStack() as stack:
        yield start(request.param, stack)


@pytest.mark.parametrize("row", CATALOGUE, ids=[r[0] for r in CATALOGUE])
def test_catalogue(engine, row):
    _, recs, truth, options, words, needs = row
    if needs and not engine.can(needs):
        with pytest.raises(Exception):  # the engine itself refuses to store the value
            engine.load(recs if recs is not RECS else truth)
        return
    options = dict(options)
    asked = options.pop("metrics", ["ndcg@3", "map@3"])
    r, t = engine.load(recs), engine.load(truth)
    with pytest.raises(recsql.RecsqlError) as info:
        recsql.evaluate(r, t, asked, con=engine.con, **options)
    message = str(info.value)
    for word in words:
        alternatives = word if isinstance(word, tuple) else (word,)
        assert any(w in message for w in alternatives), (word, message)


def _same(got: recsql.Evaluation, want: recsql.Evaluation) -> None:
    a, b = got.per_user.astype({got.per_user.columns[0]: str}), want.per_user.astype({want.per_user.columns[0]: str})
    assert list(a.columns[1:]) == list(b.columns[1:]) and a.iloc[:, 0].tolist() == b.iloc[:, 0].tolist()
    assert np.allclose(a.iloc[:, 1:].to_numpy(float), b.iloc[:, 1:].to_numpy(float), rtol=1e-9, atol=1e-12, equal_nan=True)


def test_inputs_that_work(engine):
    """Absurdly large k, a rank column with gaps and ties, empty recs, no relevant truth."""
    r, t = engine.load(RECS), engine.load(TRUTH)
    _same(recsql.evaluate(r, t, ["ndcg@1000000"], con=engine.con), recsql.evaluate(RECS, TRUTH, ["ndcg@1000000"]))
    gaps = RECS.assign(rank=[3, 3, 9]).drop(columns="score")
    g = engine.load(gaps)
    _same(recsql.evaluate(g, t, ["mrr@5"], rank_col="rank", con=engine.con),
          recsql.evaluate(gaps, TRUTH, ["mrr@5"], rank_col="rank"))
    empty = engine.load(RECS.iloc[:0])
    result = recsql.evaluate(empty, t, ["ndcg@3", "hr@3"], con=engine.con)
    assert result.summary[["n_users", "ndcg@3", "hr@3", "users_without_recs"]].iloc[0].tolist() == [2, 0.0, 0.0, 2]
    none_relevant = engine.load(TRUTH.assign(relevance=[0.0, 0.0]))
    with pytest.warns(recsql.RecsqlWarning, match=r"no user has a relevant truth item \(relevance >= threshold = 1\) "
                      r"in the evaluation: its metrics are NULL; threshold= \(CLI: --threshold\)") as said:
        result = recsql.evaluate(r, none_relevant, ["ndcg@3"], con=engine.con)
    assert [w.filename for w in said] == [__file__]
    assert result.summary["n_users"].iloc[0] == 0 and pd.isna(result.summary["ndcg@3"].iloc[0])


HOSTILE_COLUMNS = {"user_id": "user id", "item_id": 'it"em; DROP TABLE t --', "score": "ünïcødé sçore",
                   "relevance": "select"}
HOSTILE_TABLES = ["my recs", "trüth; DROP TABLE x --"]


def test_hostile_names_work_as_names(engine):
    recs = RECS.rename(columns=HOSTILE_COLUMNS)
    truth = TRUTH.rename(columns=HOSTILE_COLUMNS)
    if not engine.can("any_table_name"):  # Spark's temporary views take identifier names only; columns are free
        r, t = engine.load(recs), engine.load(truth)
    else:
        r, t = engine.load(recs, name=HOSTILE_TABLES[0]), engine.load(truth, name=HOSTILE_TABLES[1])
    got = recsql.evaluate(r, t, ["ndcg@3", "map@3"], con=engine.con, user_col="user id",
                          item_col=HOSTILE_COLUMNS["item_id"], score_col=HOSTILE_COLUMNS["score"], relevance_col="select")
    want = recsql.evaluate(RECS, TRUTH, ["ndcg@3", "map@3"])
    _same(got, want)
    assert list(got.per_user.columns)[0] == "user id"


def test_injection_attempt_evaluates_nothing_harmful(engine):
    t = engine.load(TRUTH)
    hostile = f"recs; DROP TABLE {t} --"
    with pytest.raises(recsql.RecsqlError, match="recs"):
        recsql.evaluate(hostile, t, ["ndcg@3"], con=engine.con)
    assert engine.exists(t)


def test_failing_and_interrupted_runs_leave_nothing_behind(engine, monkeypatch):
    import recsql.engines as engines_module
    r, t = engine.load(RECS), engine.load(TRUTH)
    before = engine.tables()
    original = engines_module.runner_for

    def failing(con, **kw):
        runner = original(con, **kw)
        def boom(sql):
            raise KeyboardInterrupt
        monkeypatch.setattr(runner, "fetch", boom)
        return runner
    monkeypatch.setattr("recsql.request.runner_for", failing)
    frames = (engine.frame(RECS), engine.frame(TRUTH)) if engine.can("dataframes") else (r, t)
    with pytest.raises(KeyboardInterrupt):
        recsql.evaluate(*frames, ["ndcg@3"], con=engine.con)
    assert engine.tables() == before


@pytest.mark.parametrize("type_name,family", [
    ("BIGINT", "number"), ("double precision", "number"), ("Nullable(Int64)", "number"), ("int64", "number"),
    ("DECIMAL(10,2)", "number"), ("Float64", "number"), ("double", "number"), ("UInt32", "number"),
    ("VARCHAR", "string"), ("text", "string"), ("large_string", "string"), ("string_view", "string"),
    ("LowCardinality(String)", "string"), ("character varying", "string"), ("Utf8View", "string"),
    ("DATE", "time"), ("timestamp with time zone", "time"), ("DateTime64(3)", "time"), ("timestamp[us]", "time"),
    ("BOOLEAN", "other"), ("UNKNOWN", "unknown"),
])
def test_type_names_of_every_engine_are_recognised(type_name, family):
    from recsql.validate import family as family_of
    assert family_of(type_name) == family


@pytest.mark.parametrize("name", engines_with("closable"))
def test_a_closed_connection_is_a_clear_error(name):
    with ExitStack() as stack:
        engine = start(name, stack)
        r, t = engine.load(RECS), engine.load(TRUTH)
        engine.con.close()
        with pytest.raises(recsql.RecsqlError, match=r"^con: the .* cannot be used \(.*\); pass an open"):
            recsql.evaluate(r, t, ["ndcg@3"], con=engine.con)


# Ids of two kinds: a timestamp or a date never equals a string or a number on every engine alike
# (DuckDB casts '2024-01-01' to a date and matches it; PostgreSQL refuses to compare): refused on
# every engine, before any statement runs. SQLite has no date type (dates are text there).
@pytest.mark.parametrize("name", engines_with("time_ids"))
def test_ids_of_two_kinds_are_refused(name):
    with ExitStack() as stack:
        engine = start(name, stack)
        engine.load(pd.DataFrame({"user_id": [1], "item_id": [pd.Timestamp("2024-01-01")], "score": [1.0]}), name="trecs")
        engine.load(pd.DataFrame({"user_id": [1], "item_id": ["2024-01-01 00:00:00"]}), name="ttruth")
        engine.load(pd.DataFrame({"user_id": [1], "item_id": [20240101]}), name="ntruth")
        for truth in ("ttruth", "ntruth"):
            with pytest.raises(recsql.RecsqlError, match=r"item ids differ in type: recs column 'item_id' is .* \(dates "
                               r"or times\) but truth column 'item_id' is .*Cast one side"):
                recsql.evaluate("trecs", truth, ["hit_rate@1"], con=engine.con)


def test_time_ids_of_two_kinds_in_frames_are_refused():
    recs = pd.DataFrame({"user_id": [1], "item_id": [pd.Timestamp("2024-01-01")], "score": [1.0]})
    with pytest.raises(recsql.RecsqlError, match=r"item ids differ in type.*truth column 'item_id' is VARCHAR"):
        recsql.evaluate(recs, pd.DataFrame({"user_id": [1], "item_id": ["2024-01-01"]}), ["hit_rate@1"])
    both = pd.DataFrame({"user_id": [1], "item_id": [pd.Timestamp("2024-01-01")]})
    assert recsql.evaluate(recs, both, ["hit_rate@1"]).summary["hit_rate@1"].iloc[0] == 1.0


def test_two_columns_of_one_name_are_refused(tmp_path):
    """A DataFrame with 'score' twice, an Arrow table or a CSV header with 'score' and 'Score': engines
    reading names regardless of case (DuckDB renames the second 'score_1') would read one silently."""
    import pyarrow as pa
    truth = pd.DataFrame({"user_id": [1], "item_id": [2]})
    twice = pd.DataFrame([[1, 1, 0.9, 0.1], [1, 2, 0.1, 0.9]], columns=["user_id", "item_id", "score", "score"])
    cased = pa.Table.from_pandas(twice.set_axis(["user_id", "item_id", "score", "Score"], axis=1), preserve_index=False)
    csv = tmp_path / "recs.csv"
    csv.write_text("user_id,item_id,score,Score\n1,1,0.9,0.1\n1,2,0.1,0.9\n")
    for recs, described, names in ((twice, "DataFrame", "'score', 'score'"), (cased, "Table", "'score', 'Score'"),
                                   (str(csv), f"file '{csv}'", "'score', 'Score'")):
        with pytest.raises(recsql.RecsqlError) as info:
            recsql.evaluate(recs, truth, ["hit_rate@1"])
        assert str(info.value).startswith(f"recs ({described}) has 2 columns named 'score' ({names}")
        assert "Rename all but one" in str(info.value)
    # a repeated column the evaluation does not read is no harm
    extra = pd.DataFrame([[1, 2, 0.9, "a", "b"]], columns=["user_id", "item_id", "score", "note", "Note"])
    assert recsql.evaluate(extra, truth, ["hit_rate@1"]).summary["hit_rate@1"].iloc[0] == 1.0
    # on the command line too, named as the option the user passes
    from recsql.cli import main
    truth_csv = tmp_path / "truth.csv"
    truth.to_csv(truth_csv, index=False)
    assert main(["evaluate", str(csv), str(truth_csv), "-m", "hit_rate@1"]) != 0


@pytest.mark.parametrize("name", ["r?x", "r*x", "r[1]"])
def test_a_name_with_glob_characters_is_a_table(name):
    """Without a file ending it names no file recsql reads: to_sql and evaluate take it as a table."""
    sql = recsql.to_sql(name, "truth", ["hit_rate@1"])
    assert f'"{name}"' in sql and "read_" not in sql.lower()
    con = duckdb.connect()
    con.execute(f'CREATE TABLE "{name}" AS SELECT 1 AS user_id, 1 AS item_id, 1.0 AS score')
    con.execute("CREATE TABLE truth AS SELECT 1 AS user_id, 1 AS item_id")
    assert recsql.evaluate(name, "truth", ["hit_rate@1"], con=con).summary["hit_rate@1"].iloc[0] == 1.0
    with pytest.raises(recsql.RecsqlError, match=r"recs: table 'x\?y' does not exist in the database"):
        recsql.evaluate("x?y", "truth", ["hit_rate@1"], con=con)


@pytest.mark.parametrize("name", engines_with("outliving_views"))
def test_a_view_whose_table_was_dropped_is_named_broken(name):
    """(PostgreSQL and MariaDB keep such a view from arising: DROP TABLE needs CASCADE, or the view
    stays and fails as a missing table there.)"""
    with ExitStack() as stack:
        engine = start(name, stack)
        engine.load(RECS, name="base")
        truth = engine.load(TRUTH)
        engine.execute("CREATE VIEW v AS SELECT * FROM base")
        engine.drop("base")
        with pytest.raises(recsql.RecsqlError, match=r"^recs: view 'v' is broken, its query fails: .*base.*; "
                                                    r"recreate the view"):
            recsql.evaluate("v", truth, ["ndcg@3"], con=engine.con)


# Text that breaks a context when written into it unescaped: each is a run name, a segment value, a
# title or a column name a user may have. Every context recsql writes user text into has its escaping
# (recsql/safe_text.py), and the report and command line use it on every path (tests/test_report.py,
# the command-line test below).
HOSTILE_TEXT = {
    "script end": "</script><script>alert(1)</script>",
    "comment and script opening": "<!--<script>",
    "line separators": "a\u2028b\u2029c",
    "entity": "&amp; &lt;",
    "mathtext": "$\\frac$ and $5 vs $6",
    "right-to-left override": "abc\u202edef",
    "right-to-left letters": "שלום model",
    "terminal escape": "red\x1b[31m\x1b]0;title\x07",
    "carriage return": "ok\rEVIL",
    "C1 control": "x\x85\x9by",
}


@pytest.mark.parametrize("text", HOSTILE_TEXT.values(), ids=list(HOSTILE_TEXT))
def test_hostile_text_is_escaped_for_each_context(text):
    import html
    import json

    from recsql.safe_text import for_terminal, html_code, html_text, isolated, script_json
    shown = html_text(text)
    assert "<" not in shown.replace("<bdi>", "").replace("</bdi>", "") and ">" not in shown.replace(
        "<bdi>", "").replace("</bdi>", "")
    assert html.unescape(shown.removeprefix("<bdi>").removesuffix("</bdi>")) == text
    assert shown.startswith("<bdi>") == (not text.isascii())  # outside ASCII: isolated
    code = html_code(text)
    assert html.unescape(code.replace("<bdi>", "").replace("</bdi>", "")) == text
    block = script_json({"run": text}, ensure_ascii=False)
    assert not set(block) & {"<", ">", "&", "\u2028", "\u2029"} and json.loads(block) == {"run": text}
    drawn = isolated(text)
    assert drawn == text if text.isascii() else drawn == f"\u2068{text}\u2069"
    said = for_terminal(text)
    assert said.isprintable() and (said == text) == text.isprintable()


def test_the_command_line_never_lets_a_name_drive_the_terminal(tmp_path, capsys):
    """A run name or a column name with an escape sequence, a carriage return or a direction override:
    the table and the error line show it escaped (csv and json print the data as it is)."""
    from recsql.cli import main
    recs = RECS.assign(model=["red\x1b[31m", "red\x1b[31m", "abc\u202edef"])
    path = tmp_path / "recs.parquet"
    recs.to_parquet(path, index=False)
    truth = tmp_path / "truth.parquet"
    TRUTH.to_parquet(truth, index=False)
    assert main(["evaluate", str(path), str(truth), "-m", "ndcg@3", "--run-col", "model"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "red\\x1b[31m" in out and "abc\\u202edef" in out
    assert main(["evaluate", str(path), str(truth), "-m", "ndcg@3", "--run-col", "model", "--format", "csv"]) == 0
    assert "red\x1b[31m" in capsys.readouterr().out  # data formats: the value itself
    assert main(["compare", str(path), str(truth), "-m", "ndcg@3", "--run-col", "model", "--resamples", "10"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "abc\\u202edef" in out
    assert main(["evaluate", str(path), str(truth), "-m", "ndcg@3", "--user-col", "u\x1b[2J\r\u202e"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("recsql: error:") and err.rstrip("\n").isprintable(), err


def test_the_console_command_shows_warnings_escaped():
    """recsql's console entry displays warnings (which may quote a name) through the same escaping."""
    import io

    from recsql.entry import _show_warning
    shown = io.StringIO()
    _show_warning(recsql.RecsqlWarning("column 'x\x1b[2J\u202e' is odd"), recsql.RecsqlWarning, "f.py", 1, shown, "")
    assert "\x1b" not in shown.getvalue() and "x\\x1b[2J\\u202e" in shown.getvalue()
