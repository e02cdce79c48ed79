-- name: exposure_entropy
-- family: fairness
-- k: required
-- population: global
-- params: weight enum(log, geometric, uniform) = geometric; patience number in (0, 1) = 0.85; base enum(e, 2) = e
-- stage: attention; catalog
-- let: item_row = src = 14 AND cut = $k AND weight_kind = $weight AND weight_patience = CASE WHEN $weight = 'geometric' THEN $patience ELSE 0 END AND in_catalog = 1 AND attention > 0
-- range: [0, inf)
-- formula: H@k = −Σ_i p_i · log p_i over the catalog items, p_i = a_i / Σ a, a_i = item i's attention Σ_u w(its rank in u's top k), w(r) = 1/log2(r + 1) (weight = log), (1 − patience)·patience^(r − 1) (weight = geometric) or 1 (weight = uniform: the shares of recommendations); computed as ln Σa − Σ a·ln a / Σa; natural log (base = e) or log2 (base = 2); 0 = one item gets every exposure, ln m = every catalog item the same; NULL when nothing of the catalog is shown
-- cite: Shannon, Bell System Technical Journal 27, 1948; as the entropy of recommendation exposure across the catalog, Adomavicius & Kwon, IEEE TKDE 2012 (entropy-based aggregate diversity) and Ekstrand et al., Fairness in Information Access Systems, 2022
SELECT
    user_id,
    (LN(SUM(CASE WHEN item_row() THEN attention END))
     - SUM(CASE WHEN item_row() THEN attention * LN(attention) END) / SUM(CASE WHEN item_row() THEN attention END))
    / CASE WHEN $base = '2' THEN LN(2) ELSE 1 END AS exposure_entropy
FROM ranked
GROUP BY user_id
