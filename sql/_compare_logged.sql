-- The resampled traffic through which recsql.compare recomputes an off-policy estimator by its own template (README,
-- "Comparing runs"; docs/guide/logs.md): ips, snips, dm, dr, switch_dr, ess, max_weight, the slate estimators and
-- pbm_ips (family: off_policy; recsql/comparison_logged.py).
--
-- formula: the resampling unit is the logged context (the logs' user), shared by every run: each (run, baseline,
--   resample, side) is one more run of an evaluation whose logs carry its key, cmp_key as in sql/_compare_weighted.sql
--   (unit·($resamples + 1) + resample)·4 + side, with
--   side 3, baseline 0: context x's logged impressions repeated w_x times, w_x the Poisson(1) weight of resample b
--     (sql/_compare_draws.sql; resample 0: every w_x = 1, the observed estimate), beside the run's lists of the
--     contexts drawn (w_x > 0). Every sum of an estimator over the impressions (n, Σ w, Σ w², Σ w r, Σ q̂, ...) so
--     counts each of x's impressions w_x times, and its value is the estimator on the reweighted traffic; a
--     context drawn 0 times is not in the resample. Each copy is numbered (copy 1..w_x), and a slate estimator
--     reads each copy as a slate of its own (the stage's slate windows are per copy: Plan.logs_copy_col);
--   sides 1 and 2 of a pair (run, baseline), resample b ≥ 1: every impression once; side 1 holds the run's list of
--     each context whose sign s_x (stream 2) is +1 and the baseline's of each whose sign is −1, side 2 the others.
--   The runs of a pair are estimated on the same logs, so the pair is paired by context: its bootstrap difference
--   is stat_b(run) − stat_b(baseline) on the same reweighted traffic, and its randomization swaps the two
--   policies' lists context by context (under the null hypothesis the two policies have the same value on these
--   contexts, whose lists are then exchangeable).
--   n: the logged contexts.
-- cite: Poisson bootstrap: Hanley & MacGibbon 2006; randomization by swapping a unit's treatments: Fisher 1935, §21.
--
-- Inputs: logs_in (the evaluation's logged impressions), cmp_contexts(user_id, user_idx) (each logged context and
-- its draw index), cmp_olists(run, user_idx, user_id, item_id, ord, position) (each logged context's list in each run; position:
-- target=positions' rows per position, else NULL),
-- cmp_draws, cmp_resamples, cmp_runs, cmp_global_pairs, cmp_global_owners, cmp_global_units,
-- cmp_logged_metrics(metric).
-- Output: cmp_orecs(cmp_key, user_id, item_id, ord, position), cmp_ologs(cmp_key, user_id, item_id, position, propensity,
-- reward, slate_propensity, cascade_propensity, copy: which of the context's w_x copies the row is, each copy its own
-- slate for the slate estimators), cmp_logged_run_users(run, segment, w1), cmp_global_logged_users(run, baseline, metric, n). Compared without
-- segments only (evaluate computes no estimator within segments): every unit is in the one segment 0.
WITH
cmp_logged_draws AS (
    SELECT resample, user_idx, w FROM cmp_draws
    UNION ALL
    SELECT CAST(0 AS BIGINT) AS resample, user_idx, CAST(1 AS BIGINT) AS w FROM cmp_contexts
),
cmp_logged_digits AS (
    SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
    UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9
),
cmp_logged_copies AS (
    -- 1..$max_draw: every Poisson(1) draw (POISSON(u) is at most $max_draw)
    SELECT CAST(a.d + 10 * b.d AS BIGINT) AS n_copy
    FROM cmp_logged_digits AS a CROSS JOIN cmp_logged_digits AS b
    WHERE a.d + 10 * b.d BETWEEN 1 AND $max_draw
),
cmp_orecs AS (
    SELECT CAST((u.unit * ($resamples + 1) + d.resample) * 4 + 3 AS BIGINT) AS cmp_key,
        l.user_id AS user_id, l.item_id AS item_id, l.ord AS ord, l.position AS position
    FROM cmp_olists AS l
    JOIN cmp_global_units AS u ON l.run = u.run AND u.baseline = 0
    JOIN cmp_logged_draws AS d ON l.user_idx = d.user_idx
    WHERE d.w > 0
    UNION ALL
    SELECT CAST((u.unit * ($resamples + 1) + d.resample) * 4
                + CASE WHEN (o.role = 1 AND d.s = 1) OR (o.role = 2 AND d.s = -1) THEN 1 ELSE 2 END AS BIGINT) AS cmp_key,
        l.user_id AS user_id, l.item_id AS item_id, l.ord AS ord, l.position AS position
    FROM cmp_global_owners AS o
    JOIN cmp_global_units AS u ON o.run = u.run AND o.baseline = u.baseline
    JOIN cmp_olists AS l ON l.run = o.owner
    JOIN cmp_draws AS d ON l.user_idx = d.user_idx
),
cmp_ologs AS (
    SELECT CAST((u.unit * ($resamples + 1) + d.resample) * 4 + 3 AS BIGINT) AS cmp_key,
        l.user_id AS user_id, l.item_id AS item_id, l.position AS position, l.propensity AS propensity,
        l.reward AS reward, l.slate_propensity AS slate_propensity, l.cascade_propensity AS cascade_propensity,
        k.n_copy AS copy
    FROM logs_in AS l
    JOIN cmp_contexts AS c ON l.user_id = c.user_id
    JOIN cmp_logged_draws AS d ON c.user_idx = d.user_idx
    JOIN cmp_logged_copies AS k ON k.n_copy <= d.w
    JOIN cmp_global_units AS u ON u.baseline = 0
    UNION ALL
    SELECT CAST((u.unit * ($resamples + 1) + r.resample) * 4 + s.side AS BIGINT) AS cmp_key,
        l.user_id AS user_id, l.item_id AS item_id, l.position AS position, l.propensity AS propensity,
        l.reward AS reward, l.slate_propensity AS slate_propensity, l.cascade_propensity AS cascade_propensity,
        CAST(1 AS BIGINT) AS copy
    FROM logs_in AS l
    CROSS JOIN cmp_resamples AS r
    CROSS JOIN (SELECT 1 AS side UNION ALL SELECT 2 AS side) AS s
    JOIN cmp_global_units AS u ON u.baseline <> 0
),
cmp_logged_run_users AS (
    SELECT r.run AS run, CAST(0 AS BIGINT) AS segment, CAST(COUNT(*) AS BIGINT) AS w1
    FROM cmp_runs AS r CROSS JOIN cmp_contexts AS c GROUP BY r.run
),
cmp_global_logged_users AS (
    SELECT p.run AS run, p.baseline AS baseline, m.metric AS metric, CAST(COUNT(*) AS BIGINT) AS n
    FROM cmp_global_pairs AS p
    CROSS JOIN cmp_logged_metrics AS m
    CROSS JOIN cmp_contexts AS c
    GROUP BY p.run, p.baseline, m.metric
)
SELECT * FROM cmp_ologs
