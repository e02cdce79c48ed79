-- name: snips
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, scores, positions) = list
-- needs: logs
-- stage: logs; log_list if target = list; log_scores if target = scores; log_scores if target = positions
-- let: is_log = src = 18; pe = CASE WHEN $target = 'list' THEN log_pe_list ELSE log_pe_scores END; w = pe() / log_propensity; n_impressions = SUM(CASE WHEN is_log() THEN 1 END)
-- range: (-inf, inf)
-- formula: SNIPS = Σ_i w_i r_i / Σ_i w_i over the logged impressions, w_i = π_e(a_i|x_i) / π0(a_i|x_i) (as ips); NULL when every weight is 0 (the target never shows a logged item where it was logged); π_e for target = list: 1 where the run's list puts the logged item at the logged position, else 0; for target = scores: the recs' score of the item (the position not read); for target = positions: the recs' score on the row of the item at the logged position (recs as a stochastic ranking policy, π_e(a at k | x))
-- cite: Swaminathan & Joachims, NeurIPS 2015 (self-normalized estimator); as obp.ope.SelfNormalizedInverseProbabilityWeighting (Saito et al. 2021)
SELECT
    user_id,
    SUM(CASE WHEN is_log() THEN w() * log_reward END) / NULLIF(SUM(CASE WHEN is_log() THEN w() END), 0) AS snips
FROM ranked
GROUP BY user_id
