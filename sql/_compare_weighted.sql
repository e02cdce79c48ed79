-- The weighted lists through which recsql.compare recomputes a global metric by its own template (README, "Comparing
-- runs"): exposure_disparity, exposure_gini, exposure_entropy, lt_coverage, pop_rsp, pop_reo, any global metric whose
-- stage rows count each list by its weight (sql/_ranked.sql's list_weight; recsql/comparison_weighted.py).
--
-- formula: each (run, baseline, segment, resample, side) is one more run of the evaluation, keyed by one integer,
--   cmp_key = (unit·($resamples + 1) + resample)·4 + side (unit: the (run, baseline, segment)'s number 1..U of
--   cmp_global_units, baseline 0 for a run's own lists; grouping on one integer is faster than on five), whose lists
--   are those of the segment's users only (compared within segments: its value is the metric over the segment's
--   users, as evaluate's within the segment; without segments every user is in the one segment 0):
--   side 3, baseline 0: the run's own lists, user u's weighing w_u, the Poisson(1) weight of resample b
--     (sql/_compare_draws.sql, shared by every run, so a pair's resample is paired); resample 0: every w_u = 1,
--     the observed value. A list of weight 0 is left out: its user is not in the resample;
--   sides 1 and 2 of a pair (run, baseline), resample b ≥ 1: side 1 holds the run's list of each user whose sign
--     s_u (stream 2) is +1 and the baseline's list of each user whose sign is −1, side 2 the others; every weight 1.
--   The metric's template is then evaluated over these lists (recsql/compose): per resample, everything derived
--   from the resampled users' lists and truth is recomputed (attention, merit, the users with a list and truth
--   and what they have not seen, relevant listings); the catalog-level inputs stay fixed (the catalog and its
--   size, the items' categories and group sizes, the items' popularity in interactions and so the short head).
--   The lists are the top max k of each user as evaluate ranked them (rank: their order, ties already broken).
--   A sampled run's lists keep their sample (cmp_sample; 0 when the runs are not sampled): each (key, sample) is
--   evaluated as a run, with every sample of a user weighed w_u and swapped by s_u (sample j of side 1: the run's
--   sample-j list where s_u = +1, the baseline's sample-j list where −1), and the value of a key is the mean over
--   its samples (recsql/comparison_samples.py), as evaluate's value of a sampled run.
--   n: a run's users with a list (in the segment; in any sample); a pair's users with a list in either run.
--   The metric id is segment·$n_metrics + metric (the metric's position), as the other metrics' within segments.
-- cite: Poisson bootstrap: Hanley & MacGibbon 2006; randomization by swapping a unit's treatments: Fisher 1935, §21.
--
-- Inputs: cmp_wlists(run, segment, user_idx, user_id, item_id, rank, sample) (each user's top max k in each run and
-- sample, with the user's segment), cmp_draws, cmp_users, cmp_runs, cmp_global_pairs, cmp_global_owners, cmp_global_units,
-- cmp_weighted_metrics(metric).
-- Output: cmp_wrecs(cmp_key, cmp_sample, user_id, item_id, cmp_rank, cmp_weight), cmp_weighted_run_users(run, segment, w1),
-- cmp_global_weighted_users(run, baseline, metric, n).
WITH
cmp_weighted_draws AS (
    SELECT resample, user_idx, w FROM cmp_draws
    UNION ALL
    SELECT CAST(0 AS BIGINT) AS resample, user_idx, CAST(1 AS BIGINT) AS w FROM cmp_users
),
cmp_wrecs AS (
    SELECT CAST((u.unit * ($resamples + 1) + d.resample) * 4 + 3 AS BIGINT) AS cmp_key,
        l.sample AS cmp_sample, l.user_id AS user_id, l.item_id AS item_id, l.rank AS cmp_rank, d.w AS cmp_weight
    FROM cmp_wlists AS l
    JOIN cmp_global_units AS u ON l.run = u.run AND u.baseline = 0 AND l.segment = u.segment
    JOIN cmp_weighted_draws AS d ON l.user_idx = d.user_idx
    WHERE d.w > 0
    UNION ALL
    SELECT CAST((u.unit * ($resamples + 1) + d.resample) * 4
                + CASE WHEN (o.role = 1 AND d.s = 1) OR (o.role = 2 AND d.s = -1) THEN 1 ELSE 2 END AS BIGINT) AS cmp_key,
        l.sample AS cmp_sample, l.user_id AS user_id, l.item_id AS item_id, l.rank AS cmp_rank,
        CAST(1 AS BIGINT) AS cmp_weight
    FROM cmp_global_owners AS o
    JOIN cmp_global_units AS u ON o.run = u.run AND o.baseline = u.baseline
    JOIN cmp_wlists AS l ON l.run = o.owner AND l.segment = u.segment
    JOIN cmp_draws AS d ON l.user_idx = d.user_idx
),
cmp_weighted_run_users AS (
    SELECT run, segment, CAST(COUNT(DISTINCT user_idx) AS BIGINT) AS w1 FROM cmp_wlists GROUP BY run, segment
),
cmp_global_weighted_users AS (
    SELECT p.run AS run, p.baseline AS baseline, CAST(u.segment * $n_metrics + m.metric AS BIGINT) AS metric,
        CAST(COUNT(DISTINCT u.user_idx) AS BIGINT) AS n
    FROM cmp_global_pairs AS p
    CROSS JOIN cmp_weighted_metrics AS m
    JOIN cmp_wlists AS u ON u.run = p.run OR u.run = p.baseline
    GROUP BY p.run, p.baseline, u.segment, m.metric
)
SELECT * FROM cmp_wrecs
