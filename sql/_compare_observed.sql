-- The observed statistics of recsql.compare (README, "Comparing runs"), per unit: a run's values of one
-- metric (baseline = 0), or the paired differences v = x_run − x_baseline of one metric over the users
-- with a value in both runs.
--
-- formula: n = #users, mean = Σv / n, ss = Σ(v − mean)² (two passes, no cancellation); q = ROUND(v·$grain) the
--   difference on a grid of 1/$grain (differences equal but for the rounding of sums, whose order differs
--   between engines, are equal on the grid); wins / ties / losses = #{q > 0} / #{q = 0} / #{q < 0};
--   Student's paired t = mean / sqrt(ss / (n − 1) / n) with n − 1 degrees of
--   freedom and Cohen's d_z = mean / sqrt(ss / (n − 1)) are finished in Python (scipy.stats.t for the tail).
-- cite: Student, "The probable error of a mean", Biometrika 6(1), 1908; Cohen, Statistical Power Analysis for
--   the Behavioral Sciences, 2nd ed., 1988 (d_z).
--
-- Inputs: cmp_values(run, user_idx, metric, x); cmp_runs(run, ...); cmp_baselines(run, every): the runs that
-- are baselines (every = 1: every pair once, the later run minus the earlier; 0: each run minus this one).
-- Output: cmp_pairs(run, baseline, metric, user_idx, v, q), cmp_units(run, baseline, metric, user_idx, v, q),
-- cmp_observed, cmp_spread.
WITH
cmp_pairs AS (
    SELECT a.run AS run, b.run AS baseline, a.metric AS metric, a.user_idx AS user_idx, a.x - b.x AS v,
        ROUND((a.x - b.x) * $grain) AS q
    FROM cmp_values AS a
    JOIN cmp_values AS b ON a.user_idx = b.user_idx AND a.metric = b.metric
    JOIN cmp_baselines AS c ON b.run = c.run
    WHERE a.run <> b.run AND (c.every = 0 OR a.run > b.run)
),
cmp_units AS (
    SELECT run, CAST(0 AS BIGINT) AS baseline, metric, user_idx, x AS v, ROUND(x * $grain) AS q FROM cmp_values
    UNION ALL
    SELECT run, baseline, metric, user_idx, v, q FROM cmp_pairs
),
cmp_observed AS (
    SELECT run, baseline, metric,
        CAST(COUNT(*) AS BIGINT) AS n,
        CAST(SUM(v) AS DOUBLE) AS sum_v,
        CAST(SUM(v) AS DOUBLE) / COUNT(*) AS mean,
        CAST(SUM(ABS(v)) AS DOUBLE) AS sum_abs,
        CAST(SUM(CASE WHEN q > 0 THEN 1 ELSE 0 END) AS BIGINT) AS wins,
        CAST(SUM(CASE WHEN q = 0 THEN 1 ELSE 0 END) AS BIGINT) AS ties,
        CAST(SUM(CASE WHEN q < 0 THEN 1 ELSE 0 END) AS BIGINT) AS losses
    FROM cmp_units
    GROUP BY run, baseline, metric
),
cmp_spread AS (
    SELECT u.run AS run, u.baseline AS baseline, u.metric AS metric,
        CAST(SUM((u.v - o.mean) * (u.v - o.mean)) AS DOUBLE) AS ss
    FROM cmp_units AS u
    JOIN cmp_observed AS o ON u.run = o.run AND u.baseline = o.baseline AND u.metric = o.metric
    GROUP BY u.run, u.baseline, u.metric
)
SELECT * FROM cmp_spread
