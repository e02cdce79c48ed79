-- The exposure sums: the words a global metric (one number per run, `population: global`) is written in.
--
-- A global metric's template (sql/coverage.sql, sql/gini.sql, sql/personalization.sql) computes its value from
-- these sums only, each called like a function without arguments (`shown_items()`), with its options and `$k`.
-- The sums are defined twice, once per way of counting, and the metric's expression once:
--   evaluate: here, as aggregates over the ranked stage's exposure rows (src 5: one row per item shown in a
--     run's top `cut`, `exposure` = the number of users whose top k holds it, sql/_ranked.sql); every user
--     counts once (weight 1);
--   compare: the columns of the same names of cmp_global_sums (sql/_compare_global.sql), the same sums over
--     weighted item counts, each user's list counted w_u times (the bootstrap's Poisson weights; 1 in the
--     observed value and the randomization's sides).
-- recsql/compose/exposure.py substitutes one or the other into a metric's expression; a global metric whose
-- expression reads anything else (a column of `ranked`, an aggregate of its own) is evaluated but not resampled,
-- and recsql.compare refuses it with that reason.
--
-- With a weight w_u per user u with a list L_u (its top k): C_i = Σ_{u : i ∈ L_u} w_u, D_i = Σ_{u : i ∈ L_u} w_u²;
-- C_(r) the shown catalog items' C in ascending order (r = 1..s); W = Σ_u w_u, W2 = Σ_u w_u².
--   shown_items()     s = #{catalog items with C_i > 0}
--   total_exposure()  Σ_i C_i over the catalog items
--   ranked_exposure() Σ_{r=1..s} r·C_(r)
--   shared_pairs()    Σ_i (C_i² − D_i) over every shown item = Σ_{u≠v} w_u·w_v·#(L_u ∩ L_v)
--   list_users()      W
--   user_pairs()      W² − W2 = Σ_{u≠v} w_u·w_v (every w = 1: U(U − 1))
--   n_catalog()       m = #catalog
-- Every sum is of integers, so exact on every engine; a metric divides them in DOUBLE.
SELECT
    SUM(CASE WHEN src = 5 AND cut = $k AND in_catalog = 1 THEN 1 ELSE 0 END) AS shown_items,
    SUM(CASE WHEN src = 5 AND cut = $k AND in_catalog = 1 THEN exposure ELSE 0 END) AS total_exposure,
    SUM(CASE WHEN src = 5 AND cut = $k AND in_catalog = 1 THEN exposure_rank * exposure ELSE 0 END) AS ranked_exposure,
    SUM(CASE WHEN src = 5 AND cut = $k THEN exposure * (exposure - 1) ELSE 0 END) AS shared_pairs,
    SUM(CASE WHEN src = 5 AND cut = $k THEN list_users ELSE 0 END) AS list_users,
    SUM(CASE WHEN src = 5 AND cut = $k THEN list_users ELSE 0 END)
        * (SUM(CASE WHEN src = 5 AND cut = $k THEN list_users ELSE 0 END) - 1) AS user_pairs,
    MAX(n_catalog) AS n_catalog
FROM ranked
