-- name: max_weight
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, scores) = list
-- needs: logs
-- stage: logs; log_list if target = list; log_scores if target = scores
-- let: is_log = src = 18; pe = CASE WHEN $target = 'scores' THEN log_pe_scores ELSE log_pe_list END; w = pe() / log_propensity; n_impressions = SUM(CASE WHEN is_log() THEN 1 END)
-- range: [0, inf)
-- formula: max_i w_i, the largest importance weight π_e(a_i|x_i) / π0(a_i|x_i) over the logged impressions (as ips): one impression's share of an IPS estimate is w_i r_i / n; NULL without logged impressions; π_e for target = list: 1 where the run's list puts the logged item at the logged position, else 0; for target = scores: the recs' score of the item (the position not read)
-- cite: Owen, Monte Carlo theory, methods and examples, 2013, §9.3 (importance weights' diagnostics); Saito et al. 2021
SELECT
    user_id,
    MAX(CASE WHEN is_log() THEN w() END) AS max_weight
FROM ranked
GROUP BY user_id
