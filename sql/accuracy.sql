-- name: accuracy
-- family: accuracy
-- k: required
-- list: full
-- range: [0, 1]
-- formula: accuracy@k = (TP + TN) / N; predicted positive = the top k; TP = relevant items in the top k; TN = non-relevant items of the list beyond k; N = #(whole list ∪ relevant truth items); 0 when N = 0
-- cite: Manning, Raghavan & Schütze, Introduction to Information Retrieval, Cambridge UP 2008, §8.3 (accuracy = (tp + tn) / (tp + fp + fn + tn) of the relevant × retrieved contingency table, the top k being the retrieved set); Herlocker, Konstan, Terveen & Riedl, ACM TOIS 2004 (classification accuracy metrics)
SELECT
    user_id,
    COALESCE(
        CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND hit = 1 THEN 1 WHEN src = 1 AND rank > $k AND hit = 0 THEN 1 ELSE 0 END) AS DOUBLE)
        / NULLIF(SUM(CASE WHEN src = 1 THEN 1 - hit ELSE 0 END) + MAX(n_rel), 0),
        0) AS accuracy
FROM ranked
GROUP BY user_id
