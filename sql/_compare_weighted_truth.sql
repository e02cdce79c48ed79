-- The truth of the weighted lists through which recsql.compare recomputes a global metric by its own template, when
-- truth is given per run (README, "Comparing runs"; recsql/comparison_weighted.py): each list of
-- sql/_compare_weighted.sql's cmp_wrecs is judged by the truth of the run it came from.
--
-- formula: for each key of cmp_wrecs, cmp_key = (unit·($resamples + 1) + resample)·4 + side (written as there), and
--   each user of the unit's segment, the truth rows T_r(u) of the run r whose list the user's list there is:
--   side 3, baseline 0: the run's own truth, for a user of weight w_u > 0 in resample b (every user in resample 0);
--   sides 1 and 2 of a pair (run, baseline), resample b ≥ 1: side 1 the run's truth of each user whose sign s_u is
--     +1 and the baseline's of each user whose sign is −1, side 2 the others; so a user's list and truth are swapped
--     together, as the randomization of a per-user metric swaps the user's values (each computed from the run's list
--     and the run's truth). Truth is not weighted: the weighted evaluation counts a user's truth through the weight
--     of its list (list_weight), and reads truth only for a user with a list under the key.
-- cite: randomization by swapping a unit's treatments: Fisher 1935, §21; Poisson bootstrap: Hanley & MacGibbon 2006.
--
-- Inputs: cmp_wtruth_rows(run, segment, user_idx, user_id, item_id, relevance) (each run's truth rows of the users
-- compared, with the user's segment), cmp_weighted_draws(resample, user_idx, w) and cmp_draws (sql/_compare_weighted.sql,
-- sql/_compare_draws.sql), cmp_global_owners, cmp_global_units.
-- Output: cmp_wtruth(cmp_key, user_id, item_id, relevance).
WITH
cmp_wtruth AS (
    SELECT CAST((u.unit * ($resamples + 1) + d.resample) * 4 + 3 AS BIGINT) AS cmp_key,
        t.user_id AS user_id, t.item_id AS item_id, t.relevance AS relevance
    FROM cmp_wtruth_rows AS t
    JOIN cmp_global_units AS u ON t.run = u.run AND u.baseline = 0 AND t.segment = u.segment
    JOIN cmp_weighted_draws AS d ON t.user_idx = d.user_idx
    WHERE d.w > 0
    UNION ALL
    SELECT CAST((u.unit * ($resamples + 1) + d.resample) * 4
                + CASE WHEN (o.role = 1 AND d.s = 1) OR (o.role = 2 AND d.s = -1) THEN 1 ELSE 2 END AS BIGINT) AS cmp_key,
        t.user_id AS user_id, t.item_id AS item_id, t.relevance AS relevance
    FROM cmp_global_owners AS o
    JOIN cmp_global_units AS u ON o.run = u.run AND o.baseline = u.baseline
    JOIN cmp_wtruth_rows AS t ON t.run = o.owner AND t.segment = u.segment
    JOIN cmp_draws AS d ON t.user_idx = d.user_idx
)
SELECT * FROM cmp_wtruth
