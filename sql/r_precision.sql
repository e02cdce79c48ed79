-- name: r_precision
-- family: accuracy
-- aliases: rprec
-- k: none
-- range: [0, 1]
-- formula: hits@R / R, R = the user's relevant truth items (the whole list is ranked, no cutoff)
-- cite: Buckley & Voorhees, SIGIR 2000; Manning, Raghavan & Schütze, Introduction to Information Retrieval, Cambridge UP 2008, §8.4; trec_eval Rprec
SELECT
    user_id,
    COALESCE(
        CAST(SUM(CASE WHEN src = 1 AND rank <= n_rel THEN hit ELSE 0 END) AS DOUBLE) / NULLIF(MAX(n_rel), 0),
        0) AS r_precision
FROM ranked
GROUP BY user_id
