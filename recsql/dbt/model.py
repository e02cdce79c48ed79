"""One dbt model: the composer's statement for an evaluation, as a person would write it in dbt.

:func:`model_sql` composes the statement with :func:`recsql.compose.compose` exactly as
:func:`recsql.to_sql` does (inputs and options described and checked by :class:`recsql.Inputs`, as
for evaluate), for placeholder relations, and makes it a model's SQL:

- a header naming the recsql version, the evaluation and its options;
- the composer's statement made readable as every rendered statement is
  (:func:`recsql.compose.readable`): its own header (the metrics, convention, threshold, population
  and tie rule; the adapters are named above it), no CTE for an input not given and nothing no
  metric or check reads, each metric's column named after it and its expression with a comment
  (its canonical name and formula);
- the relations as ``{{ ref('recs') }}`` / ``{{ source('shop', 'orders') }}``, and no other Jinja:
  a name or value that would hold a Jinja delimiter (``{{``, ``{%``, ``{#``) is refused, so dbt never
  evaluates the user's text;
- no trailing ORDER BY (a model is a table or view; SQL Server refuses ORDER BY in a view);
- result columns with safe names (:func:`recsql.dbt.names.output_name`) unless
  ``column_names="as_asked"``; simple lower-case identifiers unquoted, so each warehouse applies its
  own case rule (Snowflake upper-cases), every other name quoted by sqlglot for the dialect;
- the input checks (README, "Safety") as columns of the summary *and* of every per-user row, which
  the generated YAML tests with the package's ``recsql.input_check``.

With several adapters, the model holds one rendering per distinct SQL, chosen by ``target.type``;
any other target fails to compile with a message naming the fix.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from .. import __version__
from ..compose import DIAGNOSTICS, Plan
from ..compose.readable import readable_statement
from ..dialects import render
from ..errors import RecsqlError
from ..inputs import ROLES, Inputs, renamed
from ..metrics import Metric, parse_metrics
from ..options import yml_keys
from ..plans import build_plan, checked_logs_run_cols
from ..sources import bind
from ..trees import nodes
from .adapters import adapter
from .names import MAX_LENGTH, SIMPLE, output_name

_PLACEHOLDER = "recsql_input_{}"  # the placeholder relation of each input, replaced by its ref()/source()
# evaluate's options, by their recsql.yml keys (recsql/options.py: the table every entry point shares), so a
# model takes what evaluate takes
OPTIONS = tuple(key for key in yml_keys("columns", "inputs", "segments") if key not in ROLES)
MARKER_SQL = "-- recsql: generated"  # the first line of every file recsql writes (and may write again)
MARKER_YAML = "# recsql: generated"
JINJA = re.compile(r"\{[{%#]|[}%#]\}")
# dbt's Jinja context: a model named like one shadows or confuses it
DBT_BUILTINS = frozenset("""adapter api builtins config context database dbt_version doc env_var exceptions execute
    flags fromjson fromyaml graph invocation_id load_result local_md5 log model modules print project_name ref
    return run_query run_started_at schema selected_resources set source statement target this tojson toyaml var
    zip""".split())
_RELATION = re.compile(r"(ref\(\s*'[A-Za-z_][A-Za-z0-9_]*'(\s*,\s*'[A-Za-z_][A-Za-z0-9_]*')?\s*\)"
                       r"|source\(\s*'[A-Za-z_][A-Za-z0-9_]*'\s*,\s*'[A-Za-z_][A-Za-z0-9_]*'\s*\))")
MATERIALIZED = ("table", "view", "incremental", "ephemeral")
OLD_ROLES = {"baseline": "expected_recs"}  # an input's old key in recsql.yml -> its name (accepted one release)


def relation(role: str, text: str, where: str) -> str:
    """A dbt relation as the model writes it: ``ref('x')``, ``ref('package', 'x')`` or
    ``source('s', 't')``; a bare name ``x`` means ``ref('x')``. Anything else is refused."""
    text = str(text).strip()
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        return f"ref('{text}')"
    if not _RELATION.fullmatch(text):
        raise RecsqlError(f"{where}: {role}: {text!r} is not a dbt relation; write a model name (recs), "
                          "ref('recs'), ref('package', 'recs') or source('schema', 'table')")
    return re.sub(r"\s+", "", text).replace(",", ", ")


def relation_name(expression: str) -> str:
    """The model or table a relation expression names: ``ref('a', 'b')`` -> ``b``."""
    return re.findall(r"'([^']*)'", expression)[-1]


@dataclass
class ModelSpec:
    """One evaluation: its name, metrics, inputs (role -> dbt relation, e.g. ``"ref('recs')"``; or a
    :class:`recsql.Inputs` of relations and options, in place of ``inputs`` and ``options``),
    output (``summary`` or ``per_user``), result column names, materialization, every option of
    :func:`recsql.evaluate`, and the gates of the summary (:mod:`recsql.dbt.gates`)."""

    name: str
    metrics: list[str]
    inputs: dict[str, str] = field(default_factory=lambda: {"recs": "ref('recs')", "truth": "ref('truth')"})
    output: str = "summary"
    column_names: str = "safe"
    materialized: str = "table"
    options: dict[str, Any] = field(default_factory=dict)
    text_ids: tuple[str, ...] = ()
    truth_has_run_cols: bool = False
    logs_run_cols: tuple[str, ...] = ()  # the run columns the logs carry too: logs per run
    gates: dict[str, Any] | None = None  # recsql compare's gates, as a dbt test (recsql.dbt.gates)

    def __post_init__(self) -> None:
        where = f"evaluation {self.name!r}"
        if isinstance(self.inputs, Inputs):  # the inputs (dbt relations) and options as one recsql.Inputs
            if self.options:
                raise RecsqlError(f"{where}: pass the options in the Inputs or as options, not both")
            self.inputs, self.options = _split(self.inputs)
        if not isinstance(self.name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", self.name):
            raise RecsqlError(f"evaluation name {self.name!r} must be a lower-case identifier ([a-z_][a-z0-9_]*)")
        if self.name in DBT_BUILTINS:
            raise RecsqlError(f"{where}: {self.name!r} is a name of dbt's own (a model named so would shadow "
                              "it in Jinja); choose another name, e.g. eval_" + self.name)
        choices = {"output": ("summary", "per_user"), "column_names": ("safe", "as_asked"),
                   "materialized": MATERIALIZED}
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise RecsqlError(f"{where}: {key}: {getattr(self, key)!r} is not valid; choose one of {', '.join(allowed)}")
        if not isinstance(self.metrics, list) or not self.metrics or not all(isinstance(m, str) for m in self.metrics):
            raise RecsqlError(f"{where}: metrics: give a list of metric names, e.g. [ndcg@10, map@10]")
        for old, new in OLD_ROLES.items():
            if old in self.inputs:  # a warning naming the new key; both given: an error
                renamed(new, self.inputs.get(new), old, self.inputs[old], where, " (another recommender's lists)")
                self.inputs = {new if role == old else role: value for role, value in self.inputs.items()}
        unknown = sorted(set(self.inputs) - set(ROLES)) + sorted(set(self.options) - set(OPTIONS))
        if unknown or "recs" not in self.inputs:
            raise RecsqlError(f"{where}: unknown input or option {unknown!r} (inputs: {', '.join(ROLES)}; "
                              f"options: {', '.join(OPTIONS)}), and recs is required")
        self.inputs = {role: relation(role, value, where) for role, value in self.inputs.items()}
        read = {relation_name(v) for v in self.inputs.values()}
        if self.name in read:
            raise RecsqlError(f"{where}: the model would read itself ({self.name!r} is one of its inputs); "
                              "name the evaluation otherwise, e.g. eval_" + self.name)
        for text in [*self.metrics, *map(str, self.options.values()), *self.text_ids]:
            if JINJA.search(text):
                raise RecsqlError(f"{where}: {text!r} holds a Jinja delimiter ({{{{, {{%, {{#): dbt would evaluate it")

    @property
    def roles(self) -> list[str]:
        return [r for r in ROLES if r in self.inputs]


def _split(inputs: Inputs) -> tuple[dict[str, str], dict[str, Any]]:
    """An :class:`recsql.Inputs`' inputs (role -> relation) and the options it sets (those not at their default)."""
    defaults = {f.name: f.default for f in dataclasses.fields(Inputs)}
    return ({role: getattr(inputs, role) for role in ROLES if getattr(inputs, role) is not None},
            {key: getattr(inputs, key) for key in OPTIONS if getattr(inputs, key) != defaults[key]})


def spec_plan(spec: ModelSpec, dialect: str = "duckdb") -> tuple[Plan, list[Metric]]:
    """The composer's plan for the spec, as :func:`recsql.to_sql` builds it, and the metrics."""
    parsed = parse_metrics(spec.metrics)
    described = Inputs(**{role: _PLACEHOLDER.format(role) for role in spec.inputs}, **spec.options)
    cols = described.options()
    relations = {role: bind(role, value, None).relation if value is not None else None
                 for role, value in described.given().items()}
    named = {cols["user_col"]: "user_id", cols["item_col"]: "item_id",
             **{c: f"_run{i}" for i, c in enumerate(cols["run_cols"])}}
    unknown = [c for c in spec.text_ids if c not in named]
    if unknown:
        raise RecsqlError(f"evaluation {spec.name!r}: text_ids: {unknown[0]!r} is not an id column; "
                          f"name {cols['user_col']!r} and/or {cols['item_col']!r}")
    plan = build_plan(relations, cols, dialect, truth_has_runs=spec.truth_has_run_cols and bool(cols["run_cols"]),
                      text_ids=frozenset(named[c] for c in spec.text_ids),
                      logs_run_cols=checked_logs_run_cols(spec.logs_run_cols, cols, relations.get("logs") is not None,
                                                          f"evaluation {spec.name!r}: "))
    return plan, parsed


def _statement(spec: ModelSpec, dialect: str) -> tuple[exp.Select, list[Metric]]:
    """The composer's statement for the spec, as :func:`recsql.to_sql` builds it, and the metrics: a copy the
    caller may change. The adapters whose dialects the composer treats alike share one composition
    (:func:`recsql.statements.readable_statement`)."""
    plan, parsed = spec_plan(spec, dialect)
    return readable_statement(plan, parsed, spec.output, checks=True, dialect=False), parsed


def _rename(statement: exp.Select, metrics: list, spec: ModelSpec) -> None:
    """Safe output names for the result columns (the run keys and user column keep the input's)."""
    asked = {m.column for m in metrics}
    if spec.column_names != "safe":
        long = [name for name in sorted(asked) if len(name.encode("utf-8")) > MAX_LENGTH]
        if long:
            raise RecsqlError(f"evaluation {spec.name!r}: column name {long[0]!r} is longer than {MAX_LENGTH} bytes, "
                              f"which PostgreSQL cuts without an error; set column_names: safe (long names are "
                              f"shortened with a hash of the whole name there)")
        return
    seen: dict[str, str] = {}
    for projection in statement.expressions:
        name = projection.alias_or_name
        if name not in asked:
            continue
        safe = output_name(name)
        if safe in seen:
            raise RecsqlError(f"evaluation {spec.name!r}: metrics {seen[safe]!r} and {name!r} get the same column "
                              f"name {safe!r}; ask for one, or set column_names: as_asked")
        seen[safe] = name
        projection.set("alias", exp.to_identifier(safe))


def _unquote(statement: exp.Expression) -> None:
    """Simple lower-case identifiers unquoted: every warehouse then applies its own case rule."""
    for identifier in nodes(statement, exp.Identifier):
        if identifier.args.get("quoted") and SIMPLE.match(identifier.name):
            identifier.set("quoted", False)


def model_sql(spec: ModelSpec, adapter_name: str) -> str:
    """The model's SQL for one dbt adapter, its relations as ``{{ ref(...) }}`` / ``{{ source(...) }}``."""
    statement, metrics = _statement(spec, adapter(adapter_name).dialect)
    statement.set("order", None)
    _rename(statement, metrics, spec)
    _unquote(statement)
    sql = render(statement, adapter(adapter_name).dialect, copy=False)  # the statement is this call's own copy
    stray = JINJA.search(sql)
    if stray:  # a column name or value holding one: dbt would evaluate the user's text
        raise RecsqlError(f"evaluation {spec.name!r}: a column name or value holds a Jinja delimiter "
                          f"({stray.group(0)!r}), which dbt would evaluate; rename the column in a model upstream")
    for role in ROLES:
        placeholder = r"[`\"\[]?" + _PLACEHOLDER.format(role) + r"[`\"\]]?"
        sql = re.sub(placeholder, lambda _: "{{ " + spec.inputs.get(role, "") + " }}", sql)
    return sql


def diagnostics(spec: ModelSpec) -> list[str]:
    """The input-check columns of the model, in order."""
    statement, _ = _statement(spec, "duckdb")
    return [p.alias_or_name for p in statement.expressions if p.alias_or_name in DIAGNOSTICS]


def _header(spec: ModelSpec, adapters: list[str], source: str) -> list[str]:
    options = ", ".join(f"{k}={v!r}" for k, v in spec.options.items()) or "recsql's defaults"
    return [f"{MARKER_SQL} by recsql {__version__} (`recsql dbt generate`) from {source}: edit {source}, not this file",
            f"-- evaluation: {spec.name} ({spec.output}); adapters: {', '.join(adapters)}",
            f"-- metrics: {', '.join(spec.metrics)}",
            f"-- options: {options}"]


def model_file(spec: ModelSpec, adapters: list[str], source: str = "recsql.yml") -> str:
    """The whole model file: header, config, and the SQL of each adapter (one ``target.type`` branch
    per distinct rendering when there are several)."""
    if not adapters:
        raise RecsqlError(f"evaluation {spec.name!r}: name at least one adapter")
    names = [adapter(a).name for a in adapters]
    rendered: dict[str, list[str]] = {}
    for name in names:
        rendered.setdefault(model_sql(spec, name), []).append(name)
    lines = _header(spec, names, source) + [f"{{{{ config(materialized='{spec.materialized}') }}}}"]
    if len(rendered) == 1:
        return "\n".join([*lines, next(iter(rendered)), ""])
    for i, (sql, targets) in enumerate(rendered.items()):
        keyword = "if" if i == 0 else "elif"
        lines += [f"{{% {keyword} target.type in {targets!r} %}}", sql]
    message = (f"recsql: model {spec.name} was generated for the adapters {', '.join(names)}; add the adapter "
               "of this target to adapters: in recsql.yml and run `recsql dbt generate`")
    lines += ["{% else %}", f"{{{{ exceptions.raise_compiler_error({message!r}) }}}}", "{% endif %}", ""]
    return "\n".join(lines)


def schema_entry(spec: ModelSpec) -> dict[str, Any]:
    """The model's YAML entry: every input-check column tested by the package's ``recsql.input_check``
    (a non-zero check fails ``dbt build`` and names the check), and every metric column described."""
    columns = [{"name": name, "description": f"recsql input check: {name.replace('_', ' ')}; must be 0",
                "data_tests": ["recsql.input_check"]} for name in diagnostics(spec)]
    for metric in parse_metrics(spec.metrics):
        name = output_name(metric.column) if spec.column_names == "safe" else metric.column
        columns.append({"name": name, "description": f"{metric}: {metric.spec.formula}"})
    return {"name": spec.name, "description": f"recsql {spec.output.replace('_', '-')} evaluation: {', '.join(spec.metrics)}",
            "columns": columns}
