-- name: alpha_ndcg
-- family: intent_aware
-- k: required
-- population: intents
-- params: alpha number in [0, 1) = 0.5
-- needs: intents
-- stage: intents; intent_depths; intent_ideal
-- range: [0, inf)
-- formula: (α = alpha) α-nDCG@k = α-DCG@k / α-DCG@k of the ideal list, α-DCG@k = Σ_{r≤k} Σ_s J(r, s) (1 − α)^{c_s(r)} / log2(r + 1): J(r, s) = 1 when the item at r is relevant to intent s (relevance >= threshold), c_s(r) = the positions above r relevant to s; the ideal list is the greedy one (each position takes the relevant item of largest gain given those above, ties to the largest item id, as ndeval); 0 when no intent has a relevant item; NULL for a user absent from intents
-- cite: Clarke, Kolla, Cormack, Vechtomova, Ashkan, Büttcher & MacKinnon, SIGIR 2008 (novelty and diversity in information retrieval evaluation); ndeval (TREC Web track) alpha-nDCG, ir_measures alpha_nDCG
SELECT
    user_id,
    CASE WHEN MAX(n_intents) IS NOT NULL THEN
        COALESCE(SUM(CASE WHEN src = 12 AND rank <= $k THEN POWER(1 - $alpha, intent_prior) * LN(2) / LN(rank + 1) END)
                 / NULLIF(SUM(CASE WHEN src = 13 AND rank <= $k AND intent_alpha = $alpha
                                   THEN ideal_gain * LN(2) / LN(rank + 1) END), 0), 0)
    END AS alpha_ndcg
FROM ranked
GROUP BY user_id
