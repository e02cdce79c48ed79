-- name: money_precision
-- family: revenue
-- k: required
-- needs: price
-- range: [0, 1]
-- formula: Σ_{i≤k} hit_i · price_i / Σ_{i≤k} price_i; 0 when the denominator is 0
-- cite: no canonical paper: precision@k with each recommended item weighted by its price; on price- and profit-aware evaluation: Jannach & Adomavicius, Price and Profit Awareness in Recommender Systems, VAMS workshop at RecSys 2017; De Biasio, Navarin & Jannach, Economic Recommender Systems – A Systematic Review, Electronic Commerce Research and Applications 2024
SELECT
    user_id,
    COALESCE(
        SUM(CASE WHEN src = 1 AND rank <= $k THEN hit * COALESCE(price, 0) END)
        / NULLIF(SUM(CASE WHEN src = 1 AND rank <= $k THEN COALESCE(price, 0) END), 0),
        0) AS money_precision
FROM ranked
GROUP BY user_id
