-- The values of recsql.compare's weighted global metrics per (run, baseline, segment, resample, side) (README,
-- "Comparing runs"): each metric's one number from its own template over the weighted lists of
-- sql/_compare_weighted.sql.
--
-- formula: stat = the metric's value on the run (run, baseline, segment, resample, side) of the weighted evaluation
--   (its global row); w1 = the run's users with a list in the segment (read for side 3, resample 0: a run's n);
--   metric = segment·$n_metrics + the metric's position (segment 0 without segments), as the counted metrics'. A run
--   of the weighted evaluation that has no list (every weight 0, or a side left empty) has no value: its statistic
--   is undefined.
-- cite: Efron & Tibshirani, An Introduction to the Bootstrap, 1993, ch. 6.
--
-- Inputs: cmp_weighted_values(cmp_key, x_slot) (the weighted evaluation's global rows, one column per metric; the
-- key as sql/_compare_weighted.sql writes it), cmp_global_units, cmp_weighted_metrics(metric),
-- cmp_weighted_run_users(run, segment, w1).
-- Output: cmp_global_weighted(run, baseline, metric, resample, side, stat, w1).
-- Each column x_slot, and each CASE branch WHEN $slot, stands for one per weighted metric (recsql writes them: x_0,
-- x_1, ...).
WITH
cmp_weighted_decoded AS (
    SELECT u.run AS run, u.baseline AS baseline, u.segment AS segment, x.resample AS resample, x.side AS side, x.x_slot
    FROM (
        SELECT cmp_key % 4 AS side, CAST((cmp_key - cmp_key % 4) / 4 AS BIGINT) % ($resamples + 1) AS resample,
            CAST((cmp_key - cmp_key % (4 * ($resamples + 1))) / (4 * ($resamples + 1)) AS BIGINT) AS unit, x_slot
        FROM cmp_weighted_values
    ) AS x
    JOIN cmp_global_units AS u ON x.unit = u.unit
),
cmp_global_weighted AS (
    SELECT v.run AS run, v.baseline AS baseline, CAST(v.segment * $n_metrics + m.metric AS BIGINT) AS metric,
        v.resample AS resample, v.side AS side,
        CAST(CASE m.metric WHEN $slot THEN v.x_slot END AS DOUBLE) AS stat, CAST(COALESCE(u.w1, 0) AS BIGINT) AS w1
    FROM cmp_weighted_decoded AS v
    CROSS JOIN cmp_weighted_metrics AS m
    LEFT JOIN cmp_weighted_run_users AS u ON v.run = u.run AND v.segment = u.segment AND v.baseline = 0
)
SELECT * FROM cmp_global_weighted
