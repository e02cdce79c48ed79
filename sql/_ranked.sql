-- The shared ranked-rows stage (SPEC §2): the only SQL in recsql with window functions.
--
-- Inputs are bound by recsql/sources.py as three relations with internal column names:
--   recs_in(run_keys, user_id, item_id, ord)   ord: smaller is better (-score, or the rank column)
--   truth_in(run_keys?, user_id, item_id, relevance)
--   items_in(item_id, price)
-- `run_keys` stands for the run key columns (_run0, _run1, ...); the composer expands it, or
-- removes it when the recommendations carry no run keys. Shared truth is copied to every run.
--
-- Output: `ranked`, one row per
--   src 1  list position: rank 1..k of the user's list, judged against truth
--   src 2  truth item: ideal_rank = position in the truth order (relevance desc, item_id asc)
--   src 3  list item in its re-sorted order for cutoff `cut` (feature list_ideal, ideal = list)
--   src 4  ideal slot 1..k of gain 1 (feature slots, ideal = k_slots)
-- with columns rank, ideal_rank, cut, item_id, relevance (NULL = unjudged),
-- hit (relevance >= threshold), gain = max(relevance, 0) (unjudged: 0; with $gain_rule = 'relevant'
-- also 0 below the threshold, as ranx drops those judgments), gain_exp = 2^gain - 1,
-- hits_cum (hits at positions <= rank), nonrel_cum (judged non-relevant items at positions <= rank),
-- n_rel (R: the user's relevant truth items), n_nonrel (the user's judged non-relevant truth items),
-- n_truth (the user's truth rows), price.
-- With ties = "average" (list_judged replaced by sql/_ties_average.sql), a list row's hit, gain and
-- gain_exp are the means over its tie group (so hits_cum is not an integer there and the metrics
-- using it refuse that rule), and tie_miss is the factor of P(no hit in the top k) (hit_rate).
WITH
runs AS (
    SELECT DISTINCT run_keys FROM recs_in
),
truth_runs AS (
    SELECT runs.run_keys, t.user_id, t.item_id, t.relevance
    FROM truth_in AS t CROSS JOIN runs
),
truth_users AS (
    SELECT run_keys, user_id,
        CAST(SUM(CASE WHEN relevance >= $threshold THEN 1 ELSE 0 END) AS BIGINT) AS n_rel,
        CAST(SUM(CASE WHEN relevance < $threshold THEN 1 ELSE 0 END) AS BIGINT) AS n_nonrel,
        CAST(COUNT(*) AS BIGINT) AS n_truth
    FROM truth_runs
    GROUP BY run_keys, user_id
),
list_ranked AS (
    SELECT run_keys, user_id, item_id, ord,
        CAST(ROW_NUMBER() OVER (PARTITION BY run_keys, user_id ORDER BY ord ASC, item_id ASC) AS BIGINT) AS rank
    FROM recs_in
),
list_judged AS (
    SELECT l.run_keys, l.user_id, l.item_id, l.rank, t.relevance,
        CASE WHEN t.relevance >= $threshold THEN 1 ELSE 0 END AS hit,
        CAST(NULL AS DOUBLE) AS tie_gain, CAST(NULL AS DOUBLE) AS tie_gain_exp, CAST(NULL AS DOUBLE) AS tie_miss
    FROM list_ranked AS l
    LEFT JOIN truth_runs AS t
        ON l.run_keys = t.run_keys AND l.user_id = t.user_id AND l.item_id = t.item_id
    WHERE $max_k IS NULL OR l.rank <= $max_k
),
list_rows AS (
    SELECT run_keys, user_id, item_id, rank, relevance, hit, tie_gain, tie_gain_exp, tie_miss,
        CAST(SUM(hit) OVER (PARTITION BY run_keys, user_id ORDER BY rank
                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS hits_cum,
        CAST(SUM(CASE WHEN relevance < $threshold THEN 1 ELSE 0 END)
             OVER (PARTITION BY run_keys, user_id ORDER BY rank
                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS nonrel_cum
    FROM list_judged
),
truth_rows AS (
    SELECT run_keys, user_id, item_id, relevance,
        CASE WHEN relevance >= $threshold THEN 1 ELSE 0 END AS hit,
        CAST(ROW_NUMBER() OVER (PARTITION BY run_keys, user_id ORDER BY relevance DESC, item_id ASC) AS BIGINT) AS ideal_rank
    FROM truth_runs
),
list_ideal_cuts AS (
    SELECT k FROM cutoffs
),
list_ideal AS (
    SELECT l.run_keys, l.user_id, l.item_id, l.relevance, l.hit, CAST(c.k AS BIGINT) AS cut,
        CAST(ROW_NUMBER() OVER (PARTITION BY l.run_keys, l.user_id, c.k
                                ORDER BY COALESCE(l.relevance, 0) DESC, l.rank ASC) AS BIGINT) AS ideal_rank
    FROM list_rows AS l JOIN list_ideal_cuts AS c ON l.rank <= c.k
),
digits AS (
    SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
    UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9
),
slot_positions AS (
    SELECT 1 + a.d + 10 * b.d + 100 * c.d + 1000 * e.d AS pos
    FROM digits AS a CROSS JOIN digits AS b CROSS JOIN digits AS c CROSS JOIN digits AS e
),
slots AS (
    SELECT u.run_keys, u.user_id, CAST(p.pos AS BIGINT) AS ideal_rank
    FROM truth_users AS u CROSS JOIN slot_positions AS p
    WHERE p.pos <= $max_slot_k
),
stacked AS (
    SELECT run_keys, user_id, 1 AS src, rank, CAST(NULL AS BIGINT) AS ideal_rank,
        CAST(NULL AS BIGINT) AS cut, item_id, relevance, hit, hits_cum, nonrel_cum,
        tie_gain, tie_gain_exp, tie_miss
    FROM list_rows
    UNION ALL
    SELECT run_keys, user_id, 2 AS src, CAST(NULL AS BIGINT) AS rank, ideal_rank,
        CAST(NULL AS BIGINT) AS cut, item_id, relevance, hit, CAST(NULL AS BIGINT) AS hits_cum,
        CAST(NULL AS BIGINT) AS nonrel_cum,
        CAST(NULL AS DOUBLE) AS tie_gain, CAST(NULL AS DOUBLE) AS tie_gain_exp, CAST(NULL AS DOUBLE) AS tie_miss
    FROM truth_rows
    UNION ALL
    SELECT run_keys, user_id, 3 AS src, CAST(NULL AS BIGINT) AS rank, ideal_rank,
        cut, item_id, relevance, hit, CAST(NULL AS BIGINT) AS hits_cum, CAST(NULL AS BIGINT) AS nonrel_cum,
        CAST(NULL AS DOUBLE) AS tie_gain, CAST(NULL AS DOUBLE) AS tie_gain_exp, CAST(NULL AS DOUBLE) AS tie_miss
    FROM list_ideal
    UNION ALL
    SELECT run_keys, user_id, 4 AS src, CAST(NULL AS BIGINT) AS rank, ideal_rank,
        CAST(NULL AS BIGINT) AS cut, NULL AS item_id, CAST(1 AS DOUBLE) AS relevance, 1 AS hit,
        CAST(NULL AS BIGINT) AS hits_cum, CAST(NULL AS BIGINT) AS nonrel_cum,
        CAST(NULL AS DOUBLE) AS tie_gain, CAST(NULL AS DOUBLE) AS tie_gain_exp, CAST(NULL AS DOUBLE) AS tie_miss
    FROM slots
),
ranked AS (
    SELECT s.run_keys, s.user_id, s.src, s.rank, s.ideal_rank, s.cut, s.item_id,
        s.relevance, s.hit, s.hits_cum, s.nonrel_cum,
        CASE WHEN $ties = 'average' AND s.src = 1 THEN s.tie_gain
             WHEN s.relevance > 0 AND ($gain_rule = 'all' OR s.relevance >= $threshold) THEN CAST(s.relevance AS DOUBLE) ELSE CAST(0 AS DOUBLE) END AS gain,
        CASE WHEN $ties = 'average' AND s.src = 1 THEN s.tie_gain_exp
             WHEN s.relevance > 0 AND ($gain_rule = 'all' OR s.relevance >= $threshold) THEN POWER(2, CAST(s.relevance AS DOUBLE)) - 1 ELSE CAST(0 AS DOUBLE) END AS gain_exp,
        s.tie_miss,
        COALESCE(u.n_rel, 0) AS n_rel, COALESCE(u.n_nonrel, 0) AS n_nonrel, COALESCE(u.n_truth, 0) AS n_truth,
        CAST(i.price AS DOUBLE) AS price
    FROM stacked AS s
    LEFT JOIN truth_users AS u ON s.run_keys = u.run_keys AND s.user_id = u.user_id
    LEFT JOIN items_in AS i ON s.item_id = i.item_id
)
SELECT run_keys, user_id, src, rank, ideal_rank, cut, item_id, relevance, hit, hits_cum, nonrel_cum, gain,
    gain_exp, tie_miss, n_rel, n_nonrel, n_truth, price
FROM ranked
