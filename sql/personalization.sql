-- name: personalization
-- family: diversity
-- k: required
-- population: global
-- stage: exposure
-- range: [0, 1]
-- formula: personalization@k = 1 − Σ_i c_i(c_i − 1) / (U(U − 1)·k), c_i = users whose top k holds item i, U = users with recommendations; equals 1 − the mean overlap #(L_u ∩ L_v)/k over user pairs, computed from item counts (never user pairs); NULL when U < 2
-- cite: Zhou, Kuscsik, Liu, Medo, Wakeling & Zhang, PNAS 2010 (personalization: the mean Hamming distance 1 − q_uv/k between users' lists), as the recmetrics package's personalization computes it for lists of k items
SELECT
    user_id,
    1 - CAST(shared_pairs() AS DOUBLE) / NULLIF(CAST(user_pairs() AS DOUBLE) * $k, 0) AS personalization
FROM ranked
GROUP BY user_id
