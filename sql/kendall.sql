-- name: kendall
-- family: accuracy
-- k: required
-- stage: pairs
-- range: [-1, 1]
-- formula: Kendall tau-b over the judged items of the top k (relevance 0 included) between list order and relevance: (n_c − n_d) / sqrt(n_0 · (n_0 − n_y)), n_0 = pairs, n_y = pairs of equal relevance; NULL below 2 items or for constant relevance
-- cite: Kendall, Biometrika 1945 (tau-b)
SELECT
    user_id,
    CAST(SUM(CASE WHEN src = 6 AND rank <= $k THEN pair_sign END) AS DOUBLE)
        / NULLIF(SQRT(CAST(SUM(CASE WHEN src = 6 AND rank <= $k AND pair_sign IS NOT NULL THEN 1 ELSE 0 END) AS DOUBLE)
                      * SUM(CASE WHEN src = 6 AND rank <= $k AND pair_sign <> 0 THEN 1 ELSE 0 END)), 0) AS kendall
FROM ranked
GROUP BY user_id
