-- name: cg
-- family: accuracy
-- k: optional
-- params: gain enum(linear, exponential, binary) = linear
-- ties: average
-- range: [0, inf)
-- formula: CG@k = Σ_{i≤k} g_i
-- cite: Järvelin & Kekäläinen, ACM TOIS 2002
SELECT
    user_id,
    COALESCE(SUM(CASE WHEN src = 1 AND rank <= $k THEN GAIN() END), 0) AS cg
FROM ranked
GROUP BY user_id
