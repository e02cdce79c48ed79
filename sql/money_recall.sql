-- name: money_recall
-- family: revenue
-- k: required
-- needs: price
-- stage: truth_rows
-- range: [0, 1]
-- formula: Σ_{i≤k} hit_i · price_i / Σ_{relevant truth items} price; 0 when the denominator is 0
-- cite: no canonical paper: generalised recall (Kekäläinen & Järvelin, JASIST 2002) with the item's price as its weight; on price- and profit-aware evaluation: Jannach & Adomavicius, VAMS workshop at RecSys 2017; De Biasio, Navarin & Jannach, Electronic Commerce Research and Applications 2024
SELECT
    user_id,
    COALESCE(
        SUM(CASE WHEN src = 1 AND rank <= $k THEN hit * COALESCE(price, 0) END)
        / NULLIF(SUM(CASE WHEN src = 2 AND hit = 1 THEN COALESCE(price, 0) END), 0),
        0) AS money_recall
FROM ranked
GROUP BY user_id
