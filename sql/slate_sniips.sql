-- name: slate_sniips
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, positions) = list
-- needs: logs
-- stage: logs; log_list if target = list; log_scores if target = positions; log_slates
-- let: is_log = src = 18; w = CASE WHEN $target = 'list' THEN log_pe_list ELSE log_pe_scores END / log_propensity; normaliser = CASE WHEN $target = 'list' THEN log_position_iw ELSE log_position_sw END; n_slates = SUM(CASE WHEN is_log() THEN log_slate_first END)
-- range: (-inf, inf)
-- formula: SNIIPS = (1/n) Σ_s Σ_k w_{s,k} r_{s,k} / w̄_k over the n logged slates s (a slate: the logged rows of one context) and their logged positions k, w_{s,k} = π_e(a_{s,k} at k | x_s) / π0(a_{s,k} at k | x_s) as slate_iips (π0 the logged marginal propensity, π_e 1 where the run's list puts the logged item at the logged position, else 0; target = positions: the recs' score on the row of the item at the logged position), w̄_k = (Σ_{s'} w_{s',k}) / n_k the mean weight of the n_k logged rows at position k: slate_iips with each position's weights self-normalized, so each position adds n_k/n times the weighted mean reward there; consistent, not unbiased. A position whose weights are all 0 (the list shows no logged item where it was logged) adds 0, as it does to slate_iips (obp gives NaN there, for the whole estimate); NULL when no row's weight is above 0, or without logged slates
-- cite: Li, Abbasi-Yadkori, Kveton, Muthukrishnan, Vinay & Wen, "Offline Evaluation of Ranking Policies with Click Models", KDD 2018; Swaminathan & Joachims, NeurIPS 2015 (self-normalization); as obp.ope.SelfNormalizedSlateIndependentIPS (Saito et al. 2021)
SELECT
    user_id,
    SUM(CASE WHEN is_log() THEN w() * log_reward * log_position_rows / NULLIF(normaliser(), 0) END)
        / NULLIF(n_slates(), 0) AS slate_sniips
FROM ranked
GROUP BY user_id
