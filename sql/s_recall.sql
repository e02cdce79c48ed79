-- name: s_recall
-- family: intent_aware
-- aliases: strec
-- k: required
-- population: intents
-- needs: intents
-- stage: intents
-- range: [0, 1]
-- formula: subtopic recall, S-recall@k = #(intents with a relevant item in the top k) / |S|, S = the user's intents with a relevant item (relevance >= threshold); 0 when there is none; NULL for a user absent from intents
-- cite: Zhai, Cohen & Lafferty, SIGIR 2003 (beyond independent relevance: subtopic retrieval); ndeval (TREC Web track) strec, ir_measures StRecall
SELECT
    user_id,
    CASE WHEN MAX(n_intents) IS NOT NULL THEN
        COALESCE(CAST(SUM(CASE WHEN src = 12 AND rank <= $k AND intent_prior = 0 THEN 1 ELSE 0 END) AS DOUBLE)
                 / NULLIF(MAX(n_intents), 0), 0)
    END AS s_recall
FROM ranked
GROUP BY user_id
