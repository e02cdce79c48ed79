-- name: coverage
-- family: coverage
-- k: required
-- population: global
-- stage: exposure; catalog
-- range: [0, 1]
-- formula: coverage@k = #(catalog items in any user's top k) / #catalog; catalog = the catalog input, else the items input, else every item of truth and recs; NULL for an empty catalog or a run without recommendations
-- cite: Ge, Delgado-Battenfeld & Jannach, RecSys 2010 (catalog coverage); Adomavicius & Kwon, IEEE TKDE 2012 (aggregate diversity)
SELECT
    user_id,
    CAST(shown_items() AS DOUBLE) / NULLIF(n_catalog(), 0) AS coverage
FROM ranked
GROUP BY user_id
