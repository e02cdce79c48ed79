-- The bootstrap statistics and randomization counts of recsql.compare's global metrics (README, "Comparing runs"),
-- from each metric's value per (run, baseline, resample, side), however it was counted (sql/_compare_global.sql from
-- exposure counts, sql/_compare_weighted.sql by the metric's own template over weighted lists).
--
-- formula: side 3 of (run, baseline 0) is a run's value, resample 0 the observed one (every weight 1), resample b > 0
--   under the users' Poisson weights of b; sides 1 and 2 of (run, baseline) are the values of the pair's two
--   randomized sets of lists at resample b. A pair reads its run's and its baseline's own values as sides 3 and 4.
--   Bootstrap: stat_b of a run, or stat_b(run) − stat_b(baseline) for a pair (none where either is undefined),
--   through sql/_compare_interval.sql. Randomization: flipped_b = stat_b(side 1) − stat_b(side 2);
--   extreme = #{b : |flipped_b| ≥ |stat(run) − stat(baseline)| − $tolerance·(|stat(run)| + |stat(baseline)|)}
--   (a resample whose statistic is undefined on a side is not extreme); p = (1 + extreme) / ($resamples + 1).
--   n: a run's users with a list (w1 of its observed value), a pair's users with a list in either run.
-- cite: Efron & Tibshirani, An Introduction to the Bootstrap, 1993, ch. 6; Fisher, The Design of Experiments,
--   1935, §21; Phipson & Smyth, Statistical Applications in Genetics and Molecular Biology 9(1), 2010.
--
-- Inputs: cmp_global_group_stats(run, baseline, metric, resample, side, stat, w1), cmp_global_pair_users(run,
-- baseline, metric, n), cmp_global_pairs, cmp_runs. Output: cmp_global_observed(run, baseline, metric, n, mean,
-- extreme), cmp_global_bootstrap(run, baseline, metric, resample, stat).
WITH
cmp_global_readers AS (
    SELECT run AS from_run, CAST(0 AS BIGINT) AS from_baseline, 3 AS from_side,
        run, CAST(0 AS BIGINT) AS baseline, 3 AS side
    FROM cmp_runs
    UNION ALL
    SELECT CASE WHEN k.kind = 2 THEN p.baseline ELSE p.run END AS from_run,
        CASE WHEN k.kind <= 2 THEN CAST(0 AS BIGINT) ELSE p.baseline END AS from_baseline,
        CASE WHEN k.kind <= 2 THEN 3 ELSE k.kind - 2 END AS from_side,
        p.run AS run, p.baseline AS baseline, CASE WHEN k.kind <= 2 THEN 2 + k.kind ELSE k.kind - 2 END AS side
    FROM cmp_global_pairs AS p
    CROSS JOIN (SELECT 1 AS kind UNION ALL SELECT 2 AS kind UNION ALL SELECT 3 AS kind UNION ALL SELECT 4 AS kind) AS k
),
cmp_global_sides AS (
    SELECT r.run AS run, r.baseline AS baseline, s.metric AS metric, s.resample AS resample,
        MAX(CASE WHEN r.side = 3 THEN s.stat END) AS run_stat,
        MAX(CASE WHEN r.side = 4 THEN s.stat END) AS baseline_stat,
        MAX(CASE WHEN r.side = 1 THEN s.stat END) - MAX(CASE WHEN r.side = 2 THEN s.stat END) AS flipped,
        MAX(CASE WHEN r.side = 3 THEN s.w1 END) AS run_users
    FROM cmp_global_group_stats AS s
    JOIN cmp_global_readers AS r ON s.run = r.from_run AND s.baseline = r.from_baseline AND s.side = r.from_side
    GROUP BY r.run, r.baseline, s.metric, s.resample
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
cmp_global_observed AS (
    SELECT t.run AS run, t.baseline AS baseline, t.metric AS metric,
        CAST(COALESCE(p.n, t.run_users) AS BIGINT) AS n, t.mean AS mean, t.extreme AS extreme
    FROM cmp_global_tested AS t
    LEFT JOIN cmp_global_pair_users AS p ON t.run = p.run AND t.baseline = p.baseline AND t.metric = p.metric
)
SELECT * FROM cmp_global_observed
