-- The percentile bootstrap interval of recsql.compare (README, "Comparing runs"), per unit (a run, or a pair of
-- runs, of one metric), from its resampled statistics stat_b (sql/_compare_resampled.sql: per-user metrics;
-- sql/_compare_global.sql: global metrics).
--
-- formula: the $low and $high quantiles of the stat_b, linearly interpolated between order statistics
--   (numpy.quantile's default): h = (m − 1)·q over the m resamples with a statistic,
--   value = s_(⌊h⌋+1) + (h − ⌊h⌋)·(s_(⌊h⌋+2) − s_(⌊h⌋+1)); q = $low_num / $den and $high_num / $den exactly.
-- cite: Efron & Tibshirani, An Introduction to the Bootstrap, 1993, ch. 13 (percentile interval); Hyndman & Fan,
--   "Sample quantiles in statistical packages", The American Statistician 50(4), 1996 (definition 7).
--
-- Input: cmp_bootstrap(run, baseline, metric, resample, stat). Output: cmp_interval(run, baseline, metric, resampled,
-- ci_low, ci_high).
WITH
cmp_sorted AS (
    SELECT run, baseline, metric, stat,
        CAST(ROW_NUMBER() OVER (PARTITION BY run, baseline, metric ORDER BY stat) AS BIGINT) AS rn,
        CAST(COUNT(*) OVER (PARTITION BY run, baseline, metric) AS BIGINT) AS m
    FROM cmp_bootstrap
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
