-- name: ess
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, scores) = list
-- needs: logs
-- stage: logs; log_list if target = list; log_scores if target = scores
-- let: is_log = src = 18; pe = CASE WHEN $target = 'scores' THEN log_pe_scores ELSE log_pe_list END; w = pe() / log_propensity; n_impressions = SUM(CASE WHEN is_log() THEN 1 END)
-- range: [0, inf)
-- formula: effective sample size (Σ_i w_i)² / Σ_i w_i² over the logged impressions, w_i as ips: n when every weight is equal, near 1 when one impression carries the estimate; NULL when every weight is 0; π_e for target = list: 1 where the run's list puts the logged item at the logged position, else 0; for target = scores: the recs' score of the item (the position not read)
-- cite: Kong, Technical report 348, University of Chicago 1992; Owen, Monte Carlo theory, methods and examples, 2013, §9.3
SELECT
    user_id,
    POWER(SUM(CASE WHEN is_log() THEN w() END), 2) / NULLIF(SUM(CASE WHEN is_log() THEN w() * w() END), 0) AS ess
FROM ranked
GROUP BY user_id
