"""One definition of the shared options (recsql/options.py): the command line's flags, Python's
keywords and dbt's recsql.yml keys are held to its table, so a name used in one place that the
table does not list fails here."""
from __future__ import annotations

import argparse
import dataclasses
import inspect

import pytest

import recsql
from recsql.cli import build_parser
from recsql.dbt.model import OLD_ROLES, OPTIONS
from recsql.dbt.project import SPEC_KEYS
from recsql.inputs import ROLES
from recsql.options import SHARED
from recsql.report.build import build_report

COMMANDS = ("evaluate", "sql", "compare", "report")
FIELDS = {f.name for f in dataclasses.fields(recsql.Inputs)}
KEYWORDS = {o.keyword for o in SHARED if o.group != "render"}  # evaluate's (the others: the renderers')
RENDER = {o.keyword for o in SHARED if o.group == "render"}
OLD = {name for o in SHARED for name in o.old}


def _actions(command: str) -> list[argparse.Action]:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices[command]._actions if any(s.startswith("--") for s in a.option_strings)]


def _shared_looking(name: str) -> bool:
    """A name that reads like a shared option: a column option, or an input or option of Inputs."""
    return name.endswith(("_col", "_cols")) or name in FIELDS - {"recs", "truth"}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_shared_flag_of_a_command_is_the_tables(command):
    """Each flag of a command that names a column (``--*-col``) or an input or definition option is the
    table's, with the table's destination; a hidden old spelling is one the table lists as old."""
    table = {o.flag: o for o in SHARED}
    seen = set()
    for action in _actions(command):
        for flag in (s for s in action.option_strings if s.startswith("--")):
            if action.dest == "old_expected_recs":  # (evaluate's --out: its own, not shared)
                assert flag in OLD, (command, flag)
            elif flag.endswith("-col") or _shared_looking(action.dest) and action.dest not in ("baseline",):
                assert flag in table, f"{command}: {flag} is not in recsql/options.py's table"
                assert table[flag].dest == action.dest, (command, flag, action.dest)
                seen.add(flag)
    columns = {o.flag for o in SHARED if o.group in ("columns", "inputs")}
    assert columns <= seen, f"{command} lacks {sorted(columns - seen)}"


@pytest.mark.parametrize("function", [recsql.evaluate, recsql.to_sql, recsql.compare, build_report],
                         ids=["evaluate", "to_sql", "compare", "report"])
def test_every_shared_keyword_of_an_entry_point_is_the_tables(function):
    """A keyword of evaluate, to_sql, compare or the report that names a column or an input or option
    of Inputs is the table's (or one of its old spellings); evaluate and to_sql take every one (compare
    and the report take evaluate's through ``**options``)."""
    parameters = inspect.signature(function).parameters
    for name in parameters:
        if name in ("recs", "truth"):
            continue
        if _shared_looking(name) or name in OLD:
            assert name in KEYWORDS | RENDER | OLD, f"{function.__name__}: {name} is not in recsql/options.py's table"
    if function in (recsql.evaluate, recsql.to_sql):
        wanted = KEYWORDS | (RENDER if function is recsql.to_sql else set())
        assert wanted <= set(parameters), sorted(wanted - set(parameters))
    else:
        assert "options" in parameters


def test_the_table_is_every_field_of_inputs():
    """The table's keywords are Inputs' fields but the two inputs every evaluation has."""
    assert KEYWORDS == FIELDS - {"recs", "truth"}


def test_dbts_keys_are_the_tables():
    """What recsql/dbt reads of an evaluation in recsql.yml (its inputs and options) is the table's yml
    keys; the old key it still accepts is one the table lists as old."""
    read = set(ROLES) | set(OPTIONS) | set(SPEC_KEYS) - {"name", "metrics", "output", "column_names", "materialized", "gates"}
    assert read == {"recs", "truth"} | {o.yml for o in SHARED if o.yml}
    assert set(OLD_ROLES) <= OLD and set(OLD_ROLES.values()) <= KEYWORDS


def test_a_flag_and_its_keyword_and_key_are_one_name():
    """The flag spells the keyword (dashes for underscores; a repeatable one in the singular), and
    dbt's key is the keyword."""
    for o in SHARED:
        if o.yml is None:  # --no-relevance: the None of relevance_col
            assert o.parse.get("const", "") is None and o.keyword in KEYWORDS
            continue
        assert o.yml == o.keyword
        spelled = o.flag[2:].replace("-", "_")
        assert spelled == o.keyword or spelled + "s" == o.keyword, o
