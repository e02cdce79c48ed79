-- name: set_recall
-- family: accuracy
-- k: none
-- range: [0, 1]
-- formula: hits / R over the whole recommended list; 0 when R = 0
-- cite: Manning, Raghavan & Schütze, Introduction to Information Retrieval, Cambridge UP 2008, §8.3 (recall of an unranked set); trec_eval set_recall
SELECT
    user_id,
    COALESCE(CAST(SUM(CASE WHEN src = 1 THEN hit END) AS DOUBLE) / NULLIF(MAX(n_rel), 0), 0) AS set_recall
FROM ranked
GROUP BY user_id
