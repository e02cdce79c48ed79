-- name: num_ret
-- family: accuracy
-- k: optional
-- summary: sum
-- range: [0, inf)
-- formula: the number of recommended items (in the top k); the summary is the sum over users
-- cite: trec_eval num_ret (NIST)
SELECT
    user_id,
    CAST(SUM(CASE WHEN src = 1 AND rank <= $k THEN 1 ELSE 0 END) AS DOUBLE) AS num_ret
FROM ranked
GROUP BY user_id
