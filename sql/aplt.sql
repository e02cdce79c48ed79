-- name: aplt
-- family: long_tail
-- k: optional
-- population: lists
-- params: head number in (0, 1] = 0.8; split enum(interactions, items) = interactions
-- needs: interactions if split = interactions; head if split = items
-- stage: popularity if split = interactions
-- range: [0, 1]
-- formula: APLT@k = #(L ∩ T) / #L, T = the long tail: the items seen in interactions outside the short head; the head = the most seen items (n_i users of interactions saw item i; ties by item id) taken in that order until they hold a share `head` of all interactions Σ n_i, the item that reaches the share included; an item never seen in interactions is in neither and counts in #L only; with split = items (the default when head_col is given) the items decide instead: T = the items whose head_col is false (0), the head those whose head_col is true (1), no interactions read, and an item missing from items is in neither and counts in #L only (head= is then refused: it sizes the interactions' head); 0 for an empty list
-- cite: Abdollahpouri, Burke & Mobasher, FLAIRS 2019 (managing popularity bias with personalized re-ranking: average percentage of long-tail items); the head as Elliot's short head (pop_ratio 0.8); with split = items, Elliot's per-user |set(L) ∩ T| / |L| (APLT's __user_aplt) over the T the items flag
SELECT
    user_id,
    COALESCE(
        CAST(SUM(CASE WHEN src = 1 AND rank <= $k THEN
                      CASE WHEN $split = 'items' THEN CASE WHEN in_head = 0 THEN 1 ELSE 0 END
                           WHEN n_seen > 0 AND seen_before >= $head * seen_total THEN 1 ELSE 0 END
                 END) AS DOUBLE)
        / NULLIF(SUM(CASE WHEN src = 1 AND rank <= $k THEN 1 ELSE 0 END), 0),
        0) AS aplt
FROM ranked
GROUP BY user_id
