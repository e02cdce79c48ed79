-- name: pbm_ips
-- family: off_policy
-- k: none
-- population: global
-- params: examination discount or logs = logs; logging enum(randomized, ranking) = randomized
-- needs: logs
-- stage: logs; log_list; log_slates; log_pbm
-- let: is_log = src = 18; n_slates = SUM(CASE WHEN is_log() THEN log_slate_first END); shown = COALESCE(log_list_rank, log_slate_depth + 1) <= log_slate_depth; theta_list = CASE WHEN $examination = 'logs' THEN log_exam_list ELSE EXAMINATION(log_list_rank) END; theta_logged = CASE WHEN $examination = 'logs' THEN log_exam_logged ELSE EXAMINATION(log_position) END; share = CASE WHEN $logging = 'randomized' THEN log_slate_depth * log_propensity ELSE 1 END; counted = is_log() AND log_reward <> 0 AND shown(); undefined = counted() AND (COALESCE(theta_logged(), 0) <= 0 OR COALESCE(theta_list(), -1) < 0)
-- range: (-inf, inf)
-- formula: PBM-IPS = (1/n) Σ_s Σ_k r_{s,k} θ(k_e(a_{s,k})) / (θ(k) m_{s,k}) over the n logged slates s (a slate: the logged rows of one context) and their logged positions k, under the position-based model (the reward of item a at position k is θ(k) α(x, a): the examination probability of the position times the item's own value). k_e(a) is the position at which the run's list puts the logged item a, counted only within the slate's positions 1..K_s (K_s its deepest logged position; elsewhere the item adds 0). m_{s,k} = K_s π0(a at k | x_s) with logging = randomized (π0 the logged marginal propensity of the item at its position: unbiased when the logging policy may put each item it shows at each of the K_s positions, as a Plackett-Luce or shuffling policy does), m = 1 with logging = ranking (the logged ranking taken as given, as a deterministic ranker's: Joachims et al. 2017; unbiased only when the list shows no item the logged slate lacks). θ is the examination option: a discount in `rank` (log2, jarvelin or an expression such as 1 / rank; only ratios of it matter), or logs (with logging = randomized): θ(k) ∝ Σ r / π0 over the logged rows at position k, consistent under the same randomized logging. NULL when a counted row's θ at its logged position is not above 0 (or its list position's is below 0 or, estimated, has no logged row), or without logged slates
-- cite: Richardson, Dominowska & Ragno, WWW 2007 and Craswell et al., WSDM 2008 (the position-based model); Joachims, Swaminathan & Schnabel, WSDM 2017 (the examination propensity); Li, Abbasi-Yadkori, Kveton, Muthukrishnan, Vinay & Wen, KDD 2018 (off-policy evaluation of rankings under click models)
SELECT
    user_id,
    CASE WHEN COUNT(CASE WHEN undefined() THEN 1 END) = 0
         THEN SUM(CASE WHEN is_log() THEN CASE WHEN counted() THEN log_reward * theta_list() / (theta_logged() * share()) ELSE 0 END END)
              / NULLIF(n_slates(), 0)
    END AS pbm_ips
FROM ranked
GROUP BY user_id
