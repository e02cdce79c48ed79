-- name: precision
-- family: accuracy
-- aliases: p
-- k: required
-- params: denominator enum(k, list) = k
-- ties: average
-- range: [0, 1]
-- formula: hits@k / k; denominator=list: hits@k / min(k, n) (0 for an empty list)
-- cite: Manning, Raghavan & Schütze, Introduction to Information Retrieval, Cambridge UP 2008, §8.3–8.4; trec_eval P_k
SELECT
    user_id,
    COALESCE(
        CAST(SUM(CASE WHEN src = 1 AND rank <= $k THEN hit ELSE 0 END) AS DOUBLE)
        / NULLIF(CASE WHEN $denominator = 'list'
                      THEN SUM(CASE WHEN src = 1 AND rank <= $k THEN 1 ELSE 0 END)
                      ELSE $k END, 0),
        0) AS precision
FROM ranked
GROUP BY user_id
