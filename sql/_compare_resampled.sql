-- The resampled statistics of recsql.compare (README, "Comparing runs"), per unit (a run's values, or a pair's
-- differences, of one metric): the bootstrap statistics (their interval: sql/_compare_interval.sql) and Fisher's
-- randomization test.
--
-- formula: per resample b, with the users' Poisson(1) weights w and signs s (sql/_compare_draws.sql; one weight
--   per user, shared by every run, so a pair's resample is paired): stat_b = Σ w·v / Σ w (none when Σ w = 0),
--   flipped_b = Σ s·v.
--   Randomization: extreme = #{b : |flipped_b| ≥ |Σ v| − $tolerance·Σ|v|} (the tolerance absorbs the rounding of
--   sums whose exact values are equal); p = (1 + extreme) / ($resamples + 1), finished in Python.
-- cite: Efron & Tibshirani, An Introduction to the Bootstrap, 1993, ch. 6 (the bootstrap); Fisher, The Design
--   of Experiments, 1935, §21 (randomization by sign flips); p with the observed arrangement counted: Phipson & Smyth,
--   Statistical Applications in Genetics and Molecular Biology 9(1), 2010.
--
-- Inputs: cmp_units(run, baseline, metric, user_idx, v), cmp_draws(resample, user_idx, w, s), cmp_observed.
-- Output: cmp_resampled(run, baseline, metric, resample, stat, flipped), cmp_randomization(run, baseline, metric, extreme).
WITH
cmp_resampled AS (
    SELECT u.run AS run, u.baseline AS baseline, u.metric AS metric, d.resample AS resample,
        CAST(SUM(d.w * u.v) AS DOUBLE) / NULLIF(CAST(SUM(d.w) AS DOUBLE), 0) AS stat,
        CAST(SUM(d.s * u.v) AS DOUBLE) AS flipped
    FROM cmp_units AS u
    JOIN cmp_draws AS d ON u.user_idx = d.user_idx
    GROUP BY u.run, u.baseline, u.metric, d.resample
),
cmp_randomization AS (
    SELECT r.run AS run, r.baseline AS baseline, r.metric AS metric,
        CAST(SUM(CASE WHEN ABS(r.flipped) >= ABS(o.sum_v) - $tolerance * o.sum_abs THEN 1 ELSE 0 END) AS BIGINT) AS extreme
    FROM cmp_resampled AS r
    JOIN cmp_observed AS o ON r.run = o.run AND r.baseline = o.baseline AND r.metric = o.metric
    GROUP BY r.run, r.baseline, r.metric
)
SELECT * FROM cmp_randomization
