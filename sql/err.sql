-- name: err
-- family: user_models
-- k: optional
-- params: max_grade number in (0, inf) = auto (the largest relevance in truth)
-- stage: cascade
-- range: [0, 1] if max_grade = auto; (-inf, inf)
-- formula: ERR@k = Σ_{i≤k} (1/i)·R_i·Π_{j<i}(1 − R_j), R_i = (2^g_i − 1) / 2^g_max, g = max(relevance, 0); g_max = max_grade, default the largest relevance in truth; the product is a sum of logs with zeros and signs counted apart (no log of zero)
-- cite: Chapelle, Metzler, Zhang & Grinspan, CIKM 2009
SELECT
    user_id,
    COALESCE(SUM(CASE WHEN src = 8 AND cascade_kind = 'err' AND rank <= $k
                       AND (CASE WHEN $max_grade = 'auto' THEN cascade_grade IS NULL ELSE cascade_grade = $max_grade END)
                      THEN cascade_rel * cascade_reach / rank END), 0) AS err
FROM ranked
GROUP BY user_id
