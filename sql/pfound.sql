-- name: pfound
-- family: user_models
-- k: optional
-- params: max_grade number in (0, inf) = auto (the largest relevance in truth); p_break number in [0, 1) = 0.15
-- stage: cascade
-- range: [0, 1] if max_grade = auto; (-inf, inf)
-- formula: pFound@k = Σ_{i≤k} pLook_i·pRel_i; pLook_1 = 1, pLook_i = pLook_{i−1}·(1 − pRel_{i−1})·(1 − p_break); pRel = max(relevance, 0) / max_grade (0 when max_grade is 0), max_grade default the largest relevance in truth
-- cite: Gulin, Karpovich, Raskovalov & Segalovich, Yandex at ROMIP'2009: optimization of ranking algorithms by machine learning methods, Proceedings of ROMIP 2009; Segalovich, Machine learning in search quality at Yandex, SIGIR 2010 industry track
SELECT
    user_id,
    COALESCE(SUM(CASE WHEN src = 8 AND cascade_kind = 'pfound' AND rank <= $k
                       AND (CASE WHEN $max_grade = 'auto' THEN cascade_grade IS NULL ELSE cascade_grade = $max_grade END)
                      THEN cascade_rel * cascade_reach * POWER(1 - $p_break, rank - 1) END), 0) AS pfound
FROM ranked
GROUP BY user_id
