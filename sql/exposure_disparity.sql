-- name: exposure_disparity
-- family: fairness
-- k: required
-- population: global
-- params: weight enum(log, geometric, uniform) = log; patience number in (0, 1) = 0.5; target enum(items, merit) = items; combine enum(min_max_ratio, max_min_ratio, max_min_diff, max_abs_dev, mean_abs_dev, l2, variance) = min_max_ratio
-- needs: category
-- stage: attention_groups
-- let: group_row = src = 15 AND cut = $k AND weight_kind = $weight AND weight_patience = CASE WHEN $weight = 'geometric' THEN $patience ELSE 0 END; group_v = CASE WHEN group_row() THEN CASE WHEN $target = 'merit' THEN group_attention / NULLIF(group_merit, 0) ELSE group_exposure END END; group_v_mean = CASE WHEN group_row() THEN CASE WHEN $target = 'merit' THEN group_merit_mean ELSE group_mean END END
-- range: [0, 1] if combine = min_max_ratio; [1, inf) if combine = max_min_ratio; [0, inf)
-- formula: the groups' exposure compared: a position r of a top k gives its item the attention w(r) = 1/log2(r + 1) (weight = log, Singh & Joachims' exposure), (1 − patience)·patience^(r − 1) (weight = geometric, RBP's user) or 1 (weight = uniform: counts of listings); a group g (an items category, over every item of the items input) gets v_g = A_g / n_g (target = items: attention per item of the group, A_g = Σ of w over every listing of its items in every user's top k, n_g = its items) or v_g = A_g / M_g (target = merit: attention per relevant listing, M_g = its items' listings relevant in truth); the groups' v combined by combine: min_max_ratio min v / max v (1 = parity, 0 = a group never shown), max_min_ratio max/min, max_min_diff max − min, max_abs_dev max |v − mean v|, mean_abs_dev mean |v − mean v|, l2 √Σ v², variance mean (v − mean v)²; listed items without a category are left out; NULL for a ratio of a zero, and with target = merit when a group has no relevant listing
-- cite: Singh & Joachims, KDD 2018 (fairness of exposure); Sapiezynski, Zeng, Robertson, Mislove & Wilson, WWW 2019 (attention-weighted rank fairness: geometric attention); as FairRankTune's EXP, AWRF and EXPU compute them (Raj & Ekstrand, SIGIR 2022)
SELECT
    user_id,
    CASE WHEN $target = 'merit' AND SUM(CASE WHEN group_row() AND group_merit = 0 THEN 1 ELSE 0 END) > 0 THEN NULL
         WHEN $combine = 'min_max_ratio' THEN MIN(group_v()) / NULLIF(MAX(group_v()), 0)
         WHEN $combine = 'max_min_ratio' THEN MAX(group_v()) / NULLIF(MIN(group_v()), 0)
         WHEN $combine = 'max_min_diff' THEN MAX(group_v()) - MIN(group_v())
         WHEN $combine = 'max_abs_dev' THEN MAX(ABS(group_v() - group_v_mean()))
         WHEN $combine = 'mean_abs_dev' THEN AVG(ABS(group_v() - group_v_mean()))
         WHEN $combine = 'l2' THEN SQRT(SUM(group_v() * group_v()))
         ELSE AVG((group_v() - group_v_mean()) * (group_v() - group_v_mean()))
    END AS exposure_disparity
FROM ranked
GROUP BY user_id
