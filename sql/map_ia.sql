-- name: map_ia
-- family: intent_aware
-- aliases: ap_ia
-- k: optional
-- population: intents
-- needs: intents
-- stage: intents
-- range: [0, 1]
-- formula: intent-aware average precision, AP-IA = (1/|S|) Σ_s AP_s, AP_s = (1/R_s) Σ_{r: J(r, s)} (c_s(r) + 1) / r over the whole list (or its top k), R_s = the items relevant to s, J and c_s as in alpha_ndcg; 0 when no intent has a relevant item; NULL for a user absent from intents
-- cite: Agrawal, Gollapudi, Halverson & Ieong, WSDM 2009; ndeval (TREC Web track) MAP-IA, ir_measures AP_IA
SELECT
    user_id,
    CASE WHEN MAX(n_intents) IS NOT NULL THEN
        COALESCE(SUM(CASE WHEN src = 12 AND rank <= $k THEN CAST(intent_prior + 1 AS DOUBLE) / (rank * intent_rel) END)
                 / NULLIF(MAX(n_intents), 0), 0)
    END AS map_ia
FROM ranked
GROUP BY user_id
