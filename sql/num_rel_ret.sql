-- name: num_rel_ret
-- family: accuracy
-- k: optional
-- summary: sum
-- ties: average
-- range: [0, inf)
-- formula: hits@k, the number of relevant recommended items (in the top k); the summary is the sum over users
-- cite: trec_eval num_rel_ret (NIST)
SELECT
    user_id,
    CAST(COALESCE(SUM(CASE WHEN src = 1 AND rank <= $k THEN hit END), 0) AS DOUBLE) AS num_rel_ret
FROM ranked
GROUP BY user_id
