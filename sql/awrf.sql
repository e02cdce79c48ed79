-- name: awrf
-- family: fairness
-- k: required
-- population: lists
-- params: target enum(uniform, items) = uniform; weight enum(trec, log, geometric) = trec; patience number in (0, 1] = 0.5; by enum(category, features) = category
-- needs: category if by = category; features if by = features
-- stage: category_shares; category_targets
-- let: row = src = 11 AND cut = $k AND category_weight = $weight AND category_patience = CASE WHEN $weight = 'geometric' THEN $patience ELSE 1 END AND category_source = CASE WHEN $by = 'features' THEN 2 ELSE 1 END AND q_share > 0; t = CASE WHEN $target = 'items' THEN items_share ELSE uniform_share END
-- range: [0, 1]
-- formula: AWRF@k = 1 − JSD(a, t), JSD(a, t) = ½·Σ_g a_g·ln(2a_g/(a_g + t_g)) + ½·Σ_g t_g·ln(2t_g/(a_g + t_g)) (natural log: from 1 − ln 2 ≈ 0.307 to 1 = the target met); a_g = the attention the top k gives group g (an items category; by = features: item_features values as weighted categories) over all it gives categorized items, position r weighing 1/log2(max(r, 2)) (weight = trec, TREC Fair Ranking's discount: ranks 1 and 2 weigh 1), 1/log2(r + 1) (weight = log) or patience^(r − 1) (weight = geometric); t = the target distribution over every group of the items input: 1/G each (target = uniform) or each group's share of the items (target = items); listed items without a category are left out; NULL when none has one
-- cite: Sapiezynski, Zeng, Robertson, Mislove & Wilson, WWW 2019 (attention-weighted rank fairness); as TREC Fair Ranking 2021/2022 computes it (Ekstrand, McDonald, Raj & Johnson, TREC 2021 overview: 1 − Jensen–Shannon divergence, scipy's natural log)
SELECT
    user_id,
    CASE WHEN SUM(CASE WHEN row() THEN 1 ELSE 0 END) > 0
         THEN 1 - 0.5 * SUM(CASE WHEN row() THEN q_share * LN(2 * q_share / (q_share + t()))
                                                + t() * LN(2 * t() / (q_share + t())) END)
                - 0.5 * LN(2) * (1 - SUM(CASE WHEN row() THEN t() END))
    END AS awrf
FROM ranked
GROUP BY user_id
