-- name: nrbp
-- family: intent_aware
-- k: optional
-- population: intents
-- params: alpha number in [0, 1) = 0.5; beta number in (0, 1) = 0.5
-- needs: intents
-- stage: intents
-- range: [0, 1]
-- formula: (α = alpha, β = beta) novelty- and rank-biased precision, NRBP = (1 − (1 − α) β) / |S| · Σ_r β^(r−1) Σ_s J(r, s) (1 − α)^{c_s(r)} over the whole list (or its top k), J and c_s as in alpha_ndcg, β the user's patience; 0 when no intent has a relevant item; NULL for a user absent from intents
-- cite: Clarke, Kolla & Vechtomova, ICTIR 2009 (an effectiveness measure for ambiguous and underspecified queries); ndeval (TREC Web track) NRBP, ir_measures NRBP
SELECT
    user_id,
    CASE WHEN MAX(n_intents) IS NOT NULL THEN
        COALESCE((1 - (1 - $alpha) * $beta)
                 * SUM(CASE WHEN src = 12 AND rank <= $k THEN POWER($beta, rank - 1) * POWER(1 - $alpha, intent_prior) END)
                 / NULLIF(MAX(n_intents), 0), 0)
    END AS nrbp
FROM ranked
GROUP BY user_id
