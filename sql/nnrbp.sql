-- name: nnrbp
-- family: intent_aware
-- k: required
-- population: intents
-- params: alpha number in [0, 1) = 0.5; beta number in (0, 1) = 0.5
-- needs: intents
-- stage: intents; intent_depths; intent_ideal
-- range: [0, inf)
-- formula: (α = alpha, β = beta) normalised NRBP, nNRBP@k = NRBP@k / NRBP@k of the greedy ideal list of alpha_ndcg = Σ_{r≤k} β^(r−1) Σ_s J(r, s) (1 − α)^{c_s(r)} over the same sum for the ideal list (NRBP's factor (1 − (1 − α)β)/|S| cancels; J, c_s as in alpha_ndcg); ndeval's nNRBP (the whole list over the whole ideal list) when no list is longer than k and no user has more than k relevant items; 0 when no intent has a relevant item (ndeval: NaN); NULL for a user absent from intents
-- cite: Clarke, Kolla & Vechtomova, ICTIR 2009 (an effectiveness measure for ambiguous and underspecified queries); ndeval (TREC Web track) nNRBP, ir_measures nNRBP
SELECT
    user_id,
    CASE WHEN MAX(n_intents) IS NOT NULL THEN
        COALESCE(SUM(CASE WHEN src = 12 AND rank <= $k THEN POWER($beta, rank - 1) * POWER(1 - $alpha, intent_prior) END)
                 / NULLIF(SUM(CASE WHEN src = 13 AND rank <= $k AND intent_alpha = $alpha
                                   THEN POWER($beta, rank - 1) * ideal_gain END), 0), 0)
    END AS nnrbp
FROM ranked
GROUP BY user_id
