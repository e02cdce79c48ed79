-- name: map
-- family: accuracy
-- aliases: ap
-- k: optional
-- params: denominator enum(min, relevant, hits, k) = min
-- range: [0, 1]
-- formula: AP@k = Σ_{i≤k} hit_i · (hits@i / i) / D; D = min(k, R) (min), R (relevant: trec_eval, ranx), hits@k (hits), k (k); 0 when D = 0
-- cite: Buckley & Voorhees, SIGIR 2000; Manning, Raghavan & Schütze, Introduction to Information Retrieval, Cambridge UP 2008, §8.4; trec_eval map, map_cut
SELECT
    user_id,
    COALESCE(
        SUM(CASE WHEN src = 1 AND rank <= $k AND hit = 1 THEN CAST(hits_cum AS DOUBLE) / rank ELSE 0 END)
        / NULLIF(CASE
            WHEN $denominator = 'relevant' THEN MAX(n_rel)
            WHEN $denominator = 'hits' THEN SUM(CASE WHEN src = 1 AND rank <= $k THEN hit ELSE 0 END)
            WHEN $denominator = 'k' THEN $k
            ELSE LEAST($k, MAX(n_rel))
        END, 0),
        0) AS map
FROM ranked
GROUP BY user_id
