-- name: diversity
-- family: diversity
-- k: required
-- population: lists
-- params: by enum(category, features) = category
-- needs: category if by = category; features if by = features
-- stage: category_spread if by = category; feature_spread if by = features
-- range: [0, 1] if by = category; [0, 2]
-- formula: intra-list diversity@k = mean over pairs i < j of L of the dissimilarity: 1 if the categories differ, else 0 (by = category); 1 − cosine of the feature vectors (by = features); pairs with a missing category or vector (or a zero vector) are skipped; NULL when no pair is left (#L < 2). Computed from per-list sums, without the pairs: over the m items with a category, 1 − Σ_c n_c(n_c − 1) / (m(m − 1)); over the m with a non-zero vector, 1 − (‖Σ_i u_i‖² − Σ_i ‖u_i‖²) / (m(m − 1)), u_i = x_i/‖x_i‖
-- cite: Ziegler, McNee, Konstan & Lausen, WWW 2005 (intra-list similarity); Smyth & McClave, ICCBR 2001
SELECT
    user_id,
    CASE WHEN $by = 'features'
         THEN 1 - MAX(CASE WHEN src = 21 AND cut = $k THEN
                  (spread_square - spread_self) / NULLIF(CAST(spread_items * (spread_items - 1) AS DOUBLE), 0) END)
         ELSE MAX(CASE WHEN src = 20 AND cut = $k THEN
                  CAST(spread_pairs - spread_same AS DOUBLE) / NULLIF(CAST(spread_pairs AS DOUBLE), 0) END)
    END AS diversity
FROM ranked
GROUP BY user_id
