-- The global metrics of recsql.compare (README, "Comparing runs"): coverage, Gini and personalization, one number
-- per run computed from item exposure counts, resampled by weighting each user's list and randomized by swapping
-- a user's lists between two runs.
--
-- formula: a user u with a list L_u (its top k) in a run has the weight w_u: 1 for the observed value, the Poisson(1)
--   weight of sql/_compare_draws.sql for resample b (shared by every run, so a pair's resample is paired).
--   Per item i: C_i = Σ_{u : i ∈ L_u} w_u (weighted exposure), D_i = Σ_{u : i ∈ L_u} w_u²; W = Σ_u w_u and
--   W2 = Σ_u w_u² over the users with a list; m = #catalog, s = #{catalog items with C_i > 0}.
--   coverage@k = s / m;
--   gini@k = (2·Σ_{r=1..s} r·C_(r) + (m − 2s − 1)·Σ C) / (m·Σ C), C_(r) the catalog items' C ascending (the
--     m − s items with C = 0 come first: sql/gini.sql);
--   personalization@k = 1 − Σ_i (C_i² − D_i) / ((W² − W2)·k): the pairs u ≠ v weighted w_u·w_v, since
--     Σ_{u≠v} w_u·w_v·#(L_u ∩ L_v) = Σ_i ((Σ_{u∋i} w_u)² − Σ_{u∋i} w_u²) and Σ_{u≠v} w_u·w_v = W² − W2
--     (with every w = 1: 1 − Σ_i c_i(c_i − 1) / (U(U − 1)·k), sql/personalization.sql);
--   each NULL as its template's (m = 0, Σ C = 0, W² − W2 = 0). Every sum is of integers, so exact on every engine.
--   Interval: the stat_b of a run, or stat_b(run) − stat_b(baseline) for a pair, through sql/_compare_interval.sql.
--   Randomization, per pair and resample b: a user whose sign s (stream 2) is −1 swaps its lists between the two
--   runs (side 1 holds the run's lists of the users with s = +1 and the baseline's of those with s = −1, side 2
--   the others; every weight 1); flipped_b = stat(side 1) − stat(side 2);
--   extreme = #{b : |flipped_b| ≥ |stat(run) − stat(baseline)| − $tolerance·(|stat(run)| + |stat(baseline)|)}
--   (a resample whose statistic is undefined on a side is not extreme); p = (1 + extreme) / ($resamples + 1).
--   n: the users with a list in the run (a pair: in either run).
--   One pass over groups of weighted lists, each group's metric computed from its counts: per run and resample b
--   (0: the observed, every weight 1) the run's lists with the bootstrap weights (side 3), computed once and read
--   by the run's own unit (side 3) and by every pair it is in (side 3 for the run, 4 for the baseline); per pair
--   and resample b > 0 the swapped lists (sides 1 and 2). Σ_r r·C_(r) is summed per level of C: the n items with
--   C = c after `below` items with a smaller C hold the ranks below + 1..below + n, so they add
--   c·(n·below + n(n + 1)/2) (integers, the same sum as numbering every item).
-- cite: Poisson bootstrap: Hanley & MacGibbon 2006; weighted U-statistics (pairs weighted w_u·w_v, u ≠ v):
--   Janssen, "Weighted bootstrapping of U-statistics", Journal of Statistical Planning and Inference 38(1), 1994;
--   randomization by swapping a unit's treatments: Fisher 1935, §21; Smucker, Allan & Carterette, CIKM 2007.
--
-- Inputs: cmp_lists(run, user_idx, metric, item_id, in_catalog, first) (a user's top k of one global metric; first:
-- 1 on its first item, so that Σ over items of w·first = Σ over users of w),
-- cmp_global_metrics(metric, kind, k, n_catalog) (kind 1 coverage, 2 gini, 3 personalization), cmp_draws,
-- cmp_runs, cmp_baselines. Output: cmp_global_observed(run, baseline, metric, n, mean, extreme),
-- cmp_global_bootstrap(run, baseline, metric, resample, stat).
WITH
cmp_list_users AS (
    SELECT DISTINCT run, metric, user_idx FROM cmp_lists
),
cmp_global_pairs AS (
    SELECT a.run AS run, b.run AS baseline, m.metric AS metric
    FROM cmp_runs AS a
    CROSS JOIN cmp_baselines AS b
    CROSS JOIN cmp_global_metrics AS m
    WHERE a.run <> b.run AND (b.every = 0 OR a.run > b.run)
),
cmp_global_owners AS (
    SELECT p.run AS run, p.baseline AS baseline, p.metric AS metric,
        CASE WHEN k.role = 1 THEN p.run ELSE p.baseline END AS owner
    FROM cmp_global_pairs AS p CROSS JOIN (SELECT 1 AS role UNION ALL SELECT 2 AS role) AS k
),
cmp_global_weights AS (
    SELECT run, CAST(0 AS BIGINT) AS baseline, metric, CAST(0 AS BIGINT) AS resample, CAST(3 AS BIGINT) AS side,
        run AS owner, user_idx, CAST(1 AS BIGINT) AS w
    FROM cmp_list_users
    UNION ALL
    SELECT u.run AS run, CAST(0 AS BIGINT) AS baseline, u.metric AS metric, d.resample AS resample,
        CAST(3 AS BIGINT) AS side, u.run AS owner, u.user_idx AS user_idx, d.w AS w
    FROM cmp_list_users AS u JOIN cmp_draws AS d ON u.user_idx = d.user_idx
    WHERE d.w > 0
    UNION ALL
    SELECT o.run AS run, o.baseline AS baseline, o.metric AS metric, d.resample AS resample,
        CASE WHEN (o.owner = o.run AND d.s = 1) OR (o.owner <> o.run AND d.s = -1) THEN 1 ELSE 2 END AS side,
        o.owner AS owner, u.user_idx AS user_idx, CAST(1 AS BIGINT) AS w
    FROM cmp_global_owners AS o
    JOIN cmp_list_users AS u ON u.metric = o.metric AND u.run = o.owner
    JOIN cmp_draws AS d ON u.user_idx = d.user_idx
),
cmp_global_counts AS (
    SELECT g.run AS run, g.baseline AS baseline, g.metric AS metric, g.resample AS resample, g.side AS side,
        l.item_id AS item_id, MAX(l.in_catalog) AS in_catalog,
        CAST(SUM(g.w) AS BIGINT) AS c, CAST(SUM(g.w * g.w) AS BIGINT) AS d,
        CAST(SUM(g.w * l.first) AS BIGINT) AS c_first, CAST(SUM(g.w * g.w * l.first) AS BIGINT) AS d_first
    FROM cmp_global_weights AS g
    JOIN cmp_lists AS l ON l.run = g.owner AND l.metric = g.metric AND l.user_idx = g.user_idx
    GROUP BY g.run, g.baseline, g.metric, g.resample, g.side, l.item_id
),
cmp_global_levels AS (
    SELECT run, baseline, metric, resample, side, in_catalog, c,
        CAST(COUNT(*) AS BIGINT) AS n, CAST(SUM(d) AS BIGINT) AS d,
        CAST(SUM(c_first) AS BIGINT) AS c_first, CAST(SUM(d_first) AS BIGINT) AS d_first
    FROM cmp_global_counts
    GROUP BY run, baseline, metric, resample, side, in_catalog, c
),
cmp_global_ranked AS (
    SELECT run, baseline, metric, resample, side, in_catalog, c, n, d, c_first, d_first,
        CAST(SUM(n) OVER (PARTITION BY run, baseline, metric, resample, side, in_catalog ORDER BY c
                          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - n AS BIGINT) AS below
    FROM cmp_global_levels
),
cmp_global_sums AS (
    SELECT run, baseline, metric, resample, side,
        CAST(SUM(in_catalog * n) AS BIGINT) AS covered,
        CAST(SUM(in_catalog * n * c) AS BIGINT) AS exposed,
        CAST(SUM(in_catalog * c * (2 * n * below + n * (n + 1))) AS BIGINT) AS ranked_exposure2,
        CAST(SUM(n * c * c - d) AS BIGINT) AS shared,
        CAST(SUM(c_first) AS BIGINT) AS w1,
        CAST(SUM(d_first) AS BIGINT) AS w2
    FROM cmp_global_ranked
    GROUP BY run, baseline, metric, resample, side
),
cmp_global_group_stats AS (
    SELECT s.run AS run, s.baseline AS baseline, s.metric AS metric, s.resample AS resample, s.side AS side,
        CASE m.kind
            WHEN 1 THEN CAST(s.covered AS DOUBLE) / NULLIF(CAST(m.n_catalog AS DOUBLE), 0)
            WHEN 2 THEN CAST(s.ranked_exposure2 + (m.n_catalog - 2 * s.covered - 1) * s.exposed AS DOUBLE)
                        / NULLIF(CAST(m.n_catalog * s.exposed AS DOUBLE), 0)
            WHEN 3 THEN 1 - CAST(s.shared AS DOUBLE) / NULLIF(CAST(s.w1 * s.w1 - s.w2 AS DOUBLE) * m.k, 0)
        END AS stat,
        s.w1 AS w1
    FROM cmp_global_sums AS s
    JOIN cmp_global_metrics AS m ON s.metric = m.metric
),
cmp_global_stats AS (
    SELECT run, baseline, metric, resample, side, stat, w1 FROM cmp_global_group_stats
    UNION ALL
    SELECT o.run AS run, o.baseline AS baseline, o.metric AS metric, s.resample AS resample,
        CASE WHEN o.owner = o.run THEN 3 ELSE 4 END AS side, s.stat AS stat, s.w1 AS w1
    FROM cmp_global_owners AS o
    JOIN cmp_global_group_stats AS s ON s.side = 3 AND s.run = o.owner AND s.metric = o.metric
),
cmp_global_sides AS (
    SELECT run, baseline, metric, resample,
        MAX(CASE WHEN side = 3 THEN stat END) AS run_stat,
        MAX(CASE WHEN side = 4 THEN stat END) AS baseline_stat,
        MAX(CASE WHEN side = 1 THEN stat END) - MAX(CASE WHEN side = 2 THEN stat END) AS flipped,
        MAX(CASE WHEN side = 3 THEN w1 END) AS run_users
    FROM cmp_global_stats
    GROUP BY run, baseline, metric, resample
),
cmp_global_resampled AS (
    SELECT run, baseline, metric, resample, flipped, run_users,
        CASE WHEN baseline = 0 THEN run_stat ELSE run_stat - baseline_stat END AS stat,
        MAX(CASE WHEN resample = 0 THEN run_stat END) OVER (PARTITION BY run, baseline, metric) AS run_observed,
        MAX(CASE WHEN resample = 0 THEN baseline_stat END) OVER (PARTITION BY run, baseline, metric) AS baseline_observed
    FROM cmp_global_sides
),
cmp_global_bootstrap AS (
    SELECT run, baseline, metric, resample, stat FROM cmp_global_resampled WHERE resample > 0 AND stat IS NOT NULL
),
cmp_global_tested AS (
    SELECT run, baseline, metric,
        MAX(CASE WHEN resample = 0 THEN stat END) AS mean,
        MAX(CASE WHEN resample = 0 THEN run_users END) AS run_users,
        CASE WHEN MAX(run_observed) IS NULL OR MAX(baseline_observed) IS NULL THEN NULL ELSE
            CAST(SUM(CASE WHEN resample > 0 AND ABS(flipped) >= ABS(run_observed - baseline_observed)
                               - $tolerance * (ABS(run_observed) + ABS(baseline_observed)) THEN 1 ELSE 0 END)
                 AS BIGINT) END AS extreme
    FROM cmp_global_resampled
    GROUP BY run, baseline, metric
),
cmp_global_pair_users AS (
    SELECT p.run AS run, p.baseline AS baseline, p.metric AS metric, CAST(COUNT(DISTINCT u.user_idx) AS BIGINT) AS n
    FROM cmp_global_pairs AS p
    JOIN cmp_list_users AS u ON u.metric = p.metric AND (u.run = p.run OR u.run = p.baseline)
    GROUP BY p.run, p.baseline, p.metric
),
cmp_global_observed AS (
    SELECT t.run AS run, t.baseline AS baseline, t.metric AS metric,
        CAST(COALESCE(p.n, t.run_users) AS BIGINT) AS n, t.mean AS mean, t.extreme AS extreme
    FROM cmp_global_tested AS t
    LEFT JOIN cmp_global_pair_users AS p ON t.run = p.run AND t.baseline = p.baseline AND t.metric = p.metric
)
SELECT * FROM cmp_global_observed
