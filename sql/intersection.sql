-- name: intersection
-- family: run_agreement
-- k: required
-- population: lists
-- needs: expected_recs
-- stage: expected_recs
-- range: [0, 1]
-- formula: intersection@k = #(L ∩ E) / #L, L the user's top k, E the user's top k in expected_recs (the reference run, ordered like recs); 0 for a user without an expected list
-- cite: RecTools' Intersection (rectools.metrics.Intersection, ref_k = k): the share of a list the reference run also recommends
SELECT
    user_id,
    CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND expected_rank <= $k THEN 1 ELSE 0 END) AS DOUBLE)
        / NULLIF(SUM(CASE WHEN src = 1 AND rank <= $k THEN 1 ELSE 0 END), 0) AS intersection
FROM ranked
GROUP BY user_id
