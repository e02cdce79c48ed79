"""Every metric of the registry is complete: written once in its SQL file and checked three ways.

A metric is one SQL file (sql/<name>.sql), one reference function (tests/support/reference.py or
tests/support/reference_beyond.py) and one worked example (fixtures/worked/*.json). The property tests draw
their metrics and option values from these tables, so a metric or an option missing from them would
silently never be compared with its reference; these tests fail instead.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import recsql
from support import reference
from support import reference_beyond
from support import strategies
import test_beyond_properties
import test_logs_positions
import test_logs_slates
from support.cases import load, metric_of
from recsql.families import FAMILIES
from recsql.templates import read_template, template_names

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = recsql.registry()
WORKED = ([c for c in load("worked/seeds.json") if c["issue"] == 2] + load("worked/recsql.json")
          + load("worked/beyond.json"))


def _drawn_options(name: str) -> dict[str, list]:
    """The option values the property tests draw for a metric; an option left out takes its
    default (both strategies leave options out)."""
    drawn: dict[str, list] = {opt: [param.default] for opt, param in REGISTRY[name].params.items()}
    for opt, values in strategies.OPTION_VALUES.get(name, {}).items():
        drawn[opt] += values
    for options in [*test_beyond_properties.OPTIONS.get(name, []), *test_logs_positions.OPTIONS.get(name, []),
                    *test_logs_slates.OPTIONS.get(name, [])]:
        for opt, value in options.items():
            drawn[opt].append(value)
    return drawn


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_the_metric_has_a_reference_function(name):
    assert name in reference.METRICS or name in reference_beyond.METRICS, (
        f"sql/{name}.sql has no reference function: add one to tests/support/reference.py (a metric that needs "
        f"truth) or tests/support/reference_beyond.py, written from the formula")


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_the_metric_has_a_worked_example(name):
    worked = {metric_of(case).name for case in WORKED}
    assert name in worked, f"sql/{name}.sql has no worked example in fixtures/worked/ (seeds.json, recsql.json or beyond.json)"


def test_every_reference_function_is_a_registry_metric():
    assert set(reference.METRICS) | set(reference_beyond.METRICS) <= set(REGISTRY)


def test_the_property_tests_draw_every_metric():
    accuracy = set(strategies.ACCURACY)
    beyond = set(test_beyond_properties.BEYOND)
    assert accuracy == set(reference.METRICS)
    assert beyond == set(reference_beyond.METRICS)
    assert accuracy | beyond == set(REGISTRY)


@pytest.mark.parametrize("name", sorted(n for n, spec in REGISTRY.items() if spec.params))
def test_the_property_tests_draw_every_option(name):
    """Each choice of an enum option, each named discount and two values of a number option are
    drawn, so the reference is compared under all of them."""
    drawn = _drawn_options(name)
    for opt, param in REGISTRY[name].params.items():
        values = {str(v) for v in drawn.get(opt, [])}
        if param.kind == "number":
            assert len(values) >= 2, f"{name}: the property tests draw fewer than two values of {opt}"
        else:
            missing = set(param.choices) - values
            assert not missing, f"{name}: the property tests never draw {opt}={', '.join(sorted(missing))}"


def _header_keys_read() -> set[str]:
    """The header keys recsql/specs.py, the registry, reads (``header.get("key"...)``)."""
    source = "".join((ROOT / "recsql" / f).read_text(encoding="utf-8") for f in ("specs.py", "templates.py"))
    return set(re.findall(r'header\.get\("(\w+)"', source))


def _header_keys_documented() -> set[str]:
    """The keys docs/developer.md's *The SQL* section lists as the header's."""
    text = (ROOT / "docs" / "developer.md").read_text(encoding="utf-8")
    section = text.split("## The SQL", 1)[1].split("\n## ", 1)[0]
    listed = re.search(r"a header the registry reads \(([^)]*)\)", section.replace("\n", " "))
    assert listed, "docs/developer.md, The SQL: the sentence listing the header's keys is gone"
    return set(re.findall(r"`(\w+)`", listed.group(1)))


def test_every_header_key_is_read_and_documented():
    read, documented = _header_keys_read(), _header_keys_documented()
    assert read == documented, f"read, not documented: {sorted(read - documented)}; documented, not read: {sorted(documented - read)}"


@pytest.mark.parametrize("name", sorted(n for n in template_names()))
def test_a_metric_header_holds_only_known_keys(name):
    header, _ = read_template(name)
    unknown = set(header) - _header_keys_read()
    assert not unknown, f"sql/{name}.sql: unknown header key(s) {sorted(unknown)} (a typo is otherwise ignored)"


def test_every_metric_has_a_family_and_every_family_a_metric():
    """Each header's ``family:`` is one of recsql/families.py, and no family there is empty."""
    used = {name: spec.family for name, spec in REGISTRY.items()}
    assert {name: family for name, family in used.items() if family not in FAMILIES} == {}
    assert [key for key in FAMILIES if key not in used.values()] == []


@pytest.mark.parametrize("line, said", [(None, "the header has no `family:` line"),
                                        ("acuracy", "`family: acuracy` is not a family (did you mean 'accuracy'?)")])
def test_a_header_without_a_known_family_is_refused(monkeypatch, line, said):
    from recsql import specs
    header, sql = read_template("ndcg")
    header = {k: v for k, v in header.items() if k != "family"} | ({"family": line} if line else {})
    monkeypatch.setattr(specs, "read_template", lambda name: (header, sql))
    with pytest.raises(recsql.RecsqlError) as refused:
        specs._spec("ndcg")
    assert str(refused.value).startswith(f"sql/ndcg.sql: {said}") and ", ".join(FAMILIES) in str(refused.value)


def test_each_kind_of_stage_row_has_its_own_src_and_every_src_read_is_made():
    """The ranked-rows stage tells its kinds of row apart by ``src`` (sql/_ranked.sql): each number
    is made by one branch only, and every ``src = N`` a metric or the composer reads is made."""
    stage = (ROOT / "sql" / "_ranked.sql").read_text()
    made = [int(n) for n in re.findall(r"\b(\d+) AS src\b", stage)]
    assert made and sorted(made) == sorted(set(made)), sorted(made)
    read = set()
    for path in [*(ROOT / "sql").glob("*.sql"), *(ROOT / "recsql").rglob("*.py")]:
        text = path.read_text()
        read |= {int(n) for n in re.findall(r"\bsrc = (\d+)", text)}
        read |= {int(n) for group in re.findall(r"\bsrc IN \(([\d, ]+)\)", text) for n in group.split(",")}
    assert read and read <= set(made), sorted(read - set(made))
