-- name: money_precision
-- k: required
-- needs: price
-- formula: Σ_{i≤k} hit_i · price_i / Σ_{i≤k} price_i; 0 when the denominator is 0
-- cite: revenue-weighted precision (SPEC seed 001)
SELECT
    user_id,
    COALESCE(
        SUM(CASE WHEN src = 1 AND rank <= $k THEN hit * COALESCE(price, 0) END)
        / NULLIF(SUM(CASE WHEN src = 1 AND rank <= $k THEN COALESCE(price, 0) END), 0),
        0) AS money_precision
FROM ranked
GROUP BY user_id
