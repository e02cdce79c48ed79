-- name: aclt
-- family: long_tail
-- k: optional
-- population: lists
-- params: head number in (0, 1] = 0.8; split enum(interactions, items) = interactions
-- needs: interactions if split = interactions; head if split = items
-- stage: popularity if split = interactions
-- range: [0, inf)
-- formula: ACLT@k = #(L ∩ T), the number of long-tail items in the list; T as in APLT: the items seen in interactions outside the short head, the most seen items (ties by item id) that hold a share `head` of all interactions, the item that reaches the share included; with split = items (the default when head_col is given) T = the items whose head_col is false (0), an item missing from items in neither; 0 for an empty list
-- cite: Abdollahpouri, Burke & Mobasher, FLAIRS 2019 (average coverage of long-tail items); the head as Elliot's short head (pop_ratio 0.8)
SELECT
    user_id,
    COALESCE(SUM(CASE WHEN src = 1 AND rank <= $k THEN
                      CASE WHEN $split = 'items' THEN CASE WHEN in_head = 0 THEN 1 ELSE 0 END
                           WHEN n_seen > 0 AND seen_before >= $head * seen_total THEN 1 ELSE 0 END
                 END), 0) AS aclt
FROM ranked
GROUP BY user_id
