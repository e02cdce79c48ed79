-- name: hit_rate
-- aliases: hr, success
-- k: required
-- formula: 1 if hits@k >= 1 else 0
-- cite: Deshpande & Karypis, TOIS 2004 (hit-rate); trec_eval success@k
SELECT
    user_id,
    CAST(MAX(CASE WHEN src = 1 AND rank <= $k THEN hit ELSE 0 END) AS DOUBLE) AS hit_rate
FROM ranked
GROUP BY user_id
