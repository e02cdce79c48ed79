-- name: jaccard
-- family: run_agreement
-- k: required
-- population: lists
-- needs: expected_recs
-- stage: expected_recs
-- range: [0, 1]
-- formula: jaccard@k = #(L ∩ E) / #(L ∪ E) = #(L ∩ E) / (#L + #E − #(L ∩ E)), L the user's top k, E the user's top k in expected_recs (the reference run, ordered like recs); 0 for a user without an expected list
-- cite: Jaccard, Bulletin de la Société Vaudoise des Sciences Naturelles 37, 1901; as a list-overlap measure between two runs, Webber, Moffat & Zobel, ACM TOIS 2010 (set overlap at depth k)
SELECT
    user_id,
    CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND expected_rank <= $k THEN 1 ELSE 0 END) AS DOUBLE)
        / NULLIF(SUM(CASE WHEN src = 1 AND rank <= $k THEN 1 ELSE 0 END)
                 + CASE WHEN COALESCE(MAX(expected_n), 0) <= $k THEN COALESCE(MAX(expected_n), 0) ELSE $k END
                 - SUM(CASE WHEN src = 1 AND rank <= $k AND expected_rank <= $k THEN 1 ELSE 0 END), 0) AS jaccard
FROM ranked
GROUP BY user_id
