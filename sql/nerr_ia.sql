-- name: nerr_ia
-- family: intent_aware
-- k: required
-- population: intents
-- params: alpha number in (0, 1) = 0.5
-- needs: intents
-- stage: intents; intent_depths; intent_ideal
-- range: [0, inf)
-- formula: (α = alpha) nERR-IA@k = Σ_{r≤k} (1/r) Σ_s α J(r, s) (1 − α)^{c_s(r)} over the same sum for the greedy ideal list of alpha_ndcg (J, c_s as there); 0 when no intent has a relevant item; NULL for a user absent from intents
-- cite: Chapelle et al., Information Retrieval 14(6), 2011; ndeval (TREC Web track) nERR-IA, ir_measures nERR_IA
SELECT
    user_id,
    CASE WHEN MAX(n_intents) IS NOT NULL THEN
        COALESCE(SUM(CASE WHEN src = 12 AND rank <= $k THEN POWER(1 - $alpha, intent_prior) / rank END)
                 / NULLIF(SUM(CASE WHEN src = 13 AND rank <= $k AND intent_alpha = $alpha THEN ideal_gain / rank END), 0), 0)
    END AS nerr_ia
FROM ranked
GROUP BY user_id
