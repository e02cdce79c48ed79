-- name: dr
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, scores, positions) = list; cap number in (0, inf) = auto (no cap)
-- needs: logs; reward_model
-- stage: logs; log_list if target = list; log_scores if target = scores; log_scores if target = positions; log_factual; log_model_list if target = list; log_model_scores if target = scores; log_model_scores if target = positions
-- let: is_log = src = 18; pe = CASE WHEN $target = 'list' THEN log_pe_list ELSE log_pe_scores END; w = pe() / log_propensity; n_impressions = SUM(CASE WHEN is_log() THEN 1 END); q_target = CASE WHEN $target = 'list' THEN log_q_list ELSE log_q_scores END
-- range: (-inf, inf)
-- formula: DR = DM + (1/n) Σ_i w_i (r_i − q̂(x_i, a_i)), w_i as ips (cap = λ: min(w_i, λ)), q̂ the reward model's prediction, DM as dm; NULL without logged impressions; π_e for target = list: 1 where the run's list puts the logged item at the logged position, else 0; for target = scores: the recs' score of the item (the position not read); for target = positions: the recs' score on the row of the item at the logged position (recs as a stochastic ranking policy, π_e(a at k | x))
-- cite: Dudík, Langford & Li, ICML 2011 (doubly robust policy evaluation); as obp.ope.DoublyRobust (Saito et al. 2021)
SELECT
    user_id,
    SUM(CASE WHEN is_log() THEN q_target()
             + (CASE WHEN $cap = 'auto' THEN w() ELSE LEAST(w(), $cap) END) * (log_reward - log_q_factual) END)
    / NULLIF(n_impressions(), 0) AS dr
FROM ranked
GROUP BY user_id
