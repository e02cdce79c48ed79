-- name: ndcg
-- family: accuracy
-- k: optional
-- params: gain enum(linear, exponential, binary) = linear; discount discount = log2; ideal enum(truth, list, binary, k_slots) = truth
-- stage: list_ideal if ideal = list; slots if ideal = k_slots
-- ties: average unless ideal = list
-- range: [0, 1] if discount = log2; [0, 1] if discount = jarvelin; (-inf, inf)
-- formula: nDCG@k = DCG@k / IDCG@k, 0 when IDCG@k = 0; IDCG@k from ideal = truth (every truth item's gain, sorted, top k) or list (the user's own top-k gains re-sorted); with ideal = binary or k_slots (slots of gain 1) the list's gains are binary too, hit_i (RePlay, Spark), so nDCG ≤ 1
-- cite: Järvelin & Kekäläinen, ACM TOIS 2002; Burges et al., ICML 2005 (exponential gain)
SELECT
    user_id,
    COALESCE(
        SUM(CASE WHEN src = 1 AND rank <= $k THEN
                CASE WHEN $ideal = 'binary' OR $ideal = 'k_slots' THEN CAST(hit AS DOUBLE) ELSE GAIN() END * DISCOUNT(rank)
            END)
        / NULLIF(idcg(), 0),
        0) AS ndcg
FROM ranked
GROUP BY user_id
