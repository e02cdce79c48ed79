-- name: idcg
-- family: accuracy
-- k: optional
-- params: gain enum(linear, exponential, binary) = linear; discount discount = log2; ideal enum(truth, list, binary, k_slots) = truth
-- stage: list_ideal if ideal = list; slots if ideal = k_slots
-- ties: average unless ideal = list
-- range: [0, inf) if discount = log2; [0, inf) if discount = jarvelin; (-inf, inf)
-- formula: DCG@k of the ideal order: truth = every truth item's gain sorted, top k; list = the user's own top-k gains re-sorted; binary = min(k, R) slots of gain 1; k_slots = k slots of gain 1
-- cite: Järvelin & Kekäläinen, ACM TOIS 2002
SELECT
    user_id,
    COALESCE(SUM(CASE
        WHEN $ideal = 'truth' AND src = 2 AND ideal_rank <= $k THEN GAIN() * DISCOUNT(ideal_rank)
        WHEN $ideal = 'list' AND src = 3 AND cut = $k THEN GAIN() * DISCOUNT(ideal_rank)
        WHEN $ideal = 'binary' AND src = 2 AND hit = 1 AND ideal_rank <= $k THEN DISCOUNT(ideal_rank)
        WHEN $ideal = 'k_slots' AND src = 4 AND ideal_rank <= $k THEN DISCOUNT(ideal_rank)
    END), 0) AS idcg
FROM ranked
GROUP BY user_id
