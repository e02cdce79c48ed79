-- name: slate_iips
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, positions) = list
-- needs: logs
-- stage: logs; log_list if target = list; log_scores if target = positions; log_slates
-- let: is_log = src = 18; pe = CASE WHEN $target = 'list' THEN log_pe_list ELSE log_pe_scores END; n_slates = SUM(CASE WHEN is_log() THEN log_slate_first END)
-- range: (-inf, inf)
-- formula: IIPS = (1/n) Σ_s Σ_k w_{s,k} r_{s,k} over the n logged slates s (a slate: the logged rows of one context) and their logged positions k, w_{s,k} = π_e(a_{s,k} at k | x_s) / π0(a_{s,k} at k | x_s): π0 the logged propensity of the item at its position (the marginal one), π_e 1 where the run's list puts the logged item at the logged position, else 0 (target = positions: the recs' score on the row of the item at the logged position, a stochastic ranking's marginal π_e(a at k | x)); unbiased when the reward of a position depends only on the item there; NULL without logged slates
-- cite: Li, Kim, Kveton, Narasimhan et al., KDD 2018 (independent IPS); McInerney et al., KDD 2020; as obp.ope.SlateIndependentIPS (Saito et al. 2021)
SELECT
    user_id,
    SUM(CASE WHEN is_log() THEN pe() / log_propensity * log_reward END) / NULLIF(n_slates(), 0) AS slate_iips
FROM ranked
GROUP BY user_id
