-- name: slate_snips
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, slates) = list
-- needs: logs; slate_propensity
-- stage: logs; log_list if target = list; log_scores if target = slates; log_slates
-- let: is_log = src = 18; w = log_pe_slate / log_slate_propensity
-- range: (-inf, inf)
-- formula: SNSIPS = Σ_s w_s Σ_k r_{s,k} / Σ_s w_s over the logged slates s (a slate: the logged rows of one context) and their logged positions k, w_s = π_e(slate s | x_s) / π0(slate s | x_s) as slate_ips (π0 the logged joint propensity, slate_propensity_col; π_e 1 where the run's list puts every logged item of the slate at its logged position, else 0; target = slates: the recs' score at the slate's last logged position): slate_ips with the number of slates replaced by the sum of their weights, so with target = list the mean slate reward of the slates the run's list reproduces whole; consistent, not unbiased, and never beyond the rewards' range; NULL when no slate's weight is above 0 or without logged slates. obp.ope.SelfNormalizedSlateStandardIPS divides by the mean weight over the rows instead, which counts a slate once per position: equal when every slate has the same length (as obp's synthetic slates do), and otherwise each slate here counts once
-- cite: Swaminathan & Joachims, NeurIPS 2015 (the self-normalized estimator); McInerney, Brost, Chandar, Mehrotra & Carterette, KDD 2020; as obp.ope.SelfNormalizedSlateStandardIPS (Saito et al. 2021)
SELECT
    user_id,
    SUM(CASE WHEN is_log() THEN w() * log_reward END)
        / NULLIF(SUM(CASE WHEN is_log() AND log_slate_first = 1 THEN w() END), 0) AS slate_snips
FROM ranked
GROUP BY user_id
