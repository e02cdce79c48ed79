-- The global metrics of recsql.compare (README, "Comparing runs"): each one number per run computed from item exposure
-- counts, resampled by weighting each user's list and randomized by swapping a user's lists between two runs.
--
-- formula: a user u with a list L_u (its top k) in a run has the weight w_u: 1 for the observed value, the Poisson(1)
--   weight of sql/_compare_draws.sql for resample b (shared by every run, so a pair's resample is paired).
--   Per item i: C_i = Σ_{u : i ∈ L_u} w_u (weighted exposure), D_i = Σ_{u : i ∈ L_u} w_u²; W = Σ_u w_u and
--   W2 = Σ_u w_u² over the users with a list. From them the exposure sums of sql/_exposure.sql (shown_items,
--   total_exposure, ranked_exposure, shared_pairs, list_users, user_pairs, n_catalog), the columns of
--   cmp_global_terms; each metric's value is its own template's expression over those sums ($stat: recsql puts in
--   `CASE slot WHEN i THEN <the expression of sql/<metric>.sql> END`, recsql/comparison_global.py), so a formula
--   is written once, in the metric's file, and evaluate and compare differ only in how they count. Pairs of users
--   are weighted w_u·w_v (u ≠ v): Σ_{u≠v} w_u·w_v·#(L_u ∩ L_v) = Σ_i (C_i² − D_i) and Σ_{u≠v} w_u·w_v = W² − W2.
--   Every sum is of integers, so exact on every engine.
--   Interval: the stat_b of a run, or stat_b(run) − stat_b(baseline) for a pair, through sql/_compare_interval.sql.
--   Randomization, per pair and resample b: a user whose sign s (stream 2) is −1 swaps its lists between the two
--   runs (side 1 holds the run's lists of the users with s = +1 and the baseline's of those with s = −1, side 2
--   the others; every weight 1); flipped_b = stat(side 1) − stat(side 2);
--   extreme = #{b : |flipped_b| ≥ |stat(run) − stat(baseline)| − $tolerance·(|stat(run)| + |stat(baseline)|)}
--   (a resample whose statistic is undefined on a side is not extreme); p = (1 + extreme) / ($resamples + 1).
--   n: the users with a list in the run (a pair: in either run).
--   How it is counted: one pass joins each run's lists with the draws and groups them per (run, lists, item,
--   resample): the item's weighted count C and D (the bootstrap, side 3) and its count among the users with
--   s = +1 (P); its count N (every user is in every draw) is the observed one. A pair's sides follow per item
--   without reading the users again: side 1 = P_run + (N_baseline − P_baseline), side 2 = (N_run + N_baseline)
--   − side 1. Both groupings are on one integer, a cell number entry·($resamples + 1) + resample (entry: the
--   (run, lists, item) or (pair, item) numbered from 1), decoded after (integers below 2^53, exact on every
--   engine); grouping on one column is about twice as fast as on four. The global metrics with one cutoff
--   (`lists`, within a segment) share their counts. A run's bootstrap groups are read by the run's own unit
--   (side 3) and by every pair it is in (side 3 for the run, 4 for the baseline). Σ_r r·C_(r) is summed per
--   level of C: the n items with C = c after `below` items with a smaller C hold the ranks below + 1..below + n,
--   so they add c·(n·below + n(n + 1)/2) (integers, the same sum as numbering every item).
-- cite: Poisson bootstrap: Hanley & MacGibbon 2006; weighted U-statistics (pairs weighted w_u·w_v, u ≠ v):
--   Janssen, "Weighted bootstrapping of U-statistics", Journal of Statistical Planning and Inference 38(1), 1994;
--   randomization by swapping a unit's treatments: Fisher 1935, §21; Smucker, Allan & Carterette, CIKM 2007.
--
-- Inputs: cmp_lists(run, user_idx, lists, item_id, in_catalog) (a user's top k at one cutoff of the global metrics,
-- within one segment: `lists`), cmp_global_metrics(metric, lists, slot, n_catalog) (slot: the metric's position
-- among those asked), cmp_draws,
-- cmp_runs, cmp_baselines. Output: cmp_global_observed(run, baseline, metric, n, mean, extreme),
-- cmp_global_bootstrap(run, baseline, metric, resample, stat).
WITH
cmp_list_users AS (
    SELECT DISTINCT run, lists, user_idx FROM cmp_lists
),
cmp_global_pairs AS (
    SELECT a.run AS run, b.run AS baseline, m.metric AS metric
    FROM cmp_runs AS a
    CROSS JOIN cmp_baselines AS b
    CROSS JOIN cmp_global_metrics AS m
    WHERE a.run <> b.run AND (b.every = 0 OR a.run > b.run)
),
cmp_global_owners AS (
    SELECT p.run AS run, p.baseline AS baseline, p.metric AS metric,
        CASE WHEN k.role = 1 THEN p.run ELSE p.baseline END AS owner
    FROM cmp_global_pairs AS p CROSS JOIN (SELECT 1 AS role UNION ALL SELECT 2 AS role) AS k
),
cmp_global_list_pairs AS (
    SELECT run, baseline, lists, CAST(ROW_NUMBER() OVER (ORDER BY run, baseline, lists) AS BIGINT) AS pair
    FROM (
        SELECT DISTINCT p.run AS run, p.baseline AS baseline, m.lists AS lists
        FROM cmp_global_pairs AS p
        JOIN cmp_global_metrics AS m ON p.metric = m.metric
    ) AS p
),
cmp_global_list_owners AS (
    SELECT p.run AS run, p.baseline AS baseline, p.lists AS lists, p.pair AS pair,
        CASE WHEN k.role = 1 THEN p.run ELSE p.baseline END AS owner
    FROM cmp_global_list_pairs AS p CROSS JOIN (SELECT 1 AS role UNION ALL SELECT 2 AS role) AS k
),
cmp_global_items AS (
    SELECT lists, item_id, in_catalog, CAST(ROW_NUMBER() OVER (ORDER BY lists, item_id) AS BIGINT) AS item
    FROM (SELECT lists, item_id, MAX(in_catalog) AS in_catalog FROM cmp_lists GROUP BY lists, item_id) AS i
),
cmp_global_item_count AS (
    SELECT CAST(COUNT(*) + 1 AS BIGINT) AS items FROM cmp_global_items
),
cmp_global_entries AS (
    SELECT run, lists, item_id, MAX(in_catalog) AS in_catalog, CAST(COUNT(*) AS BIGINT) AS n
    FROM cmp_lists
    GROUP BY run, lists, item_id
),
cmp_global_numbered AS (
    SELECT e.run AS run, e.lists AS lists, e.item_id AS item_id, e.in_catalog AS in_catalog, e.n AS n,
        i.item AS item, CAST(ROW_NUMBER() OVER (ORDER BY e.run, e.lists, e.item_id) AS BIGINT) AS entry
    FROM cmp_global_entries AS e
    JOIN cmp_global_items AS i ON e.lists = i.lists AND e.item_id = i.item_id
),
cmp_global_list_entries AS (
    SELECT l.user_idx AS user_idx, e.entry AS entry
    FROM cmp_lists AS l
    JOIN cmp_global_numbered AS e ON l.run = e.run AND l.lists = e.lists AND l.item_id = e.item_id
),
cmp_global_cells AS (
    SELECT CAST(l.entry * ($resamples + 1) + d.resample AS BIGINT) AS cell,
        CAST(SUM(d.w) AS BIGINT) AS c, CAST(SUM(d.w * d.w) AS BIGINT) AS d,
        CAST(SUM(CASE WHEN d.s = 1 THEN 1 ELSE 0 END) AS BIGINT) AS plus
    FROM cmp_global_list_entries AS l
    JOIN cmp_draws AS d ON l.user_idx = d.user_idx
    GROUP BY CAST(l.entry * ($resamples + 1) + d.resample AS BIGINT)
),
cmp_global_drawn AS (
    SELECT e.run AS run, e.lists AS lists, x.resample AS resample, e.item AS item, e.in_catalog AS in_catalog,
        x.c AS c, x.d AS d, x.plus AS plus, e.n AS n
    FROM (
        SELECT cell % ($resamples + 1) AS resample,
            CAST((cell - cell % ($resamples + 1)) / ($resamples + 1) AS BIGINT) AS entry, c, d, plus
        FROM cmp_global_cells
    ) AS x
    JOIN cmp_global_numbered AS e ON x.entry = e.entry
),
cmp_global_users_drawn AS (
    SELECT u.run AS run, u.lists AS lists, d.resample AS resample,
        CAST(SUM(d.w) AS BIGINT) AS w1, CAST(SUM(d.w * d.w) AS BIGINT) AS w2,
        CAST(SUM(CASE WHEN d.s = 1 THEN 1 ELSE 0 END) AS BIGINT) AS plus, CAST(COUNT(*) AS BIGINT) AS n
    FROM cmp_list_users AS u
    JOIN cmp_draws AS d ON u.user_idx = d.user_idx
    GROUP BY u.run, u.lists, d.resample
),
cmp_global_swap_cells AS (
    SELECT CAST((o.pair * z.items + g.item) * ($resamples + 1) + g.resample AS BIGINT) AS cell,
        CAST(SUM(CASE WHEN o.owner = o.run THEN g.plus ELSE g.n - g.plus END) AS BIGINT) AS c1,
        CAST(SUM(g.n) AS BIGINT) AS total
    FROM cmp_global_list_owners AS o
    JOIN cmp_global_drawn AS g ON g.run = o.owner AND g.lists = o.lists
    CROSS JOIN cmp_global_item_count AS z
    GROUP BY CAST((o.pair * z.items + g.item) * ($resamples + 1) + g.resample AS BIGINT)
),
cmp_global_swapped AS (
    SELECT p.run AS run, p.baseline AS baseline, p.lists AS lists, x.resample AS resample,
        i.in_catalog AS in_catalog, x.c1 AS c1, x.total AS total
    FROM (
        SELECT y.resample AS resample, CAST((y.rest - y.rest % z.items) / z.items AS BIGINT) AS pair,
            y.rest % z.items AS item, y.c1 AS c1, y.total AS total
        FROM (
            SELECT cell % ($resamples + 1) AS resample,
                CAST((cell - cell % ($resamples + 1)) / ($resamples + 1) AS BIGINT) AS rest, c1, total
            FROM cmp_global_swap_cells
        ) AS y
        CROSS JOIN cmp_global_item_count AS z
    ) AS x
    JOIN cmp_global_list_pairs AS p ON x.pair = p.pair
    JOIN cmp_global_items AS i ON x.item = i.item
),
cmp_global_counts AS (
    SELECT run, CAST(0 AS BIGINT) AS baseline, lists, CAST(0 AS BIGINT) AS resample, CAST(3 AS BIGINT) AS side,
        in_catalog, n AS c, n AS d
    FROM cmp_global_entries
    UNION ALL
    SELECT run, CAST(0 AS BIGINT) AS baseline, lists, resample, CAST(3 AS BIGINT) AS side, in_catalog, c, d
    FROM cmp_global_drawn
    WHERE c > 0
    UNION ALL
    SELECT run, baseline, lists, resample, CAST(1 AS BIGINT) AS side, in_catalog, c1 AS c, c1 AS d
    FROM cmp_global_swapped
    WHERE c1 > 0
    UNION ALL
    SELECT run, baseline, lists, resample, CAST(2 AS BIGINT) AS side, in_catalog, total - c1 AS c, total - c1 AS d
    FROM cmp_global_swapped
    WHERE total - c1 > 0
),
cmp_global_levels AS (
    SELECT run, baseline, lists, resample, side, in_catalog, c,
        CAST(COUNT(*) AS BIGINT) AS n, CAST(SUM(d) AS BIGINT) AS d
    FROM cmp_global_counts
    GROUP BY run, baseline, lists, resample, side, in_catalog, c
),
cmp_global_ranked AS (
    SELECT run, baseline, lists, resample, side, in_catalog, c, n, d,
        CAST(SUM(n) OVER (PARTITION BY run, baseline, lists, resample, side, in_catalog ORDER BY c
                          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - n AS BIGINT) AS below
    FROM cmp_global_levels
),
cmp_global_item_sums AS (
    SELECT run, baseline, lists, resample, side,
        CAST(SUM(in_catalog * n) AS BIGINT) AS shown_items,
        CAST(SUM(in_catalog * n * c) AS BIGINT) AS total_exposure,
        CAST(SUM(in_catalog * c * (n * below + CAST(n * (n + 1) / 2 AS BIGINT))) AS BIGINT) AS ranked_exposure,
        CAST(SUM(n * c * c - d) AS BIGINT) AS shared_pairs
    FROM cmp_global_ranked
    GROUP BY run, baseline, lists, resample, side
),
cmp_global_user_swaps AS (
    SELECT o.run AS run, o.baseline AS baseline, o.lists AS lists, g.resample AS resample,
        CAST(SUM(CASE WHEN o.owner = o.run THEN g.plus ELSE g.n - g.plus END) AS BIGINT) AS w1,
        CAST(SUM(g.n) AS BIGINT) AS total
    FROM cmp_global_list_owners AS o
    JOIN cmp_global_users_drawn AS g ON g.run = o.owner AND g.lists = o.lists
    GROUP BY o.run, o.baseline, o.lists, g.resample
),
cmp_global_user_sums AS (
    SELECT run, CAST(0 AS BIGINT) AS baseline, lists, CAST(0 AS BIGINT) AS resample, CAST(3 AS BIGINT) AS side,
        CAST(COUNT(*) AS BIGINT) AS w1, CAST(COUNT(*) AS BIGINT) AS w2
    FROM cmp_list_users
    GROUP BY run, lists
    UNION ALL
    SELECT run, CAST(0 AS BIGINT) AS baseline, lists, resample, CAST(3 AS BIGINT) AS side, w1, w2
    FROM cmp_global_users_drawn
    WHERE w1 > 0
    UNION ALL
    SELECT run, baseline, lists, resample, CAST(1 AS BIGINT) AS side, w1, w1 AS w2
    FROM cmp_global_user_swaps
    WHERE w1 > 0
    UNION ALL
    SELECT run, baseline, lists, resample, CAST(2 AS BIGINT) AS side, total - w1 AS w1, total - w1 AS w2
    FROM cmp_global_user_swaps
    WHERE total - w1 > 0
),
cmp_global_terms AS (
    SELECT s.run AS run, s.baseline AS baseline, m.metric AS metric, s.resample AS resample, s.side AS side,
        m.slot AS slot, s.shown_items AS shown_items, s.total_exposure AS total_exposure,
        s.ranked_exposure AS ranked_exposure, s.shared_pairs AS shared_pairs, u.w1 AS list_users,
        CAST(u.w1 * u.w1 - u.w2 AS BIGINT) AS user_pairs, m.n_catalog AS n_catalog
    FROM cmp_global_item_sums AS s
    JOIN cmp_global_user_sums AS u ON s.run = u.run AND s.baseline = u.baseline AND s.lists = u.lists
        AND s.resample = u.resample AND s.side = u.side
    JOIN cmp_global_metrics AS m ON s.lists = m.lists
),
cmp_global_group_stats AS (
    SELECT run, baseline, metric, resample, side, $stat AS stat, list_users AS w1
    FROM cmp_global_terms
),
cmp_global_stats AS (
    SELECT run, baseline, metric, resample, side, stat, w1 FROM cmp_global_group_stats
    UNION ALL
    SELECT o.run AS run, o.baseline AS baseline, o.metric AS metric, s.resample AS resample,
        CASE WHEN o.owner = o.run THEN 3 ELSE 4 END AS side, s.stat AS stat, s.w1 AS w1
    FROM cmp_global_owners AS o
    JOIN cmp_global_group_stats AS s ON s.side = 3 AND s.run = o.owner AND s.metric = o.metric
),
cmp_global_sides AS (
    SELECT run, baseline, metric, resample,
        MAX(CASE WHEN side = 3 THEN stat END) AS run_stat,
        MAX(CASE WHEN side = 4 THEN stat END) AS baseline_stat,
        MAX(CASE WHEN side = 1 THEN stat END) - MAX(CASE WHEN side = 2 THEN stat END) AS flipped,
        MAX(CASE WHEN side = 3 THEN w1 END) AS run_users
    FROM cmp_global_stats
    GROUP BY run, baseline, metric, resample
),
cmp_global_resampled AS (
    SELECT run, baseline, metric, resample, flipped, run_users,
        CASE WHEN baseline = 0 THEN run_stat ELSE run_stat - baseline_stat END AS stat,
        MAX(CASE WHEN resample = 0 THEN run_stat END) OVER (PARTITION BY run, baseline, metric) AS run_observed,
        MAX(CASE WHEN resample = 0 THEN baseline_stat END) OVER (PARTITION BY run, baseline, metric) AS baseline_observed
    FROM cmp_global_sides
),
cmp_global_bootstrap AS (
    SELECT run, baseline, metric, resample, stat FROM cmp_global_resampled WHERE resample > 0 AND stat IS NOT NULL
),
cmp_global_tested AS (
    SELECT run, baseline, metric,
        MAX(CASE WHEN resample = 0 THEN stat END) AS mean,
        MAX(CASE WHEN resample = 0 THEN run_users END) AS run_users,
        CASE WHEN MAX(run_observed) IS NULL OR MAX(baseline_observed) IS NULL THEN NULL ELSE
            CAST(SUM(CASE WHEN resample > 0 AND ABS(flipped) >= ABS(run_observed - baseline_observed)
                               - $tolerance * (ABS(run_observed) + ABS(baseline_observed)) THEN 1 ELSE 0 END)
                 AS BIGINT) END AS extreme
    FROM cmp_global_resampled
    GROUP BY run, baseline, metric
),
cmp_global_pair_users AS (
    SELECT p.run AS run, p.baseline AS baseline, p.metric AS metric, CAST(COUNT(DISTINCT u.user_idx) AS BIGINT) AS n
    FROM cmp_global_pairs AS p
    JOIN cmp_global_metrics AS m ON m.metric = p.metric
    JOIN cmp_list_users AS u ON u.lists = m.lists AND (u.run = p.run OR u.run = p.baseline)
    GROUP BY p.run, p.baseline, p.metric
),
cmp_global_observed AS (
    SELECT t.run AS run, t.baseline AS baseline, t.metric AS metric,
        CAST(COALESCE(p.n, t.run_users) AS BIGINT) AS n, t.mean AS mean, t.extreme AS extreme
    FROM cmp_global_tested AS t
    LEFT JOIN cmp_global_pair_users AS p ON t.run = p.run AND t.baseline = p.baseline AND t.metric = p.metric
)
SELECT * FROM cmp_global_observed
