-- name: slate_rips
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, slates) = list
-- needs: logs; cascade_propensity
-- stage: logs; log_list if target = list; log_scores if target = slates; log_slates
-- let: is_log = src = 18; n_slates = SUM(CASE WHEN is_log() THEN log_slate_first END)
-- range: (-inf, inf)
-- formula: RIPS = (1/n) Σ_s Σ_k w_{s,1:k} r_{s,k} over the n logged slates s (a slate: the logged rows of one context) and their logged positions k, w_{s,1:k} = π_e(a_{s,1..k} | x_s) / π0(a_{s,1..k} | x_s): π0 the logged cascade propensity of the slate's items at its positions up to k (cascade_propensity_col), π_e 1 where the run's list puts every logged item at positions <= k at its logged position, else 0 (target = slates: the recs' score on the row's own context, position and item, a stochastic target's probability of the slate's items at positions 1..k, as obp's evaluation_policy_pscore_cascade); unbiased when the reward at k depends only on the items at positions 1..k (cascade behaviour); NULL without logged slates
-- cite: McInerney, Brost, Chandar, Mehrotra & Carterette, KDD 2020 (reward interaction IPS); as obp.ope.SlateRewardInteractionIPS (Saito et al. 2021)
SELECT
    user_id,
    SUM(CASE WHEN is_log() THEN log_pe_cascade / log_cascade_propensity * log_reward END) / NULLIF(n_slates(), 0) AS slate_rips
FROM ranked
GROUP BY user_id
