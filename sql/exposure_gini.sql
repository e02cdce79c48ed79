-- name: exposure_gini
-- family: fairness
-- k: required
-- population: global
-- params: weight enum(log, geometric, uniform) = geometric; patience number in (0, 1) = 0.85; over enum(items, groups) = items
-- needs: category if over = groups
-- stage: attention if over = items; catalog if over = items; popularity if over = items; attention_groups if over = groups
-- let: item_row = src = 14 AND cut = $k AND weight_kind = $weight AND weight_patience = CASE WHEN $weight = 'geometric' THEN $patience ELSE 0 END AND in_catalog = 1 AND attention > 0; group_row = src = 15 AND cut = $k AND weight_kind = $weight AND weight_patience = CASE WHEN $weight = 'geometric' THEN $patience ELSE 0 END
-- range: [0, 1]
-- formula: Gini@k = Σ_j (2j − m − 1)·a_(j) / (m·Σ a) over the m catalog items (over = items), a_i = item i's attention Σ_u w(its rank in u's top k), sorted ascending (0 for an item no top k holds: those come first), w(r) = 1/log2(r + 1) (weight = log), (1 − patience)·patience^(r − 1) (weight = geometric) or 1 (weight = uniform: the gini metric); over = groups: the same over the G groups (items categories) of their attention per item A_g / n_g; 0 = equal exposure, (m − 1)/m = one item gets it all; NULL when nothing is shown
-- cite: Fleder & Hosanagar, Management Science 2009 (Gini of sales); position-weighted as LensKit's exposure Gini (Ekstrand et al., Fairness in Information Access Systems, 2022, §5); Singh & Joachims, KDD 2018 (exposure)
SELECT
    user_id,
    CASE WHEN $over = 'groups'
         THEN (2 * SUM(CASE WHEN group_row() THEN group_rank * group_exposure END)
               - (SUM(CASE WHEN group_row() THEN 1 END) + 1) * SUM(CASE WHEN group_row() THEN group_exposure END))
              / NULLIF(SUM(CASE WHEN group_row() THEN 1 END) * SUM(CASE WHEN group_row() THEN group_exposure END), 0)
         ELSE (2 * SUM(CASE WHEN item_row() THEN attention_rank * attention END)
               + (MAX(n_catalog) - 2 * SUM(CASE WHEN item_row() THEN 1 END) - 1) * SUM(CASE WHEN item_row() THEN attention END))
              / NULLIF(MAX(n_catalog) * SUM(CASE WHEN item_row() THEN attention END), 0)
    END AS exposure_gini
FROM ranked
GROUP BY user_id
