-- name: max_weight
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, scores, positions, slates) = list; weights enum(impression, slate, cascade) = impression
-- needs: logs; slate_propensity if weights = slate; cascade_propensity if weights = cascade
-- stage: logs; log_list if target = list; log_scores if target = scores; log_scores if target = positions; log_scores if target = slates; log_list if weights = slate; log_slates if weights = slate; log_list if weights = cascade; log_slates if weights = cascade
-- let: is_log = src = 18; pe = CASE WHEN $target = 'list' THEN log_pe_list ELSE log_pe_scores END; w = CASE WHEN $weights = 'slate' THEN log_pe_slate / log_slate_propensity WHEN $weights = 'cascade' THEN log_pe_cascade / log_cascade_propensity ELSE pe() / log_propensity END; counted = CASE WHEN $weights = 'slate' THEN is_log() AND log_slate_first = 1 ELSE is_log() END; n_impressions = SUM(CASE WHEN is_log() THEN 1 END)
-- range: [0, inf)
-- formula: max_i w_i, the largest importance weight π_e(a_i|x_i) / π0(a_i|x_i) over the logged impressions (as ips): one impression's share of an IPS estimate is w_i r_i / n; NULL without logged impressions; π_e for target = list: 1 where the run's list puts the logged item at the logged position, else 0; for target = scores: the recs' score of the item (the position not read); for target = positions: the recs' score on the row of the item at the logged position (recs as a stochastic ranking policy, π_e(a at k | x)). weights = slate: the largest slate weight π_e(slate) / π0(slate) (as slate_ips); weights = cascade: the largest cascade weight π_e(a_1..a_k) / π0(a_1..a_k) (as slate_rips), both of the run's list with target = list, or with target = slates of the recs' probabilities of the logged slates' prefixes, as slate_ips and slate_rips read them (target = slates takes weights = slate or cascade only)
-- cite: Owen, Monte Carlo theory, methods and examples, 2013, §9.3 (importance weights' diagnostics); Saito et al. 2021
SELECT
    user_id,
    MAX(CASE WHEN counted() THEN w() END) AS max_weight
FROM ranked
GROUP BY user_id
