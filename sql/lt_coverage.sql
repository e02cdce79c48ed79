-- name: lt_coverage
-- family: long_tail
-- k: required
-- population: global
-- params: head number in (0, 1] = 0.8; split enum(interactions, items) = interactions
-- needs: interactions if split = interactions; head if split = items
-- stage: attention; popularity; tail_items if split = items
-- let: tail_row = src = 14 AND cut = $k AND weight_kind = 'log' AND (($split = 'items' AND in_head = 0) OR ($split = 'interactions' AND n_seen > 0 AND seen_before >= $head * seen_total)); tail_size = CASE WHEN $split = 'items' THEN MAX(CASE WHEN src = 14 AND cut = $k AND weight_kind = 'log' THEN n_tail END) ELSE SUM(CASE WHEN tail_row() THEN 1 ELSE 0 END) END
-- range: [0, 1]
-- formula: LTC@k = #(T ∩ ∪_u L_u) / #T, the share of the long tail shown in some user's top k; T = the items seen in interactions outside the short head, the head as aplt's (the most seen items, ties by item id, taken until they hold a share `head` of all interactions, the item that reaches the share included); with split = items (the default when head_col is given) T = the items of items whose head_col is false (0), listed or not, seen in interactions or not; NULL when the tail is empty or the run has no recommendations
-- cite: Abdollahpouri, Burke & Mobasher, RecSys 2017 (long-tail coverage); the head as Elliot's short head (pop_ratio 0.8)
SELECT
    user_id,
    CAST(SUM(CASE WHEN tail_row() AND attention > 0 THEN 1 ELSE 0 END) AS DOUBLE)
        / NULLIF(tail_size(), 0) AS lt_coverage
FROM ranked
GROUP BY user_id
