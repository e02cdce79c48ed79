-- name: judged
-- k: required
-- formula: the share of the top k positions holding a judged item (one with a truth row), over k; 1 − trec_eval's unj_k
-- cite: Sakai & Kando 2008 (condensed lists); trec_eval unj; ir_measures Judged@k
SELECT
    user_id,
    CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND relevance IS NOT NULL THEN 1 ELSE 0 END) AS DOUBLE) / $k AS judged
FROM ranked
GROUP BY user_id
