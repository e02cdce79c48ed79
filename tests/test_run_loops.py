"""recsql.dbt.run_loops: a text composed per number of run keys, written once with loops over them.

Worked examples of each form a list of run keys takes in the package's SQL, texts that are not loops
(refused), and a property: lists built at random from units, separators and layouts are found again
and write the same text for any number of run keys, in Python and through Jinja.
"""
from __future__ import annotations

import jinja2
import pytest
from hypothesis import given, settings, strategies as st

from recsql.dbt.evaluate import PER_RUNS, _cte_text
from recsql.dbt.run_loops import TOP, jinja, layout_free, render, run_loop, writes_none


def _texts(build) -> dict[int, str | None]:
    return {n: build(n) for n in range(TOP + 1)}


def _rendered(template: str, runs: int, text_ids: tuple[int, ...] = ()) -> str:
    """A Jinja text rendered as the macro renders it, with ``runs`` run columns r0, r1, ..."""
    rs = {"runs": runs, "run_cols": [f'"r{i}"' for i in range(runs)],
          "text": {f"run{i}": i in text_ids for i in range(runs)}}
    return jinja2.Environment().from_string(template).render(rs=rs)


def _jinja(pieces, runs: int, text_ids: tuple[int, ...] = ()) -> str:
    """The Jinja of the pieces rendered as the macro renders it."""
    return _rendered(jinja(pieces), runs, text_ids)


def test_a_select_list_with_a_trailing_separator():
    texts = _texts(lambda n: "SELECT " + "".join(f"s._run{i} AS _run{i}, " for i in range(n)) + "s.user_id FROM s")
    pieces = run_loop(texts)
    assert writes_none(pieces, texts[0])
    for n in range(8):
        assert render(pieces, n) == "SELECT " + "".join(f"s._run{i} AS _run{i}, " for i in range(n)) + "s.user_id FROM s"
        assert _jinja(pieces, n) == render(pieces, n)


def test_a_partition_without_run_keys_keeps_its_own_text():
    """No run keys: no PARTITION BY at all, which the loops do not write: the caller keeps that text."""
    texts = _texts(lambda n: "ROW_NUMBER() OVER (" + (f"PARTITION BY {', '.join(f'_run{i}' for i in range(n))} " if n else "")
                   + "ORDER BY score DESC)")
    pieces = run_loop(texts)
    assert pieces is not None and not writes_none(pieces, texts[0])
    assert render(pieces, 6) == "ROW_NUMBER() OVER (PARTITION BY _run0, _run1, _run2, _run3, _run4, _run5 ORDER BY score DESC)"


def test_a_join_the_pretty_printer_breaks_by_length():
    """Joined run keys, on one line while short and one per line when long: one loop, layout aside."""
    def join(n: int) -> str:
        conditions = [f"u._run{i} = s._run{i}" for i in range(n)] + ["s.user_id = u.user_id"]
        return "LEFT JOIN u\n  ON " + ("\n  AND " if n >= 3 else " AND ").join(conditions)
    texts = _texts(join)
    pieces = run_loop(texts)
    for n in range(1, TOP + 1):
        assert layout_free(render(pieces, n)) == layout_free(texts[n])
    assert render(pieces, 2) == "LEFT JOIN u\n  ON u._run0 = s._run0\n  AND u._run1 = s._run1\n  AND s.user_id = u.user_id"


def test_the_macros_column_names_and_collations():
    """The macro's names for run key i (rs.run_cols[i]) and its COLLATE behind rs.text.run<i>."""
    def text(n: int) -> str:
        keys = [f"{{{{ rs.run_cols[{i}] }}}}{{% if rs.text.run{i} %}} COLLATE \"C\"{{% endif %}} AS _run{i}" for i in range(n)]
        return "SELECT\n  " + ",\n  ".join([*keys, "user_id"]) + "\nFROM recs"
    pieces = run_loop(_texts(text))
    for n in range(7):
        expected = "SELECT\n  " + ",\n  ".join([*(f'"r{i}"' + (' COLLATE "C"' if i in (1, 4) else "") + f" AS _run{i}"
                                                  for i in range(n)), "user_id"]) + "\nFROM recs"
        assert _jinja(pieces, n, text_ids=(1, 4)) == expected


def test_texts_that_are_not_loops_over_run_keys():
    # a positional GROUP BY: the numbers change with the run keys, not the names
    assert run_loop(_texts(lambda n: "GROUP BY " + ", ".join(str(i + 1) for i in range(n + 1)))) is None
    # a text that differs otherwise between 3 and 4 run keys
    assert run_loop(_texts(lambda n: f"SELECT {'a' if n < 4 else 'b'}" + "".join(f", _run{i}" for i in range(n)))) is None
    # a list whose units differ beyond their index
    assert run_loop(_texts(lambda n: "SELECT " + ", ".join(f"_run{i} AS k{i * i}" for i in range(n)))) is None
    # absent at some number of run keys above 0
    assert run_loop({**_texts(lambda n: "SELECT " + ", ".join(f"_run{i}" for i in range(n))), 2: None}) is None


class _Refused(Exception):
    pass


def _raise(message: str):
    raise _Refused(message)


def _generated(texts: dict[int, str | None], runs: int) -> str:
    """What the generator writes for a CTE whose texts depend on the run keys alone, rendered."""
    template = _cte_text("list_rows", texts, [{"runs": n} for n in texts], ["runs"])
    rs = {"runs": runs, "run_cols": [f"r{i}" for i in range(runs)], "text": {}}
    return jinja2.Environment().from_string(template).render(rs=rs, exceptions={"raise_compiler_error": _raise})


def test_the_generator_writes_loops_and_refuses_run_keys_it_has_no_text_for():
    """A CTE whose lists of run keys are loops is written once and serves any number of them; one whose
    text is not (a positional GROUP BY) keeps a text per number composed, and refuses more, naming it."""
    looped = _texts(lambda n: "GROUP BY " + "".join(f"_run{i}, " for i in range(n)) + "user_id")
    assert _generated(looped, 6) == "GROUP BY _run0, _run1, _run2, _run3, _run4, _run5, user_id"
    positional = _texts(lambda n: "GROUP BY " + ", ".join(str(i + 1) for i in range(n + 1)))
    for n in range(TOP + 1):
        assert _generated(positional, n).strip() == positional[n]
    with pytest.raises(_Refused, match=f"at most {TOP} run columns: the SQL of list_rows {PER_RUNS}; got r0, r1, r2, r3, r4"):
        _generated(positional, TOP + 1)
    assert PER_RUNS not in _cte_text("list_rows", looped, [{"runs": n} for n in looped], ["runs"])


_FORMS = st.sampled_from(["_run{i}", "l._run{i}", "u._run{i} = s._run{i}", "{{{{ rs.run_cols[{i}] }}}} AS _run{i}",
                          "MAX(_run{i}) AS _run{i}"])
_WORDS = st.sampled_from(["SELECT", "FROM t", "user_id", "GROUP BY", "ON", "(", ")", "item_id", "x + 1"])


@settings(max_examples=150, deadline=None)
@given(lists=st.lists(st.tuples(_FORMS, st.sampled_from([", ", " AND ", ",\n  "]), st.booleans(), _WORDS),
                      min_size=1, max_size=3, unique_by=lambda t: t[3]),
       tail=st.sampled_from(["FROM recs", "WHERE rank <= 3"]), wide=st.integers(min_value=2, max_value=TOP + 1))
def test_random_lists_are_found_and_generalise(lists, tail, wide):
    """Texts made of lists of run keys (each some words, then a unit form and a separator, written before
    or after each unit), laid out on one line below ``wide`` run keys and one per line from it:
    the loops write each text for 1..TOP run keys layout aside, and for any number through Jinja as in
    Python, each unit named for its run key. (The words before the lists differ, as the SQL's do: lists
    between the same words only are ambiguous to the diff, which may then find no loop, and the
    generator keeps a text per number of run keys.)"""
    def build(n: int, layout: bool = True) -> str:
        out = []
        for form, separator, before, word in lists:
            sep = separator.replace("\n  ", " ") if layout and n < wide else separator
            units = [form.format(i=i) for i in range(n)]
            out.append(" " + word + " " + ("".join(sep + u for u in units) if before else "".join(u + sep for u in units)))
        return "".join(out) + " " + tail
    texts = _texts(build)
    pieces = run_loop(texts)
    assert pieces is not None
    for n in range(1, TOP + 1):
        assert layout_free(render(pieces, n)) == layout_free(texts[n])
    for n in range(TOP + 1, TOP + 4):  # beyond the texts composed: the same lists, longer
        assert layout_free(render(pieces, n)) == layout_free(build(n, layout=False))
        assert _jinja(pieces, n) == _rendered(render(pieces, n), n)
