-- name: set_p
-- family: accuracy
-- k: none
-- range: [0, 1]
-- formula: hits / n over the whole recommended list (n its length); 0 for an empty list
-- cite: Manning, Raghavan & Schütze, Introduction to Information Retrieval, Cambridge UP 2008, §8.3 (precision of an unranked set); trec_eval set_P
SELECT
    user_id,
    COALESCE(
        CAST(SUM(CASE WHEN src = 1 THEN hit END) AS DOUBLE) / NULLIF(SUM(CASE WHEN src = 1 THEN 1 ELSE 0 END), 0),
        0) AS set_p
FROM ranked
GROUP BY user_id
