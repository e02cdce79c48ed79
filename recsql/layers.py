"""recsql's modules in layers, lowest first: a module imports only from its own layer and the ones
below it, never in a circle, and never another module's private (``_name``) names.
``tests/test_layers.py`` reads the import statements of every module with ``ast`` (those inside
functions too; not those under ``if TYPE_CHECKING:``, which never run) and holds them to this table;
it also fails on a module of recsql/ that is in no layer, or is longer than :data:`MAX_LINES`.

Importing ``recsql.a.b`` runs ``recsql/a/__init__.py`` first, so the checker counts that import as
one of ``recsql.a`` too (but for the package's own modules). Two package facades name a public
name of a higher layer as a string, imported on first use (PEP 562): ``recsql`` (its public names:
``recsql.evaluate``, ...) and ``recsql.report`` (``build_report``), so that ``import recsql`` stays
light and the report's pages can be drawn by the results they show.

This module only declares; it imports nothing.
"""

MAX_LINES = 400  # the longest a module of recsql/ may be

# (layer, why it sits where it does, its modules), lowest first
LAYERS = (
    ("base", "helpers that know no metric: errors, optional dependencies, files, text safe to show, the SQL "
             "templates and sqlglot trees, recsql's own DuckDB, engines' result frames, evaluate's result rows and their text, TREC files, run labels, "
             "the resampling mixer, the tests' tails and power, the gates as written; the package (its version) and this table",
     ("recsql", "recsql.layers", "recsql.errors", "recsql.extras", "recsql.files", "recsql.safe_text",
      "recsql.templates", "recsql.trees", "recsql.database", "recsql.frames", "recsql.result_frames",
      "recsql.table_text", "recsql.trec", "recsql.run_labels",
      "recsql.resampling", "recsql.significance", "recsql.decisions", "recsql.power_simulation", "recsql.gates")),
    ("registry", "what a metric is and how SQL is written for a dialect: the headers of sql/*.sql, the metric "
                 "families, other tools' names for the metrics, conventions, discounts, the dialects' switches",
     ("recsql.families", "recsql.foreign_names", "recsql.names", "recsql.specs", "recsql.discounts", "recsql.conventions",
      "recsql.metrics", "recsql.dialects")),
    ("compose", "SQL text from a plan, never run: the one query, its memo, the comparison's statistics statement",
     ("recsql.compose", "recsql.compose.plan", "recsql.compose.rewrite", "recsql.compose.inputs",
      "recsql.compose.policy", "recsql.compose.checks", "recsql.compose.log_checks", "recsql.compose.needs", "recsql.compose.exposure",
      "recsql.compose.expressions", "recsql.compose.weights", "recsql.compose.samples", "recsql.compose.features",
      "recsql.compose.stage", "recsql.compose.intents",
      "recsql.compose.statement", "recsql.compose.columns", "recsql.compose.empty", "recsql.compose.unread",
      "recsql.compose.readable", "recsql.statements", "recsql.comparison_settings", "recsql.comparison_baseline", "recsql.comparison_global",
      "recsql.comparison_logged", "recsql.comparison_samples", "recsql.comparison_weighted", "recsql.comparison_sql")),
    ("inputs", "the inputs as given: their options checked (recsql.Inputs) and defined once for every entry point "
               "(recsql.options), bound to relations, their columns "
               "checked; no engine yet",
     ("recsql.arguments", "recsql.inputs", "recsql.options", "recsql.sources", "recsql.validate")),
    ("engines", "running SQL text on an engine, and writing results; nothing here composes",
     ("recsql.engines", "recsql.engines.base", "recsql.engines.duckdb", "recsql.engines.sqlite",
      "recsql.engines.postgres", "recsql.engines.mysql", "recsql.engines.spark", "recsql.engines.clickhouse",
      "recsql.engines.datafusion", "recsql.engines.steps", "recsql.output")),
    ("evaluation", "one evaluation's inputs bound on an engine: its validated plan, its request, the errors of its "
                   "input checks, the warnings on the off-policy estimators' weights and on inputs nothing reads",
     ("recsql.plans", "recsql.request", "recsql.explain_logs", "recsql.explain", "recsql.weights_warning",
      "recsql.segment_runs", "recsql.unread_inputs")),
    ("report", "the report's page and tables, drawn from results already computed (read by their fields, so "
               "the results can offer them)",
     ("recsql.report", "recsql.report.data", "recsql.report.tables", "recsql.report.html", "recsql.report.figures",
      "recsql.report.svg")),
    ("results", "what evaluate and compare return, and the comparison of per-user values that Evaluation.compare runs",
     ("recsql.comparison_decisions", "recsql.comparison_result", "recsql.comparison_run", "recsql.evaluation_result")),
    ("evaluate", "the first entry points: evaluate and the Evaluation it returns, and to_sql (which runs nothing)",
     ("recsql.api", "recsql.sql_text")),
    ("entry", "the entry points built on evaluate: compare (its keywords are evaluate's), build_report, dbt "
              "generation, MLflow logging and its mlflow.evaluate evaluator",
     ("recsql.comparison", "recsql.report.build", "recsql.dbt", "recsql.dbt.adapters", "recsql.dbt.names",
      "recsql.dbt.model", "recsql.dbt.quantiles", "recsql.dbt.gates", "recsql.dbt.project", "recsql.mlflow_log", "recsql.mlflow_evaluator")),
    ("cli", "the command line, over every entry point (each subcommand imported by name, recsql.cli.COMMANDS)",
     ("recsql.flags", "recsql.cli_inputs", "recsql.cli_output", "recsql.decisions_cli", "recsql.comparison_cli", "recsql.report.cli",
      "recsql.dbt.cli", "recsql.cli", "recsql.entry", "recsql.__main__")),
)
