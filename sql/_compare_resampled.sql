-- The resampled statistics of recsql.compare (README, "Comparing runs"), per unit (a run's values, or a pair's
-- differences, of one metric): the bootstrap statistics (their interval: sql/_compare_interval.sql) and Fisher's
-- randomization test.
--
-- formula: per resample b, with the users' Poisson(1) weights w and signs s (sql/_compare_draws.sql; one weight
--   per user, shared by every run, so a pair's resample is paired): stat_b = Σ w·v / Σ w (none when Σ w = 0),
--   flipped_b = Σ s·v.
--   Randomization: extreme = #{b : |flipped_b| ≥ |Σ v| − $tolerance·Σ|v|} (the tolerance absorbs the rounding of
--   sums whose exact values are equal); p = (1 + extreme) / ($resamples + 1), finished in Python.
--   The sums are taken with the units of one run (or pair) and one segment side by side, one column per metric
--   (slot), so each user's row meets each resample once whatever the number of metrics: the (user × resample)
--   rows are M times fewer than one per metric. A user without a value for a slot adds nothing to its sums.
-- cite: Efron & Tibshirani, An Introduction to the Bootstrap, 1993, ch. 6 (the bootstrap); Fisher, The Design
--   of Experiments, 1935, §21 (randomization by sign flips); p with the observed arrangement counted: Phipson & Smyth,
--   Statistical Applications in Genetics and Molecular Biology 9(1), 2010.
--
-- Inputs: cmp_units(run, baseline, metric, user_idx, v), cmp_slots(metric, grp, slot) (each metric of a unit: its
-- segment grp and its metric's position slot among the per-user metrics), cmp_draws(resample, user_idx, w, s),
-- cmp_observed.
-- Output: cmp_resampled(run, baseline, metric, resample, stat, flipped), cmp_randomization(run, baseline, metric, extreme).
-- Each expression named ..._slot, and each CASE branch WHEN $slot, stands for one per slot (recsql writes them:
-- v_0, v_1, ...).
WITH
cmp_units_wide AS (
    SELECT u.run AS run, u.baseline AS baseline, s.grp AS grp, u.user_idx AS user_idx,
        MAX(CASE WHEN s.slot = $slot THEN u.v END) AS v_slot
    FROM cmp_units AS u
    JOIN cmp_slots AS s ON u.metric = s.metric
    GROUP BY u.run, u.baseline, s.grp, u.user_idx
),
cmp_resampled_wide AS (
    SELECT u.run AS run, u.baseline AS baseline, u.grp AS grp, d.resample AS resample,
        SUM(d.w * u.v_slot) AS sum_wv_slot,
        CAST(SUM(CASE WHEN u.v_slot IS NOT NULL THEN d.w END) AS BIGINT) AS sum_w_slot,
        SUM(d.s * u.v_slot) AS flipped_slot
    FROM cmp_units_wide AS u
    JOIN cmp_draws AS d ON u.user_idx = d.user_idx
    GROUP BY u.run, u.baseline, u.grp, d.resample
),
cmp_resampled AS (
    SELECT o.run AS run, o.baseline AS baseline, o.metric AS metric, r.resample AS resample,
        CASE s.slot WHEN $slot THEN CAST(r.sum_wv_slot AS DOUBLE) / NULLIF(CAST(r.sum_w_slot AS DOUBLE), 0) END AS stat,
        CASE s.slot WHEN $slot THEN CAST(r.flipped_slot AS DOUBLE) END AS flipped
    FROM cmp_observed AS o
    JOIN cmp_slots AS s ON o.metric = s.metric
    JOIN cmp_resampled_wide AS r ON o.run = r.run AND o.baseline = r.baseline AND s.grp = r.grp
),
cmp_randomization AS (
    SELECT r.run AS run, r.baseline AS baseline, r.metric AS metric,
        CAST(SUM(CASE WHEN ABS(r.flipped) >= ABS(o.sum_v) - $tolerance * o.sum_abs THEN 1 ELSE 0 END) AS BIGINT) AS extreme
    FROM cmp_resampled AS r
    JOIN cmp_observed AS o ON r.run = o.run AND r.baseline = o.baseline AND r.metric = o.metric
    GROUP BY r.run, r.baseline, r.metric
)
SELECT * FROM cmp_randomization
