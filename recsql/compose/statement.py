"""The final statement: per-user values, the summary or raw rows, population counts, and the
finishing select.
"""

from __future__ import annotations

from typing import Sequence

from sqlglot import exp

from ..conventions import resolve_metric
from ..errors import RecsqlError
from ..metrics import Metric, tie_averaged
from ..trees import nodes, parse
from .checks import DIAGNOSTICS, RECS_ROWS, carried_counts, input_checks, uses_exponent
from .columns import metric_columns
from .expressions import metric_expression
from .inputs import (expected_in, catalog_in, features_in, intents_in, interactions_in, items_in, logs_in, recs_in,
                     reward_model_in, segments_in, truth_in)
from .needs import (check_inputs, fit_to_inputs, metric_population, metric_view, on_second_list, plan_inputs,
                    population_condition, second_view)
from .policy import POLICIES, with_policy
from .plan import (GLOBAL_SRC, INTENT_POPULATION_SQL, METRIC_POPULATION_SQL, OUTPUTS, POPULATION_SQL, POPULATIONS,
                   TIES, Plan, internal_runs, staged)
from .rewrite import fold_constants, prune, reachable, union_branches
from .features import largest_cutoff
from .stage import HEADS, build_stage


_RUNNING = ("hits_cum", "nonrel_cum")  # MAP's running hits, bpref's running judged non-relevant items


def _prune_columns(stage: exp.Select, per_user: exp.Select, keys: list[str]) -> None:
    """Keep only the columns of ``ranked`` the metrics read, and the columns of ``stacked`` those
    need, so the rendered query carries no column nobody asked for; and the lists' running counts
    (a window each) only when a metric reads them."""
    ctes = {c.alias: c.this for c in stage.args["with_"].expressions}
    keep = set(keys) | {"user_id", "src"}
    used = keep | {c.name for c in nodes(per_user, exp.Column)}
    ranked = ctes["ranked"]
    ranked.set("expressions", [e for e in ranked.expressions if e.alias_or_name in used])
    used_stacked = keep | {c.name for c in nodes(ranked, exp.Column) if c.table == "s"}
    for branch in union_branches(ctes["stacked"]):
        branch.set("expressions", [e for e in branch.expressions if e.alias_or_name in used_stacked])
        if branch.args["from_"].this.name == "second_rows":  # the second list computes only what is read
            read = set(keys) | {"user_id"} | {c.name for c in nodes(branch, exp.Column)}
            rows = ctes["second_rows"]
            rows.set("expressions", [e for e in rows.expressions if e.alias_or_name in read])
    # The main list keeps its other columns (plain or typed NULLs, they cost nothing).
    read = {c.name for name, tree in ctes.items() if name != "list_rows" for c in nodes(tree, exp.Column)}
    rows = ctes["list_rows"]
    rows.set("expressions", [e for e in rows.expressions
                             if e.alias_or_name not in _RUNNING or e.alias_or_name in read])


def compose(plan: Plan, metrics: list[Metric], output: str = "summary", checks: bool = False) -> exp.Select:
    """The whole statement: ``per_user`` (population rows), ``summary`` (one row per run), or
    ``raw`` (every user seen, internal column names and the flags ``_in_population``,
    ``_has_recs``, ``_n_rel``; :func:`finalize` turns it into the other two). ``checks``: the
    per-user rows carry the input checks too, as the summary does (dbt models, whose tests read them)."""
    if plan.population not in POPULATIONS:
        raise RecsqlError(f"population={plan.population!r} is not valid; choose one of {', '.join(POPULATIONS)}")
    if output not in OUTPUTS:
        raise RecsqlError(f"output={output!r} is not valid; choose one of {', '.join(OUTPUTS)}")
    if plan.ties not in TIES:
        raise RecsqlError(f"ties={plan.ties!r} is not valid; choose one of {', '.join(TIES)}")
    given, _ = plan_inputs(plan)
    resolved = [fit_to_inputs(resolve_metric(m, plan.convention), given) for m in metrics]
    outer, plan = plan, staged(plan)  # with a sample column, each (run, sample) is staged as a run
    if plan.sampled:
        refuse_sampled(outer)
    for rule in plan.rules.values():
        if rule.population is not None and rule.population not in POPULATIONS:
            raise RecsqlError(f"population={rule.population!r} is not valid; choose one of {', '.join(POPULATIONS)}")
    for m in resolved:
        if not m.spec.supports_ties(metric_view(plan, m)[0], m.all_options()):
            raise RecsqlError(f"metric {str(m)!r} has no exact expected value under ties='average'; "
                              f"metrics that do: {', '.join(tie_averaged())} (ndcg/idcg not with ideal=list). "
                              "Use ties='item_id' (deterministic) for the others")
    refuse_logged(plan, resolved)
    plan = with_policy(plan, resolved)  # what the recs are to the estimators' target
    needed = check_inputs(resolved, *plan_inputs(plan))
    second, second_metrics = second_view(plan, resolved)
    stage = build_stage(plan, resolved, second, second_metrics)
    with_ = stage.args["with_"]
    on_second = {id(m) for m in second_metrics}

    def expression(m: Metric) -> exp.Expression:
        tree = metric_expression(m, context)
        return on_second_list(tree) if id(m) in on_second else tree

    read_items = needed  # what items_in and features_in read
    inputs = [("recs_in", recs_in(plan)), ("truth_in", truth_in(plan)), ("items_in", items_in(plan, read_items)),
              ("interactions_in", interactions_in(plan)), ("catalog_in", catalog_in(plan)),
              ("expected_in", expected_in(plan)), ("features_in", features_in(plan, read_items)),
              ("intents_in", intents_in(plan)), ("logs_in", logs_in(plan)), ("reward_model_in", reward_model_in(plan))]
    if plan.segments is not None:  # read by recs_in and truth_in, first
        inputs.insert(0, ("segments_in", segments_in(plan)))
    runs = internal_runs(plan)
    context = {"ties": plan.ties, "has_expected_recs": "yes" if plan.expected_recs is not None else "no"}
    has_global = any(m.spec.population == "global" for m in resolved)
    intent_flags = ["_n_intents"] if any(m.spec.population == "intents" for m in resolved) else []
    if intent_flags and plan.segment_cols and any(metric_population(plan, m) != "intersection" for m in resolved
                                                  if m.spec.population == "intents"):
        raise RecsqlError("the intent-aware metrics with segments= are computed only under population='intersection' "
                          "(intents carry no segment, so a user of intents without a list has no segment to count "
                          "in); pass population='intersection', or evaluate each segment's users apart (a filter "
                          "of recs and intents)")
    columns = metric_columns(metrics)  # each metric's per-user column, named after it
    per_user = exp.select(
        *[exp.column(r) for r in runs], "user_id",
        exp.alias_(exp.Max(this=exp.column("n_rel")), "_n_rel"),
        exp.alias_(exp.Max(this=exp.column("n_truth")), "_n_truth"),
        exp.alias_(exp.Max(this=parse("CASE WHEN src = 1 THEN 1 ELSE 0 END")), "_has_recs"),
        *[exp.alias_(exp.Max(this=exp.column("n_intents")), f) for f in intent_flags],
        *([exp.alias_(exp.Max(this=parse(f"CASE WHEN src IN ({', '.join(map(str, GLOBAL_SRC))}) THEN 1 ELSE 0 END")),
                          "_is_global")]
          if has_global else []),
        *[exp.alias_(exp.cast(expression(m), "DOUBLE"), c) for m, c in zip(resolved, columns)],
    ).from_("ranked").group_by(*[exp.column(r) for r in runs], "user_id")
    _prune_columns(stage, per_user, runs)
    per_user_pops = list({e.sql(): e for e in (population_condition(plan, m) for m in resolved
                                                if m.spec.population != "global")}.values())
    in_pop = exp.or_(*per_user_pops) if per_user_pops else exp.false()
    def value(column: str, m: Metric) -> exp.Expression:
        """A metric's value on a user's row: masked to its population; a global metric's one value
        (on the run's global row, whose user_id is NULL) copied to every row of the run."""
        masked = exp.Case(ifs=[exp.If(this=population_condition(plan, m), true=exp.column(column))])
        if m.spec.population != "global":
            return masked
        return exp.Window(this=exp.Max(this=masked), partition_by=[exp.column(r) for r in runs] or None)

    flagged = exp.select(
        *[exp.column(r) for r in runs], "user_id",
        *[exp.alias_(value(c, m), c) for m, c in zip(resolved, columns)],
        exp.alias_(exp.Case(ifs=[exp.If(this=in_pop, true=exp.Literal.number(1))], default=exp.Literal.number(0)), "_in_population"),
        "_has_recs", "_n_rel", "_n_truth", *intent_flags, *(["_is_global"] if has_global else []),
    ).from_("per_user_raw")
    # recs_in is read by the heaps alone where they serve the checks too (list_heads): never kept whole
    heads = next((c.this for c in with_.expressions if c.alias == HEADS), None)
    ctes = [exp.CTE(this=q, alias=exp.to_identifier(a),
                    **({"materialized": False} if a in plan.inline or (heads and a == "recs_in") else {}))
            for a, q in inputs]
    ctes += list(with_.expressions)
    ctes.append(exp.CTE(this=per_user, alias=exp.to_identifier("per_user_raw")))
    diagnostics: list[str] = []
    carried: list[str] = []  # the check columns every raw row carries
    if output != "per_user" or checks:  # the input checks travel in the statement, as columns of every raw row
        probe = reachable(ctes, exp.select("*").from_("per_user_raw"))  # what the raw rows read
        main = largest_cutoff([m for m in resolved if id(m) not in on_second])
        read = {c.alias for c in probe}
        counts, checks, diagnostics = input_checks(plan, read_items, read,
                                                   {"list_ranked": main, "second_ranked": largest_cutoff(second_metrics)},
                                                   exponent=any(uses_exponent(c) for c in probe),
                                                   heads=heads if HEADS in read else None)
        ctes += [exp.CTE(this=q, alias=exp.to_identifier(a)) for a, q in counts]
        ctes.append(exp.CTE(this=checks, alias=exp.to_identifier("checks")))
        flagged = flagged.join("checks", join_type="cross")
        carried = [*diagnostics, *carried_counts([e.alias_or_name for e in checks.expressions])]
        flagged.set("expressions", [*flagged.expressions, *[exp.column(n) for n in carried]])
    if output == "runs" and per_run_only(plan, resolved):  # evaluate's raw rows, one per run
        if "ranked" in plan.inline:  # read twice below, by the run's users and by its global rows
            for cte in ctes:
                if cte.alias in ("stacked", "ranked"):
                    cte.set("materialized", False)
        ctes += per_run_rows(per_user, runs, columns, carried)
        final = exp.select("*").from_("per_user")
        statement = final.copy()
        statement.set("with_", exp.With(expressions=ctes))
        prune(statement.args["with_"], final)
        return statement
    # the raw rows: per (run, sample, user) first when the runs are sampled, then each user's means over the samples
    every_row = "per_user_all" if has_global else "per_user"
    ctes.append(exp.CTE(this=fold_constants(flagged), alias=exp.to_identifier("per_sample" if plan.sampled else every_row)))
    if plan.sampled:
        global_columns = [c for m, c in zip(resolved, columns) if m.spec.population == "global"]
        ctes.append(exp.CTE(this=sample_means(outer, columns, [*intent_flags, *carried], global_columns),
                            alias=exp.to_identifier(every_row)))
    if has_global:  # the exposure rows' global row (user_id NULL) is not a user
        user_rows = exp.select("*").from_("per_user_all").where(exp.column("_is_global").eq(0))
        ctes.append(exp.CTE(this=user_rows, alias=exp.to_identifier("per_user")))
    if output == "checks":  # the checks alone (evaluate, when the raw rows hold no user to carry them)
        final = exp.select(*carried).from_("checks")
    elif output in ("raw", "runs"):
        final = exp.select("*").from_("per_user")
    else:
        final = finalize(outer, metrics, output, diagnostics)
    statement = final.copy()
    new_with = exp.With(expressions=ctes)
    statement.set("with_", new_with)
    prune(new_with, final)
    return statement


def per_run_only(plan: Plan, metrics: list[Metric]) -> bool:
    """Whether the raw rows can be one per run (output ``runs``): every metric is global (one value per run),
    and nothing is counted over the users (no truth, no segments, no samples, no intents)."""
    return (all(m.spec.population == "global" for m in metrics) and plan.truth is None and plan.intents is None
            and not plan.segment_cols and not plan.sampled)


def per_run_rows(per_user: exp.Select, runs: list[str], columns: list[str], carried: list[str]) -> list[exp.CTE]:
    """The raw rows where every metric is global (:func:`per_run_only`), one per run with a user: the run's
    global row (user_id NULL) aggregated alone, its users' flags as their maxima over the run's rows, and
    one of its user ids, the values the raw rows would have copied to each user (their summary is the
    same) without grouping ``ranked`` by user: the run's users are not grouped at all (``per_user_raw``'s
    GROUP BY user_id held each user's every aggregate, the estimators' sums included, at once)."""
    keys = [exp.column(r) for r in runs]
    made = {e.alias: e.this for e in per_user.expressions}
    flags = {n: made[n] for n in ("_has_recs", "_n_rel", "_n_truth")}
    values = [e for e in per_user.expressions if e.alias in columns]
    nothing = [exp.alias_(exp.cast(exp.null(), "DOUBLE"), c) for c in columns]
    users = exp.select(*keys, exp.alias_(exp.Min(this=exp.column("user_id")), "_user"), *nothing,
                       *[exp.alias_(f.copy(), n) for n, f in flags.items()], exp.alias_(exp.Max(this=exp.Literal.number(1)), "_users")
                       ).from_("ranked").where(exp.column("user_id").is_(exp.null()).not_())
    unflagged = [exp.alias_(exp.cast(exp.null(), "BIGINT"), n) for n in flags]
    global_row = exp.select(*keys, exp.alias_(exp.column("user_id"), "_user"), *[v.copy() for v in values], *unflagged,
                            exp.alias_(exp.Literal.number(0), "_users")).from_("ranked").where(
        exp.column("user_id").is_(exp.null()))
    # without runs the users' aggregate is one row even without users: _users NULL then, and the row not kept
    users, global_row = users.group_by(*keys) if runs else users, global_row.group_by(*keys, "user_id")
    both = exp.union(users, global_row, distinct=False).subquery("r")
    # (the branches' user id is _user: ClickHouse reads an alias in WHERE, and MIN(user_id) AS user_id there too)
    per_run = exp.select(*keys, exp.alias_(exp.Max(this=exp.column("_user")), "user_id"),
                         *[exp.alias_(exp.Max(this=exp.column(c)), c) for c in columns],
                         exp.alias_(exp.Literal.number(0), "_in_population"),
                         *[exp.alias_(exp.Max(this=exp.column(n)), n) for n in flags],
                         exp.alias_(exp.Literal.number(0), "_is_global"),
                         exp.alias_(exp.Max(this=exp.column("_users")), "_with_users")).from_(both)
    per_run = per_run.group_by(*[k.copy() for k in keys]) if runs else per_run  # (no HAVING without GROUP BY: SQLite < 3.39)
    # the one-row checks first: DataFusion holds a cross join's left input (and fails on a union's schema
    # metadata on the right of a one-row relation otherwise: "Schema metadata mismatch")
    rows = exp.select(*[exp.column(n) for n in [*runs, "user_id", *columns, "_in_population", *flags,
                                                "_is_global", *carried]]).from_("checks").join("per_run", join_type="cross") \
        .where(exp.column("_with_users").eq(1))
    return [exp.CTE(this=per_run, alias=exp.to_identifier("per_run")),
            exp.CTE(this=rows, alias=exp.to_identifier("per_user"))]


def refuse_logged(plan: Plan, metrics: list[Metric]) -> None:
    """What the off-policy estimators (docs/guide/logs.md) cannot be evaluated with yet, refused with the reason."""
    logged = [m for m in metrics if "logs" in m.spec.features(m.all_options())]
    if not logged:
        return
    scored = next((m for m in logged if m.all_options().get("target") in POLICIES), None)
    if scored is not None and plan.rank_col:
        raise RecsqlError(f"metric {str(scored)!r} reads the recs' scores as the target policy's probabilities, and "
                          f"these recs are ordered by rank_col={plan.rank_col!r}: pass score_col='<probability "
                          "column>' instead, or target=list (the list's own positions)")
    slates = next((m for m in logged if "log_slates" in m.spec.features(m.all_options())), None)
    if slates is not None and not plan.position_col:
        raise RecsqlError(f"metric {str(slates)!r} reads each logged slate's positions, and these logs have no position "
                          "column: pass position_col='<column>' (1 is the first slot), or use the estimators of one "
                          "slot (ips, snips, ...)")
    scored_slate = next((m for m in logged if m.all_options().get("weights", "impression") != "impression"
                         and m.all_options().get("target", "list") not in ("list", "slates")), None)
    if scored_slate is not None:
        raise RecsqlError(f"metric {str(scored_slate)!r}: the slate and cascade weights are those of the run's list "
                          f"(as slate_ips and slate_rips weigh) or of the recs' probabilities of the logged slates' "
                          f"prefixes (target=slates), not of the recs' scores: drop "
                          f"target={scored_slate.all_options()['target']}, or give those probabilities with target=slates")
    unweighed = next((m for m in logged if m.all_options().get("target") == "slates"
                      and m.all_options().get("weights") == "impression"), None)
    if unweighed is not None:
        raise RecsqlError(f"metric {str(unweighed)!r}: target=slates gives the probabilities of the logged slates' "
                          "prefixes, which are the slate and cascade weights only: add weights=slate or weights=cascade")
    guessed = next((m for m in logged if m.all_options().get("logging") == "ranking"
                    and m.all_options().get("examination") == "logs"), None)
    if guessed is not None:
        raise RecsqlError(f"metric {str(guessed)!r} would estimate the examination probabilities from the logs, which "
                          "only randomized logging allows (a fixed ranking puts the better items higher, so the "
                          "rewards by position mix position with relevance): give them, e.g. "
                          "pbm_ips(logging=ranking, examination=1 / rank), or use logging=randomized")
    if plan.segment_cols or plan.sampled:
        raise RecsqlError(f"metric {str(logged[0])!r} with {'segments' if plan.segment_cols else 'sample_col'} is not "
                          "supported yet: evaluate the off-policy estimators without them")


def refuse_sampled(plan: Plan) -> None:
    """What a sampled run (``sample_col``) cannot be evaluated with yet, refused with the reason."""
    if plan.segment_cols:
        raise RecsqlError(f"sample_col={plan.sample_col!r} with segments is not supported yet; evaluate each "
                          f"segment's users apart (a filter of recs and truth)")
    if plan.truth_has_runs:
        raise RecsqlError(f"sample_col={plan.sample_col!r}: truth carries the run columns, and truth per run of "
                          f"a sampled run is not supported yet; give truth without the run columns (shared)")


def sample_means(plan: Plan, columns: list[str], carried: list[str], global_columns: list[str]) -> exp.Select:
    """The raw rows of a sampled run from ``per_sample`` (those of each (run, sample, user)): each per-user
    metric's mean over the samples where the user is in its population (AVG skips the NULLs of the others),
    the user's flags from any sample, the ``carried`` input checks (constants); a global metric's mean over
    the samples (their global rows' values: ``global_columns``) on every row of the run, its global row kept."""
    runs = [exp.column(r) for r in internal_runs(plan)]
    flags = ["_in_population", "_has_recs", "_n_rel", "_n_truth", *carried]
    grouping = ["_is_global"] if global_columns else []  # a run's global row (user_id NULL) apart from its users'
    means = exp.select(*runs, "user_id", *grouping, *[exp.alias_(exp.Avg(this=exp.column(c)), c) for c in columns],
                       *[exp.alias_(exp.Max(this=exp.column(c)), c) for c in flags]
                       ).from_("per_sample").group_by(*[r.copy() for r in runs], "user_id", *grouping)
    if not global_columns:
        return means

    def of_run(column: str) -> exp.Expression:  # the run's global row's mean, on every row of the run
        value = exp.Case(ifs=[exp.If(this=exp.column("_is_global").eq(1), true=exp.column(column))])
        return exp.alias_(exp.Window(this=exp.Max(this=value), partition_by=[r.copy() for r in runs] or None), column)

    return exp.select(*[r.copy() for r in runs], "user_id",
                      *[of_run(c) if c in global_columns else exp.column(c) for c in columns], *flags, "_is_global"
                      ).from_(means.subquery("m"))


def _run_aliases(plan: Plan) -> list[exp.Expression]:
    return [exp.alias_(exp.column(r), exp.to_identifier(c, quoted=True)) for r, c in zip(internal_runs(plan), plan.run_cols)]


_SUMMARY: dict[str, type[exp.AggFunc]] = {"mean": exp.Avg, "sum": exp.Sum, "global": exp.Max}


def population_counts(plan: Plan, metrics: list[Metric]) -> list[tuple[str, str, str]]:
    """The summary's user counts, one per population the asked metrics average over, as
    (column, condition on the raw per-user rows, metric kind): ``n_users`` for the truth metrics'
    population (the plan's: the convention's or ``population=``), ``n_users_<metric>`` for a truth
    metric a convention averages over another population (msr's ndcg), ``n_users_with_recs`` for the
    list-only metrics, ``n_users_intents`` for the intent-aware ones (the plan's population read on
    intents; ``n_users_<metric>`` under a convention's other one); global metrics average over nobody.
    A count is there only when a metric uses its population, so a column always means the same thing."""
    counts: dict[str, tuple[str, str]] = {}
    for m in metrics:
        population = metric_population(plan, m)
        if m.spec.population == "truth":
            name = "n_users" if population == plan.population else f"n_users_{m.name}"
            counts.setdefault(name, (POPULATION_SQL[population], "truth"))
        elif m.spec.population == "intents":
            name = "n_users_intents" if population == plan.population else f"n_users_{m.name}"
            counts.setdefault(name, (INTENT_POPULATION_SQL[population], "intents"))
        elif m.spec.population == "lists":
            counts.setdefault("n_users_with_recs", (METRIC_POPULATION_SQL["lists"], "lists"))
    order = sorted(counts, key=lambda n: (n != "n_users", n == "n_users_with_recs"))  # stable otherwise
    return [(name, *counts[name]) for name in order]


def _count(condition: str, name: str) -> exp.Expression:
    return exp.alias_(parse(f"CAST(COALESCE(SUM(CASE WHEN {condition} THEN 1 ELSE 0 END), 0) AS BIGINT)"),
                      name)


def finalize(plan: Plan, metrics: list[Metric], output: str, diagnostics: Sequence[str] = (),
             typed: bool = False) -> exp.Select:
    """The last SELECT, over the relation ``per_user`` (the raw rows): summary or per-user.
    ``diagnostics``: the input-check columns the raw rows carry (:func:`compose`), copied to the summary.
    ``typed``: each metric's raw column read as DOUBLE, for rows fetched through a DB-API driver, where a
    column NULL in every row arrives without a type (so every engine's frame has float64 metric columns)."""
    names = [exp.to_identifier(m.column, quoted=True) for m in metrics]
    columns = [exp.cast(exp.column(c), "DOUBLE") if typed else exp.column(c) for c in metric_columns(metrics)]
    checks = [n for n in diagnostics if n in DIAGNOSTICS]
    if output == "summary":
        # each metric's column holds values only for its population (compose); a global metric's
        # one value sits on the run's global row
        diagnostics = [] if plan.truth is None else [
            _count("_n_rel > 0 AND _has_recs = 0", "users_without_recs"),
            _count("_n_rel = 0 AND _has_recs = 1", "recs_users_without_truth")]
        select = exp.select(
            *_run_aliases(plan),
            *[_count(condition, name) for name, condition, _ in population_counts(plan, metrics)],
            *[exp.alias_(_SUMMARY[m.spec.population if m.spec.population == "global" else m.spec.summary](
                this=c), n) for m, c, n in zip(metrics, columns, names)],
            *diagnostics,
            # from the checks CTE itself, not the per-user rows: invalid rows may leave no user at all
            *[exp.alias_(exp.Subquery(this=exp.select(n).from_("checks")), n) for n in checks],
        ).from_("per_user")
        runs = [exp.column(r) for r in internal_runs(plan)]
        return select.group_by(*runs).order_by(*runs) if runs else select
    select = exp.select(
        *_run_aliases(plan), exp.alias_(exp.column("user_id"), exp.to_identifier(plan.user_col, quoted=True)),
        *[exp.alias_(c, n) for m, c, n in zip(metrics, columns, names) if m.spec.population != "global"],
        *[exp.alias_(exp.Subquery(this=exp.select(n).from_("checks")), n) for n in checks],
    ).from_("per_user")
    return select.where(exp.column("_in_population").eq(1)).order_by(*[exp.column(r) for r in internal_runs(plan)], "user_id")
