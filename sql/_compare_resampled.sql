-- The resampled statistics of recsql.compare (README, "Comparing runs"), per unit (a run's values, or a pair's
-- differences, of one metric): percentile bootstrap interval and Fisher's randomization test.
--
-- formula: per resample b, with the users' Poisson(1) weights w and signs s (sql/_compare_draws.sql; one weight
--   per user, shared by every run, so a pair's resample is paired): stat_b = Σ w·v / Σ w (none when Σ w = 0),
--   flipped_b = Σ s·v. Interval: the $low and $high quantiles of the stat_b, linearly interpolated between
--   order statistics (numpy.quantile's default): h = (m − 1)·q over the m resamples with a statistic,
--   value = s_(⌊h⌋+1) + (h − ⌊h⌋)·(s_(⌊h⌋+2) − s_(⌊h⌋+1)); q = $low_num / $den and $high_num / $den exactly.
--   Randomization: extreme = #{b : |flipped_b| ≥ |Σ v| − $tolerance·Σ|v|} (the tolerance absorbs the rounding of
--   sums whose exact values are equal); p = (1 + extreme) / ($resamples + 1), finished in Python.
-- cite: Efron & Tibshirani, An Introduction to the Bootstrap, 1993, ch. 13 (percentile interval); Fisher, The Design
--   of Experiments, 1935, §21 (randomization by sign flips); p with the observed arrangement counted: Phipson & Smyth,
--   Statistical Applications in Genetics and Molecular Biology 9(1), 2010.
--
-- Inputs: cmp_units(run, baseline, metric, user_idx, v), cmp_draws(resample, user_idx, w, s), cmp_observed.
-- Output: cmp_randomization(run, baseline, metric, extreme), cmp_interval(run, baseline, metric, resampled, ci_low, ci_high).
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
),
cmp_sorted AS (
    SELECT run, baseline, metric, stat,
        CAST(ROW_NUMBER() OVER (PARTITION BY run, baseline, metric ORDER BY stat) AS BIGINT) AS rn,
        CAST(COUNT(*) OVER (PARTITION BY run, baseline, metric) AS BIGINT) AS m
    FROM cmp_resampled
    WHERE stat IS NOT NULL
),
cmp_positions AS (
    SELECT run, baseline, metric, stat, rn, m,
        ((m - 1) * $low_num - ((m - 1) * $low_num) % $den) / $den + 1 AS low_at,
        CAST(((m - 1) * $low_num) % $den AS DOUBLE) / $den AS low_frac,
        ((m - 1) * $high_num - ((m - 1) * $high_num) % $den) / $den + 1 AS high_at,
        CAST(((m - 1) * $high_num) % $den AS DOUBLE) / $den AS high_frac
    FROM cmp_sorted
),
cmp_quantiles AS (
    SELECT run, baseline, metric,
        CAST(MAX(m) AS BIGINT) AS resampled,
        MAX(CASE WHEN rn = low_at THEN stat END) AS low_a,
        MAX(CASE WHEN rn = low_at + 1 THEN stat END) AS low_b,
        MAX(low_frac) AS low_frac,
        MAX(CASE WHEN rn = high_at THEN stat END) AS high_a,
        MAX(CASE WHEN rn = high_at + 1 THEN stat END) AS high_b,
        MAX(high_frac) AS high_frac
    FROM cmp_positions
    GROUP BY run, baseline, metric
),
cmp_interval AS (
    SELECT run, baseline, metric, resampled,
        low_a + low_frac * (COALESCE(low_b, low_a) - low_a) AS ci_low,
        high_a + high_frac * (COALESCE(high_b, high_a) - high_a) AS ci_high
    FROM cmp_quantiles
)
SELECT * FROM cmp_interval
