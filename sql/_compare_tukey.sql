-- The randomized Tukey HSD test of recsql.compare (README, "Comparing runs"), per metric: every pair of runs
-- against the largest difference of run means when each user's values are shuffled among the runs.
--
-- formula: over the users with a value in every run (a complete block), per resample b each user's R values are
--   permuted among the runs: run r's value goes to label rank(r), r's rank when the user's runs are ordered by
--   u = MIX((MIX((key_b + key_i) mod P) + r·$run_step) mod P) (stream 3 of sql/_compare_draws.sql; ties by run).
--   range_b = max − min over runs of the permuted means. A pair's observed difference is |mean_a − mean_b| over
--   the same users; extreme_tukey = #{b : range_b ≥ |mean_a − mean_b| − $tolerance·(|mean_a| + |mean_b|)};
--   p = (1 + extreme_tukey) / ($resamples + 1), finished in Python. It controls the family-wise error over every
--   pair of runs of a metric, so it is not corrected further.
-- cite: Carterette, "Multiple testing in statistical analysis of systems-based information retrieval experiments",
--   ACM TOIS 30(1), 2012 (randomized Tukey HSD, permuting run labels within each topic); Tukey 1949.
--
-- Inputs: cmp_values, cmp_runs, cmp_resample_keys, cmp_user_keys, cmp_observed. Output: cmp_tukey(run, baseline,
-- metric, extreme_tukey).
WITH
cmp_run_count AS (
    SELECT CAST(COUNT(*) AS BIGINT) AS runs FROM cmp_runs
),
cmp_blocks AS (
    SELECT v.metric AS metric, v.user_idx AS user_idx
    FROM cmp_values AS v CROSS JOIN cmp_run_count AS c
    GROUP BY v.metric, v.user_idx
    HAVING COUNT(*) = MAX(c.runs)
),
cmp_block_values AS (
    SELECT v.run AS run, v.user_idx AS user_idx, v.metric AS metric, v.x AS x
    FROM cmp_values AS v
    JOIN cmp_blocks AS k ON v.metric = k.metric AND v.user_idx = k.user_idx
),
cmp_shuffle_in AS (
    SELECT r.resample AS resample, u.user_idx AS user_idx, (r.k3 + u.k) % $P AS y
    FROM cmp_resample_keys AS r CROSS JOIN cmp_user_keys AS u
),
cmp_shuffle_mixed AS (
    SELECT resample, user_idx, MIX(y) AS z FROM cmp_shuffle_in
),
cmp_shuffle_run_in AS (
    SELECT s.resample AS resample, s.user_idx AS user_idx, g.run AS run, (s.z + g.run * $run_step) % $P AS y
    FROM cmp_shuffle_mixed AS s CROSS JOIN cmp_runs AS g
),
cmp_shuffle_keys AS (
    SELECT resample, user_idx, run, MIX(y) AS u FROM cmp_shuffle_run_in
),
cmp_shuffles AS (
    SELECT resample, user_idx, run,
        CAST(ROW_NUMBER() OVER (PARTITION BY resample, user_idx ORDER BY u, run) AS BIGINT) AS label
    FROM cmp_shuffle_keys
),
cmp_shuffled_means AS (
    SELECT s.resample AS resample, v.metric AS metric, s.label AS label, AVG(v.x) AS mean
    FROM cmp_block_values AS v
    JOIN cmp_shuffles AS s ON v.user_idx = s.user_idx AND v.run = s.run
    GROUP BY s.resample, v.metric, s.label
),
cmp_ranges AS (
    SELECT resample, metric, MAX(mean) - MIN(mean) AS spread FROM cmp_shuffled_means GROUP BY resample, metric
),
cmp_block_means AS (
    SELECT run, metric, AVG(x) AS mean FROM cmp_block_values GROUP BY run, metric
),
cmp_tukey AS (
    SELECT o.run AS run, o.baseline AS baseline, o.metric AS metric,
        CAST(SUM(CASE WHEN g.spread >= ABS(a.mean - b.mean) - $tolerance * (ABS(a.mean) + ABS(b.mean))
                      THEN 1 ELSE 0 END) AS BIGINT) AS extreme_tukey
    FROM cmp_observed AS o
    JOIN cmp_block_means AS a ON o.run = a.run AND o.metric = a.metric
    JOIN cmp_block_means AS b ON o.baseline = b.run AND o.metric = b.metric
    JOIN cmp_ranges AS g ON o.metric = g.metric
    GROUP BY o.run, o.baseline, o.metric
)
SELECT * FROM cmp_tukey
