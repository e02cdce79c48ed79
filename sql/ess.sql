-- name: ess
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, scores, positions, slates) = list; weights enum(impression, slate, cascade) = impression
-- needs: logs; slate_propensity if weights = slate; cascade_propensity if weights = cascade
-- stage: logs; log_list if target = list; log_scores if target = scores; log_scores if target = positions; log_scores if target = slates; log_list if weights = slate; log_slates if weights = slate; log_list if weights = cascade; log_slates if weights = cascade
-- let: is_log = src = 18; pe = CASE WHEN $target = 'list' THEN log_pe_list ELSE log_pe_scores END; w = CASE WHEN $weights = 'slate' THEN log_pe_slate / log_slate_propensity WHEN $weights = 'cascade' THEN log_pe_cascade / log_cascade_propensity ELSE pe() / log_propensity END; counted = CASE WHEN $weights = 'slate' THEN is_log() AND log_slate_first = 1 ELSE is_log() END; n_impressions = SUM(CASE WHEN is_log() THEN 1 END)
-- range: [0, inf)
-- formula: effective sample size (Σ_i w_i)² / Σ_i w_i² over the logged impressions, w_i as ips: n when every weight is equal, near 1 when one impression carries the estimate; NULL when every weight is 0; π_e for target = list: 1 where the run's list puts the logged item at the logged position, else 0; for target = scores: the recs' score of the item (the position not read); for target = positions: the recs' score on the row of the item at the logged position (recs as a stochastic ranking policy, π_e(a at k | x)). weights = slate: over the n logged slates instead, w_s = π_e(slate) / π0(slate) as slate_ips (one per slate); weights = cascade: over the logged rows, w = π_e(a_1..a_k) / π0(a_1..a_k) as slate_rips (both of the run's list with target = list; with target = slates, of the recs' probabilities of the logged slates' prefixes, as slate_ips and slate_rips read them: target = slates takes weights = slate or cascade only)
-- cite: Kong, Technical report 348, University of Chicago 1992; Owen, Monte Carlo theory, methods and examples, 2013, §9.3
SELECT
    user_id,
    POWER(SUM(CASE WHEN counted() THEN w() END), 2) / NULLIF(SUM(CASE WHEN counted() THEN w() * w() END), 0) AS ess
FROM ranked
GROUP BY user_id
