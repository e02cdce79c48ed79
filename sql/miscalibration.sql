-- name: miscalibration
-- family: calibration
-- aliases: calibration_kl
-- k: required
-- population: lists
-- params: alpha number in (0, 1) = 0.01; by enum(category, features) = category; patience number in (0, 1] = 1
-- needs: interactions; category if by = category; features if by = features
-- stage: category_shares
-- range: [0, inf)
-- formula: C_KL@k = Σ_g p(g|u) · ln(p(g|u) / q̃(g|u)), q̃ = (1 − alpha)·q(g|u) + alpha·p(g|u); p(g|u) = Σ_i w_ui·p(g|i) / Σ_i w_ui over the items i of the user's interactions (Steck's eq. 1: w_ui = the sum of the weights of the user's interactions with i in the column interaction_weight_col, e.g. a recency weight; without it every item weighs 1, however often seen), q(g|u) the same share among the top k (position r weighted by patience^(r − 1), Steck's rank weights; patience = 1: every position the same), each item split over its categories: weight 1 for its items category (by = category), its positive item_features values over their sum (by = features: several weighted categories per item, e.g. genres); items without a category are left out of both; NULL for a user whose interactions hold no categorized item (of positive weight); ln(1/alpha) when no listed item has a category; 0 = perfectly calibrated
-- cite: Steck, RecSys 2018 (calibrated recommendations, equations 1–3)
SELECT
    user_id,
    CASE WHEN SUM(CASE WHEN src = 11 AND cut = $k AND category_weight = 'geometric' AND category_patience = $patience AND category_source = CASE WHEN $by = 'features' THEN 2 ELSE 1 END
                       THEN p_share END) IS NULL THEN NULL
         ELSE COALESCE(SUM(CASE WHEN src = 11 AND cut = $k AND category_weight = 'geometric' AND category_patience = $patience AND p_share > 0
                                 AND category_source = CASE WHEN $by = 'features' THEN 2 ELSE 1 END
                                THEN p_share * LN(p_share / ((1 - $alpha) * q_share + $alpha * p_share)) END), 0)
    END AS miscalibration
FROM ranked
GROUP BY user_id
