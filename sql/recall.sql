-- name: recall
-- family: accuracy
-- aliases: r
-- k: required
-- ties: average
-- range: [0, 1]
-- formula: hits@k / R, R = the user's relevant truth items
-- cite: Manning, Raghavan & Schütze, Introduction to Information Retrieval, Cambridge UP 2008, §8.3–8.4; trec_eval recall_k
SELECT
    user_id,
    COALESCE(
        CAST(SUM(CASE WHEN src = 1 AND rank <= $k THEN hit ELSE 0 END) AS DOUBLE)
        / NULLIF(MAX(n_rel), 0),
        0) AS recall
FROM ranked
GROUP BY user_id
