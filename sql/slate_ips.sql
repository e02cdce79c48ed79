-- name: slate_ips
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, slates) = list
-- needs: logs; slate_propensity
-- stage: logs; log_list if target = list; log_scores if target = slates; log_slates
-- let: is_log = src = 18; n_slates = SUM(CASE WHEN is_log() THEN log_slate_first END)
-- range: (-inf, inf)
-- formula: SIPS = (1/n) Σ_s w_s Σ_k r_{s,k} over the n logged slates s (a slate: the logged rows of one context) and their logged positions k, w_s = π_e(slate s | x_s) / π0(slate s | x_s): π0 the logged joint propensity of the whole slate (slate_propensity_col), π_e 1 where the run's list puts every logged item of the slate at its logged position, else 0 (target = slates: the recs' score at the slate's last logged position, a stochastic target's probability of the whole logged slate, as obp's evaluation_policy_pscore); unbiased without any assumption on the reward; NULL without logged slates
-- cite: McInerney, Brost, Chandar, Mehrotra & Carterette, KDD 2020, Eq. 1 (standard slate IPS); Li et al., KDD 2018; as obp.ope.SlateStandardIPS (Saito et al. 2021)
SELECT
    user_id,
    SUM(CASE WHEN is_log() THEN log_pe_slate / log_slate_propensity * log_reward END) / NULLIF(n_slates(), 0) AS slate_ips
FROM ranked
GROUP BY user_id
