-- name: spearman
-- family: accuracy
-- k: required
-- stage: corr
-- range: [-1, 1]
-- formula: Spearman's rho over the judged items of the top k (relevance 0 included): the Pearson correlation of the average ranks of −position and of relevance; NULL below 2 items or when either side is constant
-- cite: Spearman, American Journal of Psychology 1904
SELECT
    user_id,
    (SUM(CASE WHEN src = 7 AND cut = $k THEN 1 ELSE 0 END) * SUM(CASE WHEN src = 7 AND cut = $k THEN corr_rank_x * corr_rank_y END)
     - SUM(CASE WHEN src = 7 AND cut = $k THEN corr_rank_x END) * SUM(CASE WHEN src = 7 AND cut = $k THEN corr_rank_y END))
    / NULLIF(SQRT(
        (SUM(CASE WHEN src = 7 AND cut = $k THEN 1 ELSE 0 END) * SUM(CASE WHEN src = 7 AND cut = $k THEN corr_rank_x * corr_rank_x END)
         - SUM(CASE WHEN src = 7 AND cut = $k THEN corr_rank_x END) * SUM(CASE WHEN src = 7 AND cut = $k THEN corr_rank_x END))
        * (SUM(CASE WHEN src = 7 AND cut = $k THEN 1 ELSE 0 END) * SUM(CASE WHEN src = 7 AND cut = $k THEN corr_rank_y * corr_rank_y END)
           - SUM(CASE WHEN src = 7 AND cut = $k THEN corr_rank_y END) * SUM(CASE WHEN src = 7 AND cut = $k THEN corr_rank_y END))), 0) AS spearman
FROM ranked
GROUP BY user_id
