-- name: entropy
-- k: required
-- population: lists
-- params: base enum(e, 2) = e; by enum(category, features) = category
-- needs: category if by = category; features if by = features
-- stage: category_shares
-- range: [0, inf)
-- formula: entropy@k = −Σ_g q(g) · log q(g), q(g) = the share of category g among the top k, each item split over its categories (weight 1 for its items category, by = category; its positive item_features values over their sum, by = features); items without a category are left out; natural log (base = e, nats) or log2 (base = 2, bits); NULL when no listed item has a category; 0 = one category
-- cite: Shannon, Bell System Technical Journal 27, 1948; as a list's category diversity, e.g. Steck, RecSys 2018 and Kaminskas & Bridge, ACM TiiS 2016
SELECT
    user_id,
    CASE WHEN SUM(CASE WHEN src = 11 AND cut = $k AND category_source = CASE WHEN $by = 'features' THEN 2 ELSE 1 END
                       THEN q_share END) > 0
         THEN -SUM(CASE WHEN src = 11 AND cut = $k AND q_share > 0
                         AND category_source = CASE WHEN $by = 'features' THEN 2 ELSE 1 END
                        THEN q_share * LN(q_share) END) / CASE WHEN $base = '2' THEN LN(2) ELSE 1 END
    END AS entropy
FROM ranked
GROUP BY user_id
