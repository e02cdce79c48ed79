-- name: dcg
-- family: accuracy
-- k: optional
-- params: gain enum(linear, exponential, binary) = linear; discount discount = log2
-- ties: average
-- range: [0, inf) if discount = log2; [0, inf) if discount = jarvelin; (-inf, inf)
-- formula: DCG@k = Σ_{i≤k} g_i · disc(i); disc(i) = 1/log2(i+1) (log2), 1/max(1, log2 i) (jarvelin) or a SQL expression in rank
-- cite: Järvelin & Kekäläinen, ACM TOIS 2002; Burges et al., ICML 2005 (1/log2(i+1), exponential gain)
SELECT
    user_id,
    COALESCE(SUM(CASE WHEN src = 1 AND rank <= $k THEN GAIN() * DISCOUNT(rank) END), 0) AS dcg
FROM ranked
GROUP BY user_id
