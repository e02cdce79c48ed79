-- name: num_rel
-- family: accuracy
-- k: none
-- summary: sum
-- range: [0, inf)
-- formula: R, the number of relevant truth items (relevance ≥ threshold); the summary is the sum over users
-- cite: trec_eval num_rel (NIST)
SELECT
    user_id,
    CAST(MAX(n_rel) AS DOUBLE) AS num_rel
FROM ranked
GROUP BY user_id
