-- name: money_recall
-- k: required
-- needs: price
-- formula: Σ_{i≤k} hit_i · price_i / Σ_{relevant truth items} price; 0 when the denominator is 0
-- cite: revenue-weighted recall (SPEC seed 001)
SELECT
    user_id,
    COALESCE(
        SUM(CASE WHEN src = 1 AND rank <= $k THEN hit * COALESCE(price, 0) END)
        / NULLIF(SUM(CASE WHEN src = 2 AND hit = 1 THEN COALESCE(price, 0) END), 0),
        0) AS money_recall
FROM ranked
GROUP BY user_id
