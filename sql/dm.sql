-- name: dm
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, scores, positions) = list
-- needs: logs; reward_model
-- stage: logs; log_model_list if target = list; log_model_scores if target = scores; log_model_scores if target = positions
-- let: is_log = src = 18; pe = CASE WHEN $target = 'list' THEN log_pe_list ELSE log_pe_scores END; w = pe() / log_propensity; n_impressions = SUM(CASE WHEN is_log() THEN 1 END); q_target = CASE WHEN $target = 'list' THEN log_q_list ELSE log_q_scores END
-- range: (-inf, inf)
-- formula: DM = (1/n) Σ_i Σ_a π_e(a|x_i) q̂(x_i, a) over the n logged impressions, q̂ the reward model's prediction (target = list: q̂ of the item the run's list puts at the logged position, 0 where it puts none; target = scores: Σ_a score(x_i, a) q̂(x_i, a) over the recs of x_i; target = positions: Σ_a score(x_i, a, k_i) q̂(x_i, a) over the recs of x_i at the logged position k_i); NULL without logged impressions; π_e for target = list: 1 where the run's list puts the logged item at the logged position, else 0; for target = scores: the recs' score of the item (the position not read); for target = positions: the recs' score of the item at the logged position
-- cite: Beygelzimer & Langford, KDD 2009 (direct method); as obp.ope.DirectMethod (Saito et al. 2021)
SELECT
    user_id,
    SUM(CASE WHEN is_log() THEN q_target() END) / NULLIF(n_impressions(), 0) AS dm
FROM ranked
GROUP BY user_id
