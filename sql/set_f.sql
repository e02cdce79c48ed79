-- name: set_f
-- family: accuracy
-- k: none
-- params: beta number in (0, inf) = 1
-- range: [0, 1]
-- formula: (1 + beta^2)·P·R / (beta^2·P + R) with P = set_p, R = set_recall; 0 when the denominator is 0
-- cite: van Rijsbergen, Information Retrieval (2nd ed.), Butterworths 1979, ch. 7; trec_eval set_F
SELECT
    user_id,
    COALESCE((1 + $beta * $beta) * set_p() * set_recall() / NULLIF($beta * $beta * set_p() + set_recall(), 0), 0) AS set_f
FROM ranked
GROUP BY user_id
