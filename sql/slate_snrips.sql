-- name: slate_snrips
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, slates) = list
-- needs: logs; cascade_propensity
-- stage: logs; log_list if target = list; log_scores if target = slates; log_slates
-- let: is_log = src = 18; w = log_pe_cascade / log_cascade_propensity; n_slates = SUM(CASE WHEN is_log() THEN log_slate_first END)
-- range: (-inf, inf)
-- formula: SNRIPS = (1/n) Σ_s Σ_k w_{s,1:k} r_{s,k} / w̄_k over the n logged slates s (a slate: the logged rows of one context) and their logged positions k, w_{s,1:k} = π_e(a_{s,1..k} | x_s) / π0(a_{s,1..k} | x_s) as slate_rips (π0 the logged cascade propensity, cascade_propensity_col; π_e 1 where the run's list puts every logged item at positions <= k at its logged position, else 0; target = slates: the recs' score on the row's own context, position and item), w̄_k = (Σ_{s'} w_{s',1:k}) / n_k the mean weight of the n_k logged rows at position k: slate_rips with each position's weights self-normalized, so each position adds n_k/n times the weighted mean reward there; consistent, not unbiased. A position whose weights are all 0 (the list reproduces no logged slate down to it) adds 0, as it does to slate_rips (obp gives NaN there, for the whole estimate); NULL when no row's weight is above 0, or without logged slates
-- cite: McInerney, Brost, Chandar, Mehrotra & Carterette, KDD 2020 (reward interaction IPS); Swaminathan & Joachims, NeurIPS 2015 (self-normalization); as obp.ope.SelfNormalizedSlateRewardInteractionIPS (Saito et al. 2021)
SELECT
    user_id,
    SUM(CASE WHEN is_log() THEN w() * log_reward * log_position_rows / NULLIF(log_position_cw, 0) END)
        / NULLIF(n_slates(), 0) AS slate_snrips
FROM ranked
GROUP BY user_id
