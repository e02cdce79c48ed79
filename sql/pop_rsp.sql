-- name: pop_rsp
-- family: long_tail
-- k: required
-- population: global
-- params: head number in (0, 1] = 0.8; split enum(interactions, items) = interactions
-- needs: interactions; truth; head if split = items
-- stage: popularity_bias; popularity
-- let: head_row = src = 16 AND cut = $k AND (($split = 'items' AND in_head = 1) OR ($split = 'interactions' AND seen_before < $head * seen_total)); tail_row = src = 16 AND cut = $k AND (($split = 'items' AND in_head = 0) OR ($split = 'interactions' AND seen_before >= $head * seen_total)); p_head = CAST(SUM(CASE WHEN head_row() THEN bias_listed END) AS DOUBLE) / NULLIF(SUM(CASE WHEN head_row() THEN bias_unseen END), 0); p_tail = CAST(SUM(CASE WHEN tail_row() THEN bias_listed END) AS DOUBLE) / NULLIF(SUM(CASE WHEN tail_row() THEN bias_unseen END), 0)
-- range: [0, 1]
-- formula: PopRSP@k = std(P_H, P_T) / mean(P_H, P_T) = |P_H − P_T| / (P_H + P_T) (the population standard deviation of the two), P_g = Σ_u #(L_u ∩ g) / Σ_u #(g \ I_u) over the users u with a list and truth, I_u = the items u interacted with, g = the short head H or the long tail T of aplt (the most seen items of interactions, ties by item id, taken until they hold a share `head` of all interactions, the item that reaches the share included; items never seen are in neither; with split = items, the default when head_col is given, H and T = the items of items whose head_col is true (1) and false (0), seen in interactions or not, an item missing from items in neither); 0 = each group recommended in proportion to what the users have not seen of it; NULL when a group's denominator or both numerators are 0
-- cite: Zhu, Wang & Caverlee, SIGIR 2021 (popularity-opportunity bias: ranking-based statistical parity), as Elliot's PopRSP computes it (sums over users before dividing)
SELECT
    user_id,
    ABS(p_head() - p_tail()) / NULLIF(p_head() + p_tail(), 0) AS pop_rsp
FROM ranked
GROUP BY user_id
