-- name: gini
-- family: coverage
-- k: required
-- population: global
-- stage: exposure; catalog
-- range: [0, 1]
-- formula: Gini@k = Σ_j (2j − m − 1)·c_(j) / (m·Σc) over the m catalog items, c_i = users whose top k holds item i (0 included), sorted ascending; computed from the shown items only: the m − s unshown ones come first with c = 0, so a shown item of rank r among the s shown sits at j = m − s + r; NULL when nothing of the catalog is shown
-- cite: Fleder & Hosanagar, Management Science 2009; Adomavicius & Kwon, IEEE TKDE 2012
SELECT
    user_id,
    CAST(2 * ranked_exposure() + (n_catalog() - 2 * shown_items() - 1) * total_exposure() AS DOUBLE)
        / NULLIF(n_catalog() * total_exposure(), 0) AS gini
FROM ranked
GROUP BY user_id
