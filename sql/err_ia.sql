-- name: err_ia
-- family: intent_aware
-- k: required
-- population: intents
-- params: alpha number in (0, 1) = 0.5
-- needs: intents
-- stage: intents; intent_depths
-- range: [0, 1]
-- formula: (α = alpha) intent-aware ERR@k as ndeval reports it: the mean over the user's intents s with a relevant item of ERR_s@k = Σ_{r≤k} (1/r) α J(r, s) (1 − α)^{c_s(r)} (each item relevant to s satisfies with probability α), normalised by its largest value Σ_{r≤k} (1/r) α (1 − α)^(r−1); J and c_s as in alpha_ndcg; 0 when no intent has a relevant item; NULL for a user absent from intents
-- cite: Chapelle, Ji, Liao, Velipasaoglu, Lai & Wu, Information Retrieval 14(6), 2011 (intent-based diversity metrics); ndeval (TREC Web track) ERR-IA, ir_measures ERR_IA
SELECT
    user_id,
    CASE WHEN MAX(n_intents) IS NOT NULL THEN
        COALESCE(SUM(CASE WHEN src = 12 AND rank <= $k THEN $alpha * POWER(1 - $alpha, intent_prior) / rank END)
                 / NULLIF(MAX(n_intents) * SUM(CASE WHEN src = 13 AND rank <= $k AND intent_alpha = $alpha
                                                    THEN $alpha * POWER(1 - $alpha, rank - 1) / rank END), 0), 0)
    END AS err_ia
FROM ranked
GROUP BY user_id
