-- name: surprisal
-- family: novelty
-- k: required
-- population: lists
-- needs: interactions
-- stage: popularity; interaction_users
-- range: [0, 1]
-- formula: surprisal@k = Σ_{i∈L} w_i / k, w_i = log2(U_I / n_i) / log2(U_I); an item never seen in interactions weighs 1; with U_I = 1 a seen item weighs 0
-- cite: RePlay's Surprisal as its documentation defines it (replay.metrics.Surprisal: self-information −log2(u_j / N) ÷ log2 N, averaged over k); self-information as in Zhou et al., PNAS 2010; surprise in Kaminskas & Bridge, ACM TiiS 2016
SELECT
    user_id,
    CAST(COALESCE(SUM(CASE WHEN src = 1 AND rank <= $k THEN
            CASE WHEN n_seen IS NULL OR n_seen = 0 THEN 1
                 WHEN u_seen <= 1 THEN 0
                 ELSE LN(CAST(u_seen AS DOUBLE) / n_seen) / LN(u_seen) END
        END), 0) AS DOUBLE) / $k AS surprisal
FROM ranked
GROUP BY user_id
