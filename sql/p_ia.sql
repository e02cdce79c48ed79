-- name: p_ia
-- family: intent_aware
-- k: required
-- population: intents
-- needs: intents
-- stage: intents
-- range: [0, 1]
-- formula: intent-aware precision, P-IA@k = (1/|S|) Σ_s #(items of the top k relevant to s) / k, over the user's intents S with a relevant item (relevance >= threshold); 0 when there is none; NULL for a user absent from intents
-- cite: Agrawal, Gollapudi, Halverson & Ieong, WSDM 2009 (diversifying search results); ndeval (TREC Web track) P-IA, ir_measures P_IA
SELECT
    user_id,
    CASE WHEN MAX(n_intents) IS NOT NULL THEN
        -- the relevant (position, intent) pairs of the top k, one row each
        COALESCE(CAST(COUNT(CASE WHEN src = 12 AND rank <= $k THEN intent_prior END) AS DOUBLE)
                 / NULLIF(MAX(n_intents) * $k, 0), 0)
    END AS p_ia
FROM ranked
GROUP BY user_id
