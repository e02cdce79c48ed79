-- name: hit_rate
-- family: accuracy
-- aliases: hr, success
-- k: required
-- ties: average
-- range: [0, 1]
-- formula: 1 if hits@k >= 1 else 0; with ties = average, 1 − P(no hit in the top k) = 1 − Π tie_miss
-- cite: Deshpande & Karypis, ACM TOIS 2004 (hit rate); trec_eval success@k
SELECT
    user_id,
    CASE WHEN $ties = 'average' THEN
        1 - CASE WHEN MIN(CASE WHEN src = 1 AND rank <= $k THEN tie_miss END) <= 0 THEN 0
                 ELSE COALESCE(EXP(SUM(CASE WHEN src = 1 AND rank <= $k AND tie_miss > 0 THEN LN(tie_miss) END)), 1) END
    ELSE CAST(MAX(CASE WHEN src = 1 AND rank <= $k THEN hit ELSE 0 END) AS DOUBLE) END AS hit_rate
FROM ranked
GROUP BY user_id
