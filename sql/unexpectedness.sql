-- name: unexpectedness
-- family: novelty
-- k: required
-- population: lists
-- needs: expected_recs
-- stage: expected_recs
-- range: [0, 1]
-- formula: unexpectedness@k = 1 − #(L ∩ L_expected) / k, L_expected = the user's top k in expected_recs (ordered like recs)
-- cite: Murakami, Mori & Orihara, New Frontiers in Artificial Intelligence (JSAI 2007), LNCS 4914, 2008; Kaminskas & Bridge, ACM TiiS 2016; RePlay's Unexpectedness (replay.metrics.Unexpectedness)
SELECT
    user_id,
    1 - CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND expected_rank <= $k THEN 1 ELSE 0 END) AS DOUBLE) / $k AS unexpectedness
FROM ranked
GROUP BY user_id
