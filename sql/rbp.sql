-- name: rbp
-- family: user_models
-- k: optional
-- params: p number in (0, 1) = 0.8
-- ties: average
-- range: [0, 1]
-- formula: RBP = (1 − p)·Σ_{i≤k} hit_i · p^(i−1), persistence p (0 < p < 1)
-- cite: Moffat & Zobel, ACM TOIS 2008; trec_eval rbp (p = 0.9 there)
SELECT
    user_id,
    (1 - $p) * COALESCE(SUM(CASE WHEN src = 1 AND rank <= $k THEN hit * POWER($p, rank - 1) END), 0) AS rbp
FROM ranked
GROUP BY user_id
