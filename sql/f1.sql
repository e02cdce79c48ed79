-- name: f1
-- family: accuracy
-- k: required
-- ties: average
-- range: [0, 1]
-- formula: 2·P·R / (P + R) with P = precision@k, R = recall@k; 0 when P + R = 0
-- cite: van Rijsbergen, Information Retrieval (2nd ed.), Butterworths 1979, ch. 7 (F measure, beta = 1)
SELECT
    user_id,
    COALESCE(2 * precision() * recall() / NULLIF(precision() + recall(), 0), 0) AS f1
FROM ranked
GROUP BY user_id
