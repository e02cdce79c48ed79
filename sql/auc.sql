-- name: auc
-- family: accuracy
-- k: optional
-- stage: tie_bounds
-- range: [0, 1]
-- formula: AUC@k = share of (relevant, non-relevant) pairs of the top k (or the whole list) in which the relevant item is ranked higher, equal scores counting ½ (unjudged = non-relevant); as Mann–Whitney: (Σ_{relevant} midrank − P(P+1)/2) / (P·(N − P)), midrank = N + 1 − (first + last position of the item's tie group within the cut) / 2; NULL when the list lacks either class
-- cite: Hanley & McNeil, Radiology 1982; Mann & Whitney, Annals of Mathematical Statistics 1947
SELECT
    user_id,
    (CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND hit = 1 THEN 1 ELSE 0 END) AS DOUBLE)
        * (SUM(CASE WHEN src = 1 AND rank <= $k THEN 1 ELSE 0 END) + 1)
     - CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND hit = 1 THEN tie_first + LEAST(tie_last, $k) END) AS DOUBLE) / 2
     - CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND hit = 1 THEN 1 ELSE 0 END) AS DOUBLE)
        * (SUM(CASE WHEN src = 1 AND rank <= $k AND hit = 1 THEN 1 ELSE 0 END) + 1) / 2)
    / NULLIF(CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND hit = 1 THEN 1 ELSE 0 END) AS DOUBLE)
             * SUM(CASE WHEN src = 1 AND rank <= $k AND hit = 0 THEN 1 ELSE 0 END), 0) AS auc
FROM ranked
GROUP BY user_id
