-- name: entropy
-- family: diversity
-- k: required
-- population: lists
-- params: base enum(e, 2) = e; by enum(category, features) = category; patience number in (0, 1] = 1
-- needs: category if by = category; features if by = features
-- stage: category_shares
-- range: [0, inf)
-- formula: entropy@k = −Σ_g q(g) · log q(g), q(g) = the share of category g among the top k, each item split over its categories (weight 1 for its items category, by = category; its positive item_features values over their sum, by = features) and weighted by patience^(r − 1) at position r (patience = 1: every position the same; below 1: rank-biased entropy, LensKit's RankBiasedEntropy at patience = 0.85 and base = 2); items without a category are left out; natural log (base = e, nats) or log2 (base = 2, bits); NULL when no listed item has a category; 0 = one category
-- cite: Shannon, Bell System Technical Journal 27, 1948; as a list's category diversity, e.g. Steck, RecSys 2018 and Kaminskas & Bridge, ACM TiiS 2016; rank-biased as LensKit's RankBiasedEntropy (Ekstrand et al., lenskit.metrics, 2025)
SELECT
    user_id,
    CASE WHEN SUM(CASE WHEN src = 11 AND cut = $k AND category_weight = 'geometric' AND category_patience = $patience AND category_source = CASE WHEN $by = 'features' THEN 2 ELSE 1 END
                       THEN q_share END) > 0
         THEN -SUM(CASE WHEN src = 11 AND cut = $k AND category_weight = 'geometric' AND category_patience = $patience AND q_share > 0
                         AND category_source = CASE WHEN $by = 'features' THEN 2 ELSE 1 END
                        THEN q_share * LN(q_share) END) / CASE WHEN $base = '2' THEN LN(2) ELSE 1 END
    END AS entropy
FROM ranked
GROUP BY user_id
