-- name: judged
-- family: accuracy
-- k: required
-- params: denominator enum(k, list) = k
-- range: [0, 1]
-- formula: judged items (with a truth row) in the top k, ÷ k (1 − trec_eval's unj_k); denominator=list: ÷ min(k, n) (ir_measures Judged@k), 0 for an empty list
-- cite: Sakai & Kando, Information Retrieval 2008 (evaluation with incomplete judgments); trec_eval unj; ir_measures Judged@k
SELECT
    user_id,
    COALESCE(
        CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND relevance IS NOT NULL THEN 1 ELSE 0 END) AS DOUBLE)
        / NULLIF(CASE WHEN $denominator = 'list' THEN SUM(CASE WHEN src = 1 AND rank <= $k THEN 1 ELSE 0 END)
                      ELSE $k END, 0),
        0) AS judged
FROM ranked
GROUP BY user_id
