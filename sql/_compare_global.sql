-- The global metrics of recsql.compare (README, "Comparing runs") whose template reads the exposure sums only (coverage,
-- gini, personalization): each one number per run computed from item exposure counts, resampled by weighting each
-- user's list and randomized by swapping a user's lists between two runs. (The other global metrics are recomputed
-- from weighted lists by their own templates: sql/_compare_weighted.sql.)
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
--   Interval and test (sql/_compare_global_tests.sql): the stat_b of a run, or stat_b(run) − stat_b(baseline) for a
--   pair, through sql/_compare_interval.sql. Randomization, per pair and resample b: a user whose sign s (stream 2) is
--   −1 swaps its lists between the two runs (side 1 holds the run's lists of the users with s = +1 and the baseline's
--   of those with s = −1, side 2 the others; every weight 1); flipped_b = stat(side 1) − stat(side 2);
--   extreme = #{b : |flipped_b| ≥ |stat(run) − stat(baseline)| − $tolerance·(|stat(run)| + |stat(baseline)|)}
--   (a resample whose statistic is undefined on a side is not extreme); p = (1 + extreme) / ($resamples + 1).
--   n: the users with a list in the run (a pair: in either run).
--   How it is counted, in one line of CTEs (engines that plan a CTE anew at each read, Spark, ClickHouse,
--   DataFusion and MariaDB, run the statement in steps, each CTE read more than once computed once:
--   recsql/comparison_run.py; cmp_global_cells is read three times, for a run's own counts and for each side of
--   its pairs'; cmp_global_rows three times, for the cells, the pairs' items and a pair's users): each list row
--   joins the draws (resample 0: every weight 1, the observed value) and is grouped per
--   (item, run, resample): the item's C, D, count N and count among users with s = +1 (P). Each user's list adds
--   one more row, to a "users" item of its lists (user_row = 1, numbered after its real items), whose C and D are
--   W and W2; so the users' sums come out of the same grouping with no columns of their own (each aggregate of
--   that grouping, over |rows|·($resamples + 1) rows, costs about a tenth of the statement). The grouping is on
--   one integer, the cell (item·runs + run)·($resamples + 1) + resample (items numbered by one DENSE_RANK, each
--   lists' users item after its real items; runs: the largest run + 1), decoded after (exact on every engine while
--   the keys stay below 2^53, which is unchecked: the largest, (items + lists)·runs·($resamples + 1), is about 10^12
--   for 10^6 items, 100 runs and 10,000 resamples);
--   grouping on one column is about twice as fast as on three. The item's lists, in_catalog and
--   user_row, and the constant runs, follow from the cell, so they are grouped on too, which is
--   cheaper than aggregating them.
--   A run's own counts are its bootstrap (side 3: C and D, resample 0 the observed value). For resamples b > 0 each
--   pair (cmp_global_owners: its run and its baseline) takes, per item shown by either of its runs and resample, the
--   count each run gives side 1 (the pair's run: P; its baseline: N − P) and their N, looked up by cell (a missing
--   cell counts 0), summed into side 1's count and the total, side 2's count being the total minus side 1's (weights
--   1, so D = C). Looking the two cells up costs about half the CPU of grouping the two runs' cells per (pair, item,
--   resample), which hardly reduces rows (10.9M rows into 8.6M groups on the benchmark of docs/performance.md; the
--   statement 6.0 s against 4.1 s). A pair's observed and bootstrap values (sides 3 and 4) are its runs' own, read
--   through cmp_global_readers. Σ_r r·C_(r)
--   is summed per level of C: the n items with C = c after `below` items with a smaller C hold the ranks
--   below + 1..below + n, so they add c·(n·below + n(n + 1)/2) (integers, the same sum as numbering every item).
--   The global metrics with one cutoff (`lists`, within a segment) share their counts. MariaDB computes two
--   windows of different partitions in one SELECT wrongly, so cmp_global_rows has one window per SELECT; and it
--   computes MAX() OVER () in time quadratic in the rows (25 s for one such window over 36,000 rows; this step
--   had three), so runs come from an aggregate of cmp_runs and the users' items from the DENSE_RANK, not from a
--   maximum over every row.
-- cite: Poisson bootstrap: Hanley & MacGibbon 2006; weighted U-statistics (pairs weighted w_u·w_v, u ≠ v):
--   Janssen, "Weighted bootstrapping of U-statistics", Journal of Statistical Planning and Inference 38(1), 1994;
--   randomization by swapping a unit's treatments: Fisher 1935, §21; Smucker, Allan & Carterette, CIKM 2007.
--
-- Inputs: cmp_lists(run, user_idx, lists, item_id, in_catalog) (a user's top k at one cutoff of the global metrics,
-- within one segment: `lists`), cmp_global_metrics(metric, lists, slot, n_catalog) (slot: the metric's position
-- among those asked), cmp_draws, cmp_resamples, cmp_users, cmp_runs, cmp_global_pairs and cmp_global_owners
-- (sql/_compare_global_pairs.sql). Output: cmp_global_counted(run, baseline, metric, resample, side, stat, w1) (side
-- 3: a run's own value, w1 its users with a list; sides 1 and 2: a pair's swapped lists) and
-- cmp_global_counted_users(run, baseline, metric, n) (a pair's users with a list in either run), which
-- sql/_compare_global_tests.sql turns into the tests.
WITH
cmp_global_rows AS (
    SELECT r.run AS run, r.lists AS lists, r.user_idx AS user_idx, r.user_row AS user_row, r.in_catalog AS in_catalog,
        CAST(DENSE_RANK() OVER (ORDER BY r.lists, r.user_row, r.item_id) AS BIGINT) AS item, n.runs AS runs
    FROM (
        SELECT l.run AS run, l.lists AS lists, l.user_idx AS user_idx, k.user_row AS user_row,
            CAST(CASE WHEN k.user_row = 1 THEN 0 ELSE l.in_catalog END AS BIGINT) AS in_catalog,
            CASE WHEN k.user_row = 1 THEN NULL ELSE l.item_id END AS item_id
        FROM (
            SELECT run, lists, user_idx, in_catalog, item_id,
                ROW_NUMBER() OVER (PARTITION BY run, lists, user_idx ORDER BY item_id) AS opens
            FROM cmp_lists
        ) AS l
        CROSS JOIN (SELECT 0 AS user_row UNION ALL SELECT 1 AS user_row) AS k
        WHERE k.user_row = 0 OR l.opens = 1
    ) AS r
    CROSS JOIN (SELECT CAST(MAX(run) + 1 AS BIGINT) AS runs FROM cmp_runs) AS n
),
cmp_global_draws AS (
    SELECT resample, user_idx, w, s FROM cmp_draws
    UNION ALL
    SELECT CAST(0 AS BIGINT) AS resample, user_idx, CAST(1 AS BIGINT) AS w, CAST(1 AS BIGINT) AS s FROM cmp_users
),
cmp_global_cells AS (
    SELECT CAST((r.item * r.runs + r.run) * ($resamples + 1) + d.resample AS BIGINT) AS cell,
        r.runs AS runs, r.lists AS lists, r.in_catalog AS in_catalog, r.user_row AS user_row,
        CAST(COUNT(*) AS BIGINT) AS n, CAST(SUM(d.w) AS BIGINT) AS c, CAST(SUM(d.w * d.w) AS BIGINT) AS d,
        CAST(SUM(CASE WHEN d.s = 1 THEN 1 ELSE 0 END) AS BIGINT) AS plus
    FROM cmp_global_rows AS r
    JOIN cmp_global_draws AS d ON r.user_idx = d.user_idx
    GROUP BY CAST((r.item * r.runs + r.run) * ($resamples + 1) + d.resample AS BIGINT), r.runs, r.lists,
        r.in_catalog, r.user_row
),
cmp_global_drawn AS (
    SELECT x.resample AS resample, x.rest % x.runs AS run, CAST((x.rest - x.rest % x.runs) / x.runs AS BIGINT) AS item,
        x.lists AS lists, x.in_catalog AS in_catalog, x.user_row AS user_row, x.n AS n, x.c AS c,
        x.d AS d, x.plus AS plus
    FROM (
        SELECT cell % ($resamples + 1) AS resample,
            CAST((cell - cell % ($resamples + 1)) / ($resamples + 1) AS BIGINT) AS rest,
            runs, lists, in_catalog, user_row, n, c, d, plus
        FROM cmp_global_cells
    ) AS x
),
cmp_global_share_items AS (
    SELECT o.run AS run, o.baseline AS baseline, g.item AS item, g.runs AS runs, g.lists AS lists,
        g.in_catalog AS in_catalog, g.user_row AS user_row
    FROM cmp_global_rows AS g
    JOIN cmp_global_owners AS o ON g.run = o.owner
    GROUP BY o.run, o.baseline, g.item, g.runs, g.lists, g.in_catalog, g.user_row
),
cmp_global_share_cells AS (
    SELECT b.resample AS resample, k.run AS run, k.baseline AS baseline, k.lists AS lists,
        k.in_catalog AS in_catalog, k.user_row AS user_row,
        CAST(COALESCE(x.plus, 0) + COALESCE(y.n - y.plus, 0) AS BIGINT) AS side1,
        CAST(COALESCE(x.n, 0) + COALESCE(y.n, 0) AS BIGINT) AS total
    FROM cmp_global_share_items AS k
    CROSS JOIN cmp_resamples AS b
    LEFT JOIN cmp_global_cells AS x
        ON x.cell = CAST((k.item * k.runs + k.run) * ($resamples + 1) + b.resample AS BIGINT)
    LEFT JOIN cmp_global_cells AS y
        ON y.cell = CAST((k.item * k.runs + k.baseline) * ($resamples + 1) + b.resample AS BIGINT)
),
cmp_global_counts AS (
    SELECT run, CAST(0 AS BIGINT) AS baseline, lists, resample, 3 AS side, in_catalog, user_row, c, d
    FROM cmp_global_drawn
    UNION ALL
    SELECT x.run AS run, x.baseline AS baseline, x.lists AS lists, x.resample AS resample,
        k.side AS side, x.in_catalog AS in_catalog, x.user_row AS user_row,
        CASE WHEN k.side = 1 THEN x.side1 ELSE x.total - x.side1 END AS c,
        CASE WHEN k.side = 1 THEN x.side1 ELSE x.total - x.side1 END AS d
    FROM cmp_global_share_cells AS x
    CROSS JOIN (SELECT 1 AS side UNION ALL SELECT 2 AS side) AS k
),
cmp_global_levels AS (
    SELECT run, baseline, lists, resample, side, in_catalog, user_row, c,
        CAST(COUNT(*) AS BIGINT) AS n, CAST(SUM(d) AS BIGINT) AS d
    FROM cmp_global_counts
    WHERE c > 0
    GROUP BY run, baseline, lists, resample, side, in_catalog, user_row, c
),
cmp_global_ranked AS (
    SELECT run, baseline, lists, resample, side, in_catalog, user_row, c, n, d,
        CAST(SUM(n) OVER (PARTITION BY run, baseline, lists, resample, side, in_catalog, user_row ORDER BY c
                          ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - n AS BIGINT) AS below
    FROM cmp_global_levels
),
cmp_global_sums AS (
    SELECT run, baseline, lists, resample, side,
        CAST(SUM(in_catalog * n) AS BIGINT) AS shown_items,
        CAST(SUM(in_catalog * n * c) AS BIGINT) AS total_exposure,
        CAST(SUM(in_catalog * c * (n * below + CAST(n * (n + 1) / 2 AS BIGINT))) AS BIGINT) AS ranked_exposure,
        CAST(SUM((1 - user_row) * (n * c * c - d)) AS BIGINT) AS shared_pairs,
        CAST(SUM(user_row * n * c) AS BIGINT) AS list_users, CAST(SUM(user_row * d) AS BIGINT) AS list_users_squared
    FROM cmp_global_ranked
    GROUP BY run, baseline, lists, resample, side
),
cmp_global_terms AS (
    SELECT s.run AS run, s.baseline AS baseline, m.metric AS metric, s.resample AS resample, s.side AS side,
        m.slot AS slot, s.shown_items AS shown_items, s.total_exposure AS total_exposure,
        s.ranked_exposure AS ranked_exposure, s.shared_pairs AS shared_pairs, s.list_users AS list_users,
        CAST(s.list_users * s.list_users - s.list_users_squared AS BIGINT) AS user_pairs, m.n_catalog AS n_catalog
    FROM cmp_global_sums AS s
    JOIN cmp_global_metrics AS m ON s.lists = m.lists
),
cmp_global_counted AS (
    SELECT run, baseline, metric, resample, side, $stat AS stat, list_users AS w1
    FROM cmp_global_terms
),
cmp_global_counted_users AS (
    SELECT p.run AS run, p.baseline AS baseline, m.metric AS metric, CAST(COUNT(DISTINCT u.user_idx) AS BIGINT) AS n
    FROM cmp_global_pairs AS p
    CROSS JOIN cmp_global_metrics AS m
    JOIN cmp_global_rows AS u ON u.lists = m.lists AND u.user_row = 1 AND (u.run = p.run OR u.run = p.baseline)
    GROUP BY p.run, p.baseline, m.metric
)
SELECT * FROM cmp_global_counted
