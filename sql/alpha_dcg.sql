-- name: alpha_dcg
-- family: intent_aware
-- k: required
-- population: intents
-- params: alpha number in [0, 1) = 0.5
-- needs: intents
-- stage: intents; intent_depths
-- range: [0, 1]
-- formula: (α = alpha) α-DCG@k as ndeval reports it, normalised by its largest value in any collection: Σ_{r≤k} Σ_s J(r, s) (1 − α)^{c_s(r)} / log2(r + 1) / (|S| · Σ_{r≤k} (1 − α)^(r−1) / log2(r + 1)), J and c_s as in alpha_ndcg, |S| = the user's intents with a relevant item; 0 when there is none; NULL for a user absent from intents
-- cite: Clarke et al., SIGIR 2008; ndeval (TREC Web track) alpha-DCG with its collection-independent normalisation, ir_measures alpha_DCG
SELECT
    user_id,
    CASE WHEN MAX(n_intents) IS NOT NULL THEN
        COALESCE(SUM(CASE WHEN src = 12 AND rank <= $k THEN POWER(1 - $alpha, intent_prior) * LN(2) / LN(rank + 1) END)
                 / NULLIF(MAX(n_intents) * SUM(CASE WHEN src = 13 AND rank <= $k AND intent_alpha = $alpha
                                                    THEN POWER(1 - $alpha, rank - 1) * LN(2) / LN(rank + 1) END), 0), 0)
    END AS alpha_dcg
FROM ranked
GROUP BY user_id
