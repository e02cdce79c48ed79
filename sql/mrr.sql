-- name: mrr
-- family: accuracy
-- aliases: rr, recip_rank
-- k: optional
-- range: [0, 1]
-- formula: 1 / (first relevant position ≤ k), else 0
-- cite: Voorhees, The TREC-8 Question Answering Track Report, TREC 1999; trec_eval recip_rank
SELECT
    user_id,
    COALESCE(1 / CAST(MIN(CASE WHEN src = 1 AND rank <= $k AND hit = 1 THEN rank END) AS DOUBLE), 0) AS mrr
FROM ranked
GROUP BY user_id
