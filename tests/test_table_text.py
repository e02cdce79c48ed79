"""recsql.table_text writes a result table as pandas does (``to_string(index=False)`` with six decimals, the
command line's table format), from the Arrow rows DuckDB returns, so ``recsql evaluate`` can print its summary
without importing pandas. The reference is pandas itself, on the DataFrame DuckDB's ``.df()`` makes of the same
rows (as ``Evaluation.summary`` is made): random tables of the column types a summary has must give the same
text, and any other table must be left to pandas (None), never written differently."""
from __future__ import annotations

import duckdb
import pyarrow as pa
from hypothesis import given, settings, strategies as st

import recsql
from recsql.cli_output import FORMATS, summary_text
from recsql.table_text import WIDEST, lists_text, table_text

NAMES = st.text(st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")), min_size=1,
                max_size=20).filter(lambda name: name == name.strip() and name.isprintable())
TEXT = st.text(st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")), max_size=WIDEST)
FLOATS = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True, min_value=None, max_value=None,
                                        width=64).filter(lambda v: v != v or abs(v) < 1e30))
INTS = st.integers(-2 ** 63, 2 ** 63 - 1)
# (Arrow type, values without NULL, or with) of each plain column type
PLAIN = {"double": (pa.float64(), FLOATS), "bigint": (pa.int64(), INTS), "integer": (pa.int32(), st.integers(-2 ** 31, 2 ** 31 - 1)),
         "utinyint": (pa.uint8(), st.integers(0, 255)), "boolean": (pa.bool_(), st.booleans()), "varchar": (pa.string(), TEXT)}


def pandas_text(table: pa.Table) -> tuple[str, pa.Table]:
    """pandas' table of ``table`` as DuckDB makes its DataFrame, and the Arrow rows DuckDB returns for it."""
    con = duckdb.connect()
    con.register("t", table)
    return FORMATS["table"](con.sql("SELECT * FROM t").df()), con.sql("SELECT * FROM t").to_arrow_table()


@st.composite
def tables(draw, kinds=st.sampled_from(sorted(PLAIN))):
    rows = draw(st.integers(1, 6))
    names = draw(st.lists(NAMES, min_size=1, max_size=5, unique_by=str.lower))
    columns = {}
    for name in names:
        type_, values = PLAIN[draw(kinds)]
        columns[name] = pa.array(draw(st.lists(values, min_size=rows, max_size=rows)), type_)
    return pa.table(columns)


@settings(max_examples=300, deadline=None)
@given(tables())
def test_a_table_of_plain_columns_is_written_as_pandas_writes_it(table):
    expected, returned = pandas_text(table)
    written = table_text(returned)
    assert written is not None
    assert recsql.safe_text.for_terminal(written) == expected


ANY_TEXT = st.text(max_size=WIDEST + 10)
OTHER = {"text with breaks": (pa.string(), st.one_of(st.none(), ANY_TEXT)),
         "whole numbers with NULL": (pa.int64(), st.one_of(st.none(), INTS)),
         "any double": (pa.float64(), st.one_of(st.none(), st.floats())),
         "float": (pa.float32(), st.floats(width=32)), "date": (pa.date32(), st.dates()),
         "decimal": (pa.decimal128(10, 2), st.decimals(-10 ** 7, 10 ** 7, places=2, allow_nan=False))}


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_other_table_is_left_to_pandas_or_written_as_it_writes_it(data):
    kinds = {**PLAIN, **OTHER}
    rows = data.draw(st.integers(0, 4))
    names = data.draw(st.lists(st.text(min_size=1, max_size=WIDEST + 5), min_size=1, max_size=4,
                               unique_by=str.lower))
    columns = {}
    for name in names:
        type_, values = kinds[data.draw(st.sampled_from(sorted(kinds)))]
        columns[name] = pa.array(data.draw(st.lists(values, min_size=rows, max_size=rows)), type_)
    expected, returned = pandas_text(pa.table(columns))
    written = table_text(returned)
    assert written is None or recsql.safe_text.for_terminal(written) == expected


def test_the_summary_of_an_evaluation_prints_as_its_dataframe_does():
    result = recsql.evaluate("fixtures/data/recs.parquet", "fixtures/data/truth.parquet",
                             ["ndcg@10", "map@10", "coverage@10"], run_cols="model")
    assert table_text(result.rows.arrow("summary")) is not None
    assert summary_text(result, "table") == FORMATS["table"](result.summary)
    assert summary_text(result, "csv") == FORMATS["csv"](result.summary)
    assert result.summary.shape[0] == 2 and "n_users" in result.summary.columns


CELLS = st.one_of(st.lists(TEXT, min_size=1, max_size=5), st.lists(INTS, min_size=1, max_size=5),
                  st.lists(st.booleans(), min_size=1, max_size=5),
                  st.lists(st.one_of(st.integers(-2 ** 70, 2 ** 70), st.none(), st.floats(), TEXT), min_size=1,
                           max_size=5))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(NAMES, CELLS, min_size=1, max_size=4))
def test_columns_of_python_values_are_written_as_pandas_writes_their_dataframe(columns):
    """The command line's compare table (run labels, text cells) is written as pandas writes the DataFrame it
    makes of the same lists, or left to pandas."""
    import pandas as pd
    rows = min(len(cells) for cells in columns.values())
    columns = {name: cells[:rows] for name, cells in columns.items()}
    written = lists_text(columns)
    assert written is None or written == pd.DataFrame(columns).to_string(index=False)
    plain = all({type(c) for c in cells} in ({str}, {bool}, {int}) and all(-2 ** 63 <= c < 2 ** 63 for c in cells
                                                                            if type(c) is int)
                for cells in columns.values())
    assert plain <= (written is not None) or any(len(c) > WIDEST for c in columns)


def test_an_evaluation_lets_its_raw_rows_go_once_its_frames_are_made_and_pickles_whole():
    import pickle
    result = recsql.evaluate("fixtures/data/recs.parquet", "fixtures/data/truth.parquet", ["ndcg@10"],
                             run_cols="model")
    table = result.rows.arrow("summary")
    summary, per_user = result.summary, result.per_user
    assert result.rows._raw is None  # noqa: SLF001 - what is held
    assert result.rows.arrow("per_user").num_rows == len(per_user) == 578
    assert table.column_names == list(summary.columns)
    again = pickle.loads(pickle.dumps(result))
    assert again.summary.equals(summary) and again.per_user.equals(per_user)


def test_a_compact_comparison_table_left_to_pandas_shows_its_text_columns():
    """Run keys lists_text does not write (doubles) leave the compact tables to pandas: the key columns from the
    result's DataFrame, then the text columns (the mean written with six decimals, not the DataFrame's number)."""
    import pandas as pd

    from recsql.comparison_cli import tables
    from recsql.comparison_result import Comparison
    from recsql.comparison_run import compare_per_user
    from recsql.comparison_settings import Settings
    values = pd.DataFrame({"model": [1.5] * 4 + [2.5] * 4, "user_id": [*range(4)] * 2,
                           "m": [0.1, 0.2, 0.3, 0.4, 0.3, 0.1, 0.5, 0.2]})
    settings = Settings.checked(("t",), 0.95, 20, 0, None, 1.5)
    result = Comparison(tables=compare_per_user(values, ["m"], ["model"], "user_id", settings)[0], metrics=[],
                        settings=settings)
    runs = result.runs
    expected = runs[["run", "metric"]].assign(
        mean=runs["mean"].map(lambda v: f"{v:.6f}"),
        **{"95% interval": [f"[{lo:.6f}, {hi:.6f}]" for lo, hi in zip(runs["ci_low"], runs["ci_high"])]})
    assert expected.to_string(index=False) in tables(result, 0.05, wide=False)
    assert "0.250000" in expected.to_string(index=False)
