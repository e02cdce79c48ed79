-- name: bpref
-- family: accuracy
-- k: optional
-- range: [0, 1]
-- formula: bpref = (1/R) Σ_{relevant i ≤ k} (1 − min(N_i, R) / min(N, R)), N_i = judged non-relevant items ranked above i, N = the user's judged non-relevant truth items; a term is 1 when N_i = 0; 0 when R = 0. Unjudged items are skipped, not counted as non-relevant.
-- cite: Buckley & Voorhees, SIGIR 2004; trec_eval bpref
SELECT
    user_id,
    COALESCE(
        SUM(CASE WHEN src = 1 AND rank <= $k AND hit = 1 THEN
                CASE WHEN nonrel_cum > 0
                     THEN 1 - CAST(LEAST(nonrel_cum, n_rel) AS DOUBLE) / LEAST(n_nonrel, n_rel)
                     ELSE 1 END
            END)
        / NULLIF(MAX(n_rel), 0),
        0) AS bpref
FROM ranked
GROUP BY user_id
