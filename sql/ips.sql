-- name: ips
-- family: off_policy
-- k: none
-- population: global
-- params: target enum(list, scores, positions) = list; cap number in (0, inf) = auto (no cap)
-- needs: logs
-- stage: logs; log_list if target = list; log_scores if target = scores; log_scores if target = positions
-- let: is_log = src = 18; pe = CASE WHEN $target = 'list' THEN log_pe_list ELSE log_pe_scores END; w = pe() / log_propensity; n_impressions = SUM(CASE WHEN is_log() THEN 1 END)
-- range: (-inf, inf)
-- formula: IPS = (1/n) Σ_i w_i r_i over the n logged impressions, w_i = π_e(a_i|x_i) / π0(a_i|x_i): π0 the logged propensity, π_e the target's probability of the logged item at the logged position (target = list: 1 where the run's list puts it there, else 0; target = scores: the recs' score of the item; target = positions: the recs' score on the row of the item at the logged position, a stochastic ranking's π_e(a at k | x)); cap = λ clips the weights, min(w_i, λ) (clipped IPS); NULL without logged impressions
-- cite: Horvitz & Thompson, JASA 1952; Precup, Sutton & Singh, ICML 2000; as obp.ope.InverseProbabilityWeighting (Saito et al., NeurIPS 2021 Datasets and Benchmarks, Open Bandit Pipeline)
SELECT
    user_id,
    SUM(CASE WHEN is_log() THEN (CASE WHEN $cap = 'auto' THEN w() ELSE LEAST(w(), $cap) END) * log_reward END)
    / NULLIF(n_impressions(), 0) AS ips
FROM ranked
GROUP BY user_id
