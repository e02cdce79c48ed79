-- The shared ranked-rows stage (README, "How a list is scored"): the only SQL in recsql with window functions.
--
-- Inputs are bound by recsql/sources.py as three relations with internal column names:
--   recs_in(run_keys, user_id, item_id, ord[, list_weight])   ord: smaller is better (-score, or the rank
--                                              column); list_weight: the weight of the user's list in its
--                                              run (recsql.compare's resamples; without it every list weighs
--                                              1, and the composer writes 1 in its place)
--   truth_in(run_keys?, user_id, item_id, relevance)
--   items_in(item_id, price, probability, category, head)   head: the item's head flag (1 head, 0 tail: the
--                                              long-tail metrics' split = items; NULL when no metric reads it)
--   interactions_in(user_id, item_id, weight)  training interactions (popularity, novelty); weight: the
--                                              interaction's in a user's history (NULL: unweighted)
--   catalog_in(item_id)                        the catalog (coverage, gini)
--   expected_in(user_id, item_id, ord)         another recommender's lists (unexpectedness, serendipity)
--   features_in(item_id, feature, value)       item feature vectors as rows (diversity by features)
--   intents_in(user_id, item_id, intent, relevance)  judgments per intent (intent-aware metrics)
--   logs_in(user_id, item_id, position, propensity, reward, slate_propensity, cascade_propensity)  logged
--                                              impressions (off-policy estimators; the slate's joint and
--                                              cascade propensities NULL unless given: slate estimators)
--   reward_model_in(user_id, item_id, reward)  a reward model's predictions (dm, dr, switch_dr)
-- `run_keys` stands for the run key columns (_run0, _run1, ...); the composer expands it, or
-- removes it when the recommendations carry no run keys. The lists are judged against truth as it
-- is (truth_judged, once per user when truth is shared by the runs); shared truth is copied to every
-- run only where its counts or rows are per run (truth_runs, truth_rows).
--
-- Output: `ranked`, one row per
--   src 0  truth user whose every truth row is unjudged (negative under $negative_unjudged = 'yes'):
--          counted in the population as trec_eval -c counts such a qrels query, with no relevant or
--          judged item (n_truth > 0, n_rel = n_nonrel = 0); no metric reads it. Kept only then
--   src 1  list position: rank 1..k of the user's list, judged against truth
--   src 2  truth item: ideal_rank = position in the truth order (relevance desc, item_id asc),
--          numbered once per truth user (truth_ordered) and copied to every run: shared truth is
--          not sorted again for each run. Only the first $ideal_max_k positions are kept when no
--          metric reads further (every metric has a cutoff, and none reads every truth row: stage
--          feature truth_rows); on DuckDB they come from a per-user heap (sql/_ideal_topk.duckdb.sql)
--   src 3  list item in its re-sorted order for cutoff `cut` (feature list_ideal, ideal = list)
--   src 4  ideal slot 1..k of gain 1 (feature slots, ideal = k_slots)
--   src 5  item exposure of a run at cutoff `cut`, user_id NULL: the run's one "global" group
--          (feature exposure: coverage, gini, personalization)
--   src 6  pair of judged list positions a < b (rank = b's position), feature pairs: kendall
--   src 7  judged list item within cutoff `cut` with its rank-correlation ranks (feature corr: spearman)
--   src 8  list position with its cascade terms for one (cascade_kind, cascade_grade) (feature cascade)
--   src 10 depth d = 1..l of a user's list and expected_recs' list, both cut at `cut` (feature agreement:
--          rbo): overlap X_d = #(items in both top d), short_n/long_n the shorter/longer list's length
--          s/l, short_overlap X_s; only for users with both lists
--   src 11 category of a user's history or top `cut` (feature category_shares: miscalibration, entropy):
--          p_share = p(g|u) of interactions, q_share = q(g|u) of the list (positions weighted by
--          category_patience^(rank − 1)), for category_source 1 (the items' category) and 2 (item_features
--          as weighted categories)
--   src 14 item of a run's top `cut` lists, or seen in interactions, with its attention under one position
--          weight (feature attention: exposure_gini, exposure_entropy, lt_coverage), user_id NULL
--   src 15 group (items category) of a run's top `cut` lists with its attention per item and merit
--          under one position weight (feature attention_groups: exposure_disparity), user_id NULL
--   src 16 item seen in interactions or flagged head or tail in items, per run and cutoff, with the counts of
--          pop_rsp and pop_reo over the users with a list and truth (feature popularity_bias), user_id NULL
--   The rows of src 14, 15 and 16 count each user's list list_weight times (attention, merit, the users and
--   listings of popularity_bias): a run's weighted users, as recsql.compare's bootstrap draws them. Those of
--   src 5 count every list once (compare recounts them itself, sql/_compare_global.sql).
--   src 17 item of a user's sampled lists or relevant truth, per run (on its first sample), with its expected
--          exposure over the samples of the run (ee_exposure) and its target exposure (ee_target) under one user
--          model (feature expected_exposure: ee_d, ee_r, ee_l)
--   src 12 list position relevant to an intent of intents (feature intents: alpha_ndcg, err_ia, ...):
--          intent_prior = its positions above relevant to that intent, intent_rel = the intent's
--          relevant items; n_intents (every row of a user of intents) = the intents with one; and src 19,
--          one row per (run, user of intents) with no other column, so that a user of intents without a
--          list in a run is in its per-user rows (scored 0 under the populations that hold them)
--   src 13 depth 1..$intent_max_k per user with a list and intents and alpha asked (feature
--          intent_depths): the normalisers' positions, ideal_gain the greedy ideal's gain there
--   src 18 logged impression of logs, per run, user_id NULL (feature logs: the off-policy estimators): the
--          target's probability of the logged item at the logged position under target = list and
--          target = scores, the logging propensity and reward, the reward model's predictions (log_*);
--          for the slate estimators (feature log_slates; the slate is the context's logged rows) the slate's
--          first row, the list's probability of the whole slate and of its positions up to this one, and
--          per logged position the number of rows and the sums of their independent and cascade weights
--          (log_position_*: the self-normalized slate estimators); for pbm_ips (feature log_pbm) the list's
--          position of the logged item, the logged position, the slate's depth and the positions' estimated
--          examination (log_exam_*)
--   src 20 a list's top `cut` summed for its intra-list diversity by category (feature category_spread): the
--          ordered pairs of items with a category (spread_pairs) and of two items of one category (spread_same)
--   src 21 the same by feature vectors (feature feature_spread): the items with a non-zero vector
--          (spread_items), Σ_f S_f² (spread_square) and Σ_i Σ_f u_if² (spread_self), u_i = x_i/‖x_i‖ and
--          S_f = Σ_i u_if, so that the pairs' cosines sum to (spread_square − spread_self)/2
--   src 9  list position under a second tie rule and reading of negative judgments: for the metrics
--          a convention computes as another part of its tool does (ir_measures' RR@k and Judged@k,
--          recsql/conventions.py); their templates' `src = 1` is read as `src = 9`. Kept only then.
-- The composer pads each UNION ALL branch with typed NULLs for the columns other branches define,
-- and drops the branches, joins and columns of features nobody asked for.
-- with columns rank, ideal_rank, cut, item_id, relevance (NULL = unjudged),
-- hit (relevance >= threshold), gain = max(relevance, 0) (unjudged: 0; with $gain_rule = 'relevant'
-- also 0 below the threshold, as ranx drops those judgments), gain_exp = 2^gain - 1,
-- hits_cum (hits at positions <= rank), nonrel_cum (judged non-relevant items at positions <= rank),
-- n_rel (R: the user's relevant truth items), n_nonrel (the user's judged non-relevant truth items),
-- n_truth (the user's truth rows, unjudged ones included), price; from interactions n_seen (users who
-- saw the item), pop_rank (1 = the most seen, ties by item id), seen_before (the interactions of the
-- items ranked before it: the short head's running share) and seen_total (every interaction); from items
-- in_head (the item's head flag, 1 head, 0 tail) and n_tail (the items flagged tail: feature tail_items).
-- With ties = "average" (list_judged replaced by sql/_ties_average.sql), a list row's hit, gain and
-- gain_exp are the means over its tie group (so hits_cum is not an integer there and the metrics
-- using it refuse that rule), and tie_miss is the factor of P(no hit in the top k) (hit_rate).
-- Ties: `ORDER BY ord ASC, item_id ASC` is the composer's to set: item_id descending, or the id's
-- text compared bytewise (trec_eval's strcmp) under conventions whose tool compares ids as text.
-- $negative_unjudged = 'yes' (trec_eval): truth rows with relevance < 0 are in the pool but
-- unjudged, and are dropped before anything else reads truth but the count of each user's truth
-- rows (truth_users.n_truth: a user judged only with negative values is still a qrels query).
WITH
runs AS (
    SELECT DISTINCT run_keys FROM recs_in
),
truth_judged AS (
    SELECT t.run_keys, t.user_id, t.item_id, t.relevance
    FROM truth_in AS t
    WHERE $negative_unjudged = 'no' OR t.relevance >= 0
),
truth_runs AS (
    SELECT runs.run_keys, t.user_id, t.item_id, t.relevance
    FROM truth_in AS t CROSS JOIN runs
),
truth_users AS (
    SELECT run_keys, user_id,
        CAST(SUM(CASE WHEN relevance >= $threshold AND ($negative_unjudged = 'no' OR relevance >= 0)
                      THEN 1 ELSE 0 END) AS BIGINT) AS n_rel,
        CAST(SUM(CASE WHEN relevance < $threshold AND ($negative_unjudged = 'no' OR relevance >= 0)
                      THEN 1 ELSE 0 END) AS BIGINT) AS n_nonrel,
        CAST(COUNT(*) AS BIGINT) AS n_truth
    FROM truth_runs
    GROUP BY run_keys, user_id
),
unjudged_users AS (
    SELECT run_keys, user_id
    FROM truth_users
    WHERE n_rel + n_nonrel = 0
),
list_ranked AS (
    SELECT run_keys, user_id, item_id, ord, list_weight AS list_weight,
        CAST(ROW_NUMBER() OVER (PARTITION BY run_keys, user_id ORDER BY ord ASC, item_id ASC) AS BIGINT) AS rank
    FROM recs_in
),
list_judged AS (
    SELECT l.run_keys, l.user_id, l.item_id, l.rank, l.ord, l.list_weight AS list_weight, t.relevance,
        CASE WHEN t.relevance >= $threshold THEN 1 ELSE 0 END AS hit,
        CAST(NULL AS DOUBLE) AS tie_gain, CAST(NULL AS DOUBLE) AS tie_gain_exp, CAST(NULL AS DOUBLE) AS tie_miss
    FROM list_ranked AS l
    LEFT JOIN truth_judged AS t
        ON l.run_keys = t.run_keys AND l.user_id = t.user_id AND l.item_id = t.item_id
    WHERE $max_k IS NULL OR l.rank <= $max_k
),
list_rows AS (
    SELECT run_keys, user_id, item_id, rank, list_weight AS list_weight, relevance, hit, tie_gain, tie_gain_exp, tie_miss,
        CAST(MIN(rank) OVER (PARTITION BY run_keys, user_id, ord) AS BIGINT) AS tie_first,
        CAST(MAX(rank) OVER (PARTITION BY run_keys, user_id, ord) AS BIGINT) AS tie_last,
        CAST(SUM(hit) OVER (PARTITION BY run_keys, user_id ORDER BY rank
                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS hits_cum,
        CAST(SUM(CASE WHEN relevance < $threshold THEN 1 ELSE 0 END)
             OVER (PARTITION BY run_keys, user_id ORDER BY rank
                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS nonrel_cum
    FROM list_judged
),
second_truth AS (
    SELECT t.run_keys, t.user_id, t.item_id, t.relevance
    FROM truth_in AS t
    WHERE $second_negative_unjudged = 'no' OR t.relevance >= 0
),
second_ranked AS (
    SELECT run_keys, user_id, item_id,
        CAST(ROW_NUMBER() OVER (PARTITION BY run_keys, user_id ORDER BY ord ASC, item_id ASC) AS BIGINT) AS rank
    FROM recs_in
),
second_judged AS (
    SELECT l.run_keys, l.user_id, l.item_id, l.rank, t.relevance,
        CASE WHEN t.relevance >= $threshold THEN 1 ELSE 0 END AS hit
    FROM second_ranked AS l
    LEFT JOIN second_truth AS t
        ON l.run_keys = t.run_keys AND l.user_id = t.user_id AND l.item_id = t.item_id
    WHERE $second_max_k IS NULL OR l.rank <= $second_max_k
),
second_rows AS (
    SELECT run_keys, user_id, item_id, rank, relevance, hit,
        CAST(SUM(hit) OVER (PARTITION BY run_keys, user_id ORDER BY rank
                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS hits_cum,
        CAST(SUM(CASE WHEN relevance < $threshold THEN 1 ELSE 0 END)
             OVER (PARTITION BY run_keys, user_id ORDER BY rank
                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS nonrel_cum
    FROM second_judged
),
truth_ordered AS (
    SELECT t.run_keys, t.user_id, t.item_id, t.relevance,
        CAST(ROW_NUMBER() OVER (PARTITION BY t.run_keys, t.user_id ORDER BY t.relevance DESC, t.item_id ASC) AS BIGINT) AS ideal_rank
    FROM truth_in AS t
    WHERE $negative_unjudged = 'no' OR t.relevance >= 0
),
truth_rows AS (
    SELECT runs.run_keys, t.user_id, t.item_id, t.relevance,
        CASE WHEN t.relevance >= $threshold THEN 1 ELSE 0 END AS hit, t.ideal_rank
    FROM truth_ordered AS t CROSS JOIN runs
    WHERE $ideal_max_k IS NULL OR t.ideal_rank <= $ideal_max_k
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
item_ordered AS (
    SELECT item_id, n_seen,
        CAST(ROW_NUMBER() OVER (ORDER BY n_seen DESC, item_id ASC) AS BIGINT) AS pop_rank,
        CAST(SUM(n_seen) OVER (ORDER BY n_seen DESC, item_id ASC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
             - n_seen AS BIGINT) AS seen_before,
        CAST(SUM(n_seen) OVER () AS BIGINT) AS seen_total
    FROM (
        SELECT item_id, CAST(COUNT(DISTINCT user_id) AS BIGINT) AS n_seen
        FROM interactions_in
        GROUP BY item_id
    ) AS seen
),
item_popularity AS (
    -- item_ordered has one row per item already; grouped by the item all the same, which tells SQLite the
    -- item is a key: it then indexes the join of every ranked row with this table (a window's output it
    -- scans in full for each ranked row: 30 s instead of 1 s for aclt@100 at MovieLens-100K scale)
    SELECT item_id, MAX(n_seen) AS n_seen, MAX(pop_rank) AS pop_rank, MAX(seen_before) AS seen_before,
        MAX(seen_total) AS seen_total
    FROM item_ordered
    GROUP BY item_id
),
interaction_users AS (
    SELECT CAST(COUNT(DISTINCT user_id) AS BIGINT) AS u_seen FROM interactions_in
),
tail_items AS (
    -- the items flagged tail (head = 0) in items: the long tail's size under split = items (lt_coverage)
    SELECT CAST(COUNT(DISTINCT item_id) AS BIGINT) AS n_tail FROM items_in WHERE head = 0
),
catalog_items AS (
    SELECT DISTINCT item_id FROM catalog_in
),
catalog_size AS (
    SELECT CAST(COUNT(*) AS BIGINT) AS n_catalog FROM catalog_items
),
truth_max AS (
    SELECT CAST(MAX(relevance) AS DOUBLE) AS max_grade FROM truth_in
    WHERE $negative_unjudged = 'no' OR relevance >= 0
),
expected_ranked AS (
    SELECT user_id, item_id,
        CAST(ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ord ASC, item_id ASC) AS BIGINT) AS expected_rank
    FROM expected_in
),
expected_lengths AS (
    SELECT user_id, CAST(COUNT(*) AS BIGINT) AS expected_n FROM expected_in GROUP BY user_id
),
exposure_cuts AS (
    SELECT k FROM cutoffs
),
exposure_counts AS (
    SELECT l.run_keys, CAST(c.k AS BIGINT) AS cut, l.item_id,
        CAST(COUNT(*) AS BIGINT) AS exposure,
        CAST(SUM(CASE WHEN l.rank = 1 THEN 1 ELSE 0 END) AS BIGINT) AS list_users,
        -- a NULL of the user id's own type (an untyped NULL would become text in some engines)
        MAX(CASE WHEN l.rank < 0 THEN l.user_id END) AS no_user
    FROM list_rows AS l JOIN exposure_cuts AS c ON l.rank <= c.k
    GROUP BY l.run_keys, c.k, l.item_id
),
exposure_rows AS (
    SELECT e.run_keys, e.no_user AS user_id, 5 AS src, e.cut, e.item_id, e.exposure, e.list_users,
        CASE WHEN g.item_id IS NULL THEN 0 ELSE 1 END AS in_catalog,
        CAST(ROW_NUMBER() OVER (PARTITION BY e.run_keys, e.cut, CASE WHEN g.item_id IS NULL THEN 0 ELSE 1 END
                                ORDER BY e.exposure ASC, e.item_id ASC) AS BIGINT) AS exposure_rank
    FROM exposure_counts AS e LEFT JOIN catalog_items AS g ON e.item_id = g.item_id
),
attention_params AS (
    -- (position weight, patience, cutoff) of each exposure metric asked: kind 'log' (w(r) = 1/log2(r + 1)),
    -- 'geometric' (w(r) = (1 − patience)·patience^(r − 1)) or 'uniform' (w = 1), patience 0 but for
    -- 'geometric'; set by recsql/compose/stage.py
    SELECT kind, patience, k FROM attention_keys
),
attention_listed AS (
    -- per run, weight and cutoff, each listed item's attention Σ_u w(its rank in u's top k) and merit
    -- (its relevant listings: Σ_u hit)
    SELECT l.run_keys, p.kind AS weight_kind, CAST(p.patience AS DOUBLE) AS weight_patience, CAST(p.k AS BIGINT) AS cut,
        l.item_id,
        SUM(l.list_weight * CASE WHEN p.kind = 'log' THEN LN(2) / LN(l.rank + 1)
                 WHEN p.kind = 'geometric' THEN (1 - p.patience) * POWER(p.patience, l.rank - 1)
                 ELSE 1 END) AS attention,
        CAST(SUM(l.list_weight * l.hit) AS DOUBLE) AS merit,
        MAX(CASE WHEN l.rank < 0 THEN l.user_id END) AS no_user
    FROM list_rows AS l JOIN attention_params AS p ON l.rank <= p.k
    GROUP BY l.run_keys, p.kind, p.patience, p.k, l.item_id
),
attention_runs AS (
    SELECT run_keys, weight_kind, weight_patience, cut, MAX(no_user) AS no_user
    FROM attention_listed
    GROUP BY run_keys, weight_kind, weight_patience, cut
),
attention_items AS (
    -- the listed items, and the items seen in interactions but never listed (attention 0)
    SELECT run_keys, weight_kind, weight_patience, cut, item_id, attention, merit, no_user
    FROM attention_listed
    UNION ALL
    SELECT r.run_keys, r.weight_kind, r.weight_patience, r.cut, s.item_id, CAST(0 AS DOUBLE) AS attention,
        CAST(0 AS DOUBLE) AS merit, r.no_user
    FROM attention_runs AS r
    CROSS JOIN item_popularity AS s
    LEFT JOIN attention_listed AS a
        ON r.run_keys = a.run_keys AND r.weight_kind = a.weight_kind AND r.weight_patience = a.weight_patience
       AND r.cut = a.cut AND s.item_id = a.item_id
    WHERE a.item_id IS NULL
),
attention_rows AS (
    -- attention_rank: the item's place in ascending attention among the catalog's listed items
    SELECT a.run_keys, a.no_user AS user_id, 14 AS src, a.cut, a.item_id, a.weight_kind, a.weight_patience,
        a.attention, a.merit, a.in_catalog,
        CAST(ROW_NUMBER() OVER (PARTITION BY a.run_keys, a.weight_kind, a.weight_patience, a.cut, a.in_catalog, a.listed
                                ORDER BY a.attention ASC, a.item_id ASC) AS BIGINT) AS attention_rank
    FROM (
        SELECT i.run_keys, i.no_user, i.cut, i.item_id, i.weight_kind, i.weight_patience, i.attention, i.merit,
            CASE WHEN g.item_id IS NULL THEN 0 ELSE 1 END AS in_catalog,
            CASE WHEN i.attention > 0 THEN 1 ELSE 0 END AS listed
        FROM attention_items AS i LEFT JOIN catalog_items AS g ON i.item_id = g.item_id
    ) AS a
),
attention_group_sizes AS (
    SELECT CAST(category AS VARCHAR) AS group_name, CAST(COUNT(DISTINCT item_id) AS BIGINT) AS group_items
    FROM items_in
    WHERE category IS NOT NULL
    GROUP BY CAST(category AS VARCHAR)
),
attention_group_sums AS (
    SELECT a.run_keys, a.weight_kind, a.weight_patience, a.cut, CAST(i.category AS VARCHAR) AS group_name,
        SUM(a.attention) AS attention, SUM(a.merit) AS merit
    FROM attention_listed AS a JOIN items_in AS i ON a.item_id = i.item_id
    WHERE i.category IS NOT NULL
    GROUP BY a.run_keys, a.weight_kind, a.weight_patience, a.cut, CAST(i.category AS VARCHAR)
),
attention_groups AS (
    -- every group (items category) per run, weight and cutoff: group_exposure = its attention per item of
    -- the group, group_merit = its merit; group_mean the mean of group_exposure over the groups,
    -- group_rank its place in ascending group_exposure
    SELECT g.run_keys, g.user_id, 15 AS src, g.cut, g.weight_kind, g.weight_patience, g.group_name,
        g.group_attention, g.group_exposure, g.group_merit,
        AVG(g.group_exposure) OVER (PARTITION BY g.run_keys, g.weight_kind, g.weight_patience, g.cut) AS group_mean,
        AVG(CASE WHEN g.group_merit > 0 THEN g.group_attention / g.group_merit END)
            OVER (PARTITION BY g.run_keys, g.weight_kind, g.weight_patience, g.cut) AS group_merit_mean,
        CAST(ROW_NUMBER() OVER (PARTITION BY g.run_keys, g.weight_kind, g.weight_patience, g.cut
                                ORDER BY g.group_exposure ASC, g.group_name ASC) AS BIGINT) AS group_rank
    FROM (
        SELECT r.run_keys, r.no_user AS user_id, r.cut, r.weight_kind, r.weight_patience, z.group_name,
            COALESCE(s.attention, 0) AS group_attention,
            COALESCE(s.attention, 0) / z.group_items AS group_exposure,
            COALESCE(s.merit, 0) AS group_merit
        FROM attention_runs AS r
        CROSS JOIN attention_group_sizes AS z
        LEFT JOIN attention_group_sums AS s
            ON r.run_keys = s.run_keys AND r.weight_kind = s.weight_kind AND r.weight_patience = s.weight_patience
           AND r.cut = s.cut AND z.group_name = s.group_name
    ) AS g
),
bias_cuts AS (
    SELECT k FROM cutoffs
),
bias_users AS (
    -- per run, the users with a list and truth (Elliot's users with test data)
    SELECT u.run_keys, u.user_id, l.list_weight AS list_weight
    FROM truth_users AS u JOIN list_rows AS l ON u.run_keys = l.run_keys AND u.user_id = l.user_id
    WHERE l.rank = 1
),
bias_runs AS (
    SELECT b.run_keys, CAST(c.k AS BIGINT) AS cut, CAST(SUM(b.list_weight) AS BIGINT) AS n_users,
        MAX(CASE WHEN c.k < 0 THEN b.user_id END) AS no_user
    FROM bias_users AS b CROSS JOIN bias_cuts AS c
    GROUP BY b.run_keys, c.k
),
bias_history AS (
    SELECT DISTINCT user_id, item_id FROM interactions_in
),
bias_seen AS (
    -- per run and item: its users of bias_users who interacted with it
    SELECT b.run_keys, h.item_id, CAST(SUM(b.list_weight) AS BIGINT) AS trained
    FROM bias_users AS b JOIN bias_history AS h ON b.user_id = h.user_id
    GROUP BY b.run_keys, h.item_id
),
bias_relevant AS (
    -- per run and item: its users of bias_users for whom it is relevant in truth and not in interactions
    SELECT b.run_keys, t.item_id, CAST(SUM(b.list_weight) AS BIGINT) AS relevant_unseen
    FROM bias_users AS b
    JOIN truth_judged AS t ON b.run_keys = t.run_keys AND b.user_id = t.user_id AND t.relevance >= $threshold
    LEFT JOIN bias_history AS h ON t.user_id = h.user_id AND t.item_id = h.item_id
    WHERE h.item_id IS NULL
    GROUP BY b.run_keys, t.item_id
),
bias_listed AS (
    -- per run, cutoff and item: its users of bias_users whose top k holds it, and of them those for whom
    -- it is relevant (a user without truth has no relevant item)
    SELECT l.run_keys, CAST(c.k AS BIGINT) AS cut, l.item_id,
        CAST(SUM(CASE WHEN u.user_id IS NULL THEN 0 ELSE l.list_weight END) AS BIGINT) AS listed,
        SUM(l.list_weight * l.hit) AS listed_relevant
    FROM list_rows AS l
    JOIN bias_cuts AS c ON l.rank <= c.k
    LEFT JOIN truth_users AS u ON l.run_keys = u.run_keys AND l.user_id = u.user_id
    GROUP BY l.run_keys, c.k, l.item_id
),
bias_rows AS (
    -- every item seen in interactions, and every item flagged head or tail in items (split = items; NULL
    -- seen_before: in neither group of split = interactions), per run and cutoff (feature popularity_bias:
    -- pop_rsp, pop_reo)
    SELECT r.run_keys, r.no_user AS user_id, 16 AS src, r.cut, p.item_id,
        COALESCE(s.listed, 0) AS bias_listed, r.n_users - COALESCE(t.trained, 0) AS bias_unseen,
        COALESCE(s.listed_relevant, 0) AS bias_hits, COALESCE(v.relevant_unseen, 0) AS bias_relevant
    FROM bias_runs AS r
    CROSS JOIN (
        SELECT item_id FROM item_popularity
        UNION ALL
        SELECT h.item_id FROM items_in AS h LEFT JOIN item_popularity AS q ON h.item_id = q.item_id
        WHERE h.head IS NOT NULL AND q.item_id IS NULL
    ) AS p
    LEFT JOIN bias_listed AS s ON r.run_keys = s.run_keys AND r.cut = s.cut AND p.item_id = s.item_id
    LEFT JOIN bias_seen AS t ON r.run_keys = t.run_keys AND p.item_id = t.item_id
    LEFT JOIN bias_relevant AS v ON r.run_keys = v.run_keys AND p.item_id = v.item_id
),
ee_keys AS (
    -- (user model, patience, utility, cutoff) of each expected-exposure metric asked: model 'rbp' (the exposure of
    -- 0-based position i is patience^i) or 'gerr' (patience^i·(1 − utility)^(relevant items above)), utility 0 but
    -- for 'gerr'; set by recsql/compose/stage.py
    SELECT 'rbp' AS model, CAST(0.5 AS DOUBLE) AS patience, CAST(0 AS DOUBLE) AS utility, 1 AS k
),
ee_params AS (
    -- q: the factor from one position to the next of the ideal order, whose items above are all relevant
    SELECT model, patience, utility, k, CASE WHEN model = 'gerr' THEN patience * (1 - utility) ELSE patience END AS q
    FROM ee_keys
),
ee_samples AS (
    -- per stochastic run (run_keys here: its keys without the sample, recsql/compose/stage.py), its number of
    -- samples, and its first sample (sample_key: the sample's run key), whose rows carry the expected exposure
    SELECT run_keys, CAST(COUNT(*) AS DOUBLE) AS n_samples, MIN(sample_key) AS first_sample
    FROM runs
    GROUP BY run_keys
),
ee_listed AS (
    -- per stochastic run, user, item and model: the item's exposure summed over the samples' top k
    SELECT l.run_keys, l.user_id, l.item_id, p.model, p.patience, p.utility, p.k,
        SUM(POWER(p.patience, l.rank - 1)
            * CASE WHEN p.model = 'gerr' THEN POWER(1 - p.utility, l.hits_cum - l.hit) ELSE 1 END) AS exposure
    FROM list_rows AS l JOIN ee_params AS p ON l.rank <= p.k
    GROUP BY l.run_keys, l.user_id, l.item_id, p.model, p.patience, p.utility, p.k
),
ee_levels AS (
    -- each relevant truth item of a run's user (of its first sample): `above` items of a higher grade, `tied`
    -- items of its grade
    SELECT t.run_keys, t.user_id, t.item_id,
        CAST(RANK() OVER (PARTITION BY t.run_keys, t.user_id ORDER BY t.relevance DESC) - 1 AS DOUBLE) AS above,
        CAST(COUNT(*) OVER (PARTITION BY t.run_keys, t.user_id, t.relevance) AS DOUBLE) AS tied
    FROM truth_runs AS t
    JOIN ee_samples AS s ON t.run_keys = s.run_keys AND t.sample_key = s.first_sample
    WHERE t.relevance >= $threshold AND ($negative_unjudged = 'no' OR t.relevance >= 0)
),
ee_rows AS (
    -- each item's expected exposure ε (its exposure summed over the samples / their number) and target ε* (the
    -- mean exposure of the positions its grade holds in the ideal order, top k: Σ_{i=above}^{min(above + tied,
    -- k) − 1} q^i / tied, q = patience, or patience·(1 − utility) for 'gerr'), on the run's first sample alone
    -- (each per-user value of a sampled run is a mean over its samples, which skips the others' NULLs)
    SELECT e.run_keys, e.user_id, 17 AS src, e.k AS cut, e.item_id, e.model AS ee_model, e.patience AS ee_patience,
        e.utility AS ee_utility, SUM(e.exposure) AS ee_exposure, SUM(e.target) AS ee_target
    FROM (
        SELECT l.run_keys, s.first_sample AS sample_key, l.user_id, l.item_id, l.model, l.patience, l.utility, l.k,
            l.exposure / s.n_samples AS exposure, CAST(0 AS DOUBLE) AS target
        FROM ee_listed AS l
        JOIN ee_samples AS s ON l.run_keys = s.run_keys
        UNION ALL
        SELECT v.run_keys, v.user_id, v.item_id, p.model, p.patience, p.utility, p.k, CAST(0 AS DOUBLE) AS exposure,
            CASE WHEN v.above >= p.k THEN CAST(0 AS DOUBLE)
                 ELSE (POWER(p.q, v.above) - POWER(p.q, CASE WHEN v.above + v.tied < p.k THEN v.above + v.tied ELSE p.k END))
                      / (v.tied * (1 - p.q)) END AS target
        FROM ee_levels AS v
        CROSS JOIN ee_params AS p
    ) AS e
    GROUP BY e.run_keys, e.user_id, e.item_id, e.model, e.patience, e.utility, e.k
),
list_pairs AS (
    -- kendall's pairs: both items judged (a pair with an unjudged item has no sign, and counts nowhere)
    SELECT a.run_keys, a.user_id, b.rank, a.relevance AS relevance_a, b.relevance AS relevance_b
    FROM list_rows AS a
    JOIN list_rows AS b ON a.run_keys = b.run_keys AND a.user_id = b.user_id AND a.rank < b.rank
    WHERE b.rank <= $max_pair_k AND a.relevance IS NOT NULL AND b.relevance IS NOT NULL
),
pair_rows AS (
    SELECT p.run_keys, p.user_id, 6 AS src, p.rank,
        CASE WHEN p.relevance_a > p.relevance_b THEN CAST(1 AS BIGINT)
             WHEN p.relevance_a < p.relevance_b THEN CAST(-1 AS BIGINT) ELSE CAST(0 AS BIGINT) END AS pair_sign
    FROM list_pairs AS p
),
-- Intra-list diversity from per-list sums, not from its pairs (k(k − 1)/2 of them per list): the pairs of a
-- list's top `cut` whose items both have a category number m(m − 1)/2 (m: those items), and those of one
-- category Σ_c n_c(n_c − 1)/2; the cosines of the pairs whose items both have a feature vector of non-zero
-- norm sum to (Σ_f S_f² − Σ_i Σ_f u_if²)/2, u_i = x_i/‖x_i‖ and S_f = Σ_i u_if over those m items.
category_spread_cuts AS (
    SELECT k FROM cutoffs
),
category_spread_counts AS (
    SELECT l.run_keys, l.user_id, c.k AS cut, COUNT(*) AS n
    FROM list_rows AS l
    JOIN category_spread_cuts AS c ON l.rank <= c.k
    JOIN items_in AS g ON g.item_id = l.item_id
    WHERE g.category IS NOT NULL
    GROUP BY l.run_keys, l.user_id, c.k, g.category
),
category_spread_rows AS (
    -- src 20: ordered pairs of categorised items m(m − 1), and of items of one category Σ_c n_c(n_c − 1)
    SELECT run_keys, user_id, 20 AS src, cut, SUM(n) * (SUM(n) - 1) AS spread_pairs, SUM(n * (n - 1)) AS spread_same
    FROM category_spread_counts
    GROUP BY run_keys, user_id, cut
),
feature_spread_cuts AS (
    SELECT k FROM cutoffs
),
feature_norms AS (
    SELECT item_id, SQRT(SUM(CAST(value AS DOUBLE) * value)) AS norm FROM features_in GROUP BY item_id
),
feature_spread_items AS (
    SELECT l.run_keys, l.user_id, c.k AS cut, l.item_id, n.norm
    FROM list_rows AS l
    JOIN feature_spread_cuts AS c ON l.rank <= c.k
    JOIN feature_norms AS n ON n.item_id = l.item_id
    WHERE n.norm > 0
),
feature_spread_sums AS (
    -- per list and feature f, with u_if = x_if / ‖x_i‖ (item i's unit vector): S_f = Σ_i u_if and Σ_i u_if²
    SELECT run_keys, user_id, cut, SUM(unit) AS unit_sum, SUM(unit * unit) AS unit_square
    FROM (
        SELECT i.run_keys, i.user_id, i.cut, f.feature, CAST(f.value AS DOUBLE) / i.norm AS unit
        FROM feature_spread_items AS i
        JOIN features_in AS f ON f.item_id = i.item_id
    ) AS u
    GROUP BY run_keys, user_id, cut, feature
),
feature_spread_rows AS (
    -- src 21: the items with a vector m, Σ_f S_f² and Σ_i Σ_f u_if²
    SELECT i.run_keys, i.user_id, 21 AS src, i.cut, i.n AS spread_items, s.spread_square, s.spread_self
    FROM (
        SELECT run_keys, user_id, cut, COUNT(*) AS n FROM feature_spread_items GROUP BY run_keys, user_id, cut
    ) AS i
    JOIN (
        SELECT run_keys, user_id, cut, SUM(unit_sum * unit_sum) AS spread_square, SUM(unit_square) AS spread_self
        FROM feature_spread_sums
        GROUP BY run_keys, user_id, cut
    ) AS s ON s.run_keys = i.run_keys AND s.user_id = i.user_id AND s.cut = i.cut
),
corr_cuts AS (
    SELECT k FROM cutoffs
),
corr_rows AS (
    SELECT l.run_keys, l.user_id, 7 AS src, CAST(c.k AS BIGINT) AS cut,
        CAST(ROW_NUMBER() OVER (PARTITION BY l.run_keys, l.user_id, c.k ORDER BY l.rank DESC) AS DOUBLE) AS corr_rank_x,
        CAST(RANK() OVER (PARTITION BY l.run_keys, l.user_id, c.k ORDER BY l.relevance ASC) AS DOUBLE)
            + CAST(COUNT(*) OVER (PARTITION BY l.run_keys, l.user_id, c.k, l.relevance) - 1 AS DOUBLE) / 2 AS corr_rank_y
    FROM list_rows AS l JOIN corr_cuts AS c ON l.rank <= c.k
    WHERE l.relevance IS NOT NULL
),
agreement_cuts AS (
    SELECT k FROM cutoffs
),
agreement_common AS (
    -- an item in both top-k lists (recs' and expected_recs'), at the depth both lists reach it
    SELECT l.run_keys, l.user_id, CAST(c.k AS BIGINT) AS cut,
        CASE WHEN l.rank >= b.expected_rank THEN l.rank ELSE b.expected_rank END AS depth
    FROM list_rows AS l
    JOIN expected_ranked AS b ON l.user_id = b.user_id AND l.item_id = b.item_id
    JOIN agreement_cuts AS c ON l.rank <= c.k AND b.expected_rank <= c.k
),
agreement_lengths AS (
    -- per user with a list and cutoff k: the shorter and longer of the two top-k lists' lengths
    -- (s >= 1: a user without an expected list has no rows)
    SELECT n.run_keys, n.user_id, n.cut,
        CASE WHEN n.list_n <= n.other_n THEN n.list_n ELSE n.other_n END AS short_n,
        CASE WHEN n.list_n <= n.other_n THEN n.other_n ELSE n.list_n END AS long_n
    FROM (
        SELECT l.run_keys, l.user_id, CAST(c.k AS BIGINT) AS cut,
            CAST(SUM(CASE WHEN l.rank <= c.k THEN 1 ELSE 0 END) AS BIGINT) AS list_n,
            CAST(CASE WHEN MAX(e.expected_n) <= c.k THEN MAX(e.expected_n) ELSE c.k END AS BIGINT) AS other_n
        FROM list_rows AS l
        JOIN expected_lengths AS e ON l.user_id = e.user_id
        CROSS JOIN agreement_cuts AS c
        GROUP BY l.run_keys, l.user_id, c.k
    ) AS n
),
agreement_rows AS (
    -- one row per depth d = 1..l: X_d = #(items both lists hold in their top d), and X_s
    SELECT a.run_keys, a.user_id, 10 AS src, a.cut, a.rank, a.short_n, a.long_n,
        CAST(SUM(a.n_common) OVER (PARTITION BY a.run_keys, a.user_id, a.cut ORDER BY a.rank
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS overlap,
        CAST(SUM(CASE WHEN a.rank <= a.short_n THEN a.n_common ELSE 0 END)
             OVER (PARTITION BY a.run_keys, a.user_id, a.cut) AS BIGINT) AS short_overlap
    FROM (
        SELECT n.run_keys, n.user_id, n.cut, CAST(p.pos AS BIGINT) AS rank, n.short_n, n.long_n,
            CAST(COUNT(h.depth) AS BIGINT) AS n_common
        FROM agreement_lengths AS n
        JOIN slot_positions AS p ON p.pos <= n.long_n
        LEFT JOIN agreement_common AS h
            ON h.run_keys = n.run_keys AND h.user_id = n.user_id AND h.cut = n.cut AND h.depth = p.pos
        GROUP BY n.run_keys, n.user_id, n.cut, p.pos, n.short_n, n.long_n
    ) AS a
),
category_cuts AS (
    -- (cutoff, weight, patience) of each category metric asked: a top k's position r weighs
    -- patience^(r − 1) (weight 'geometric'; patience 1: every position the same), 1/log2(r + 1) ('log')
    -- or 1/log2(max(r, 2)) ('trec', TREC Fair Ranking's discount); set by recsql/compose/stage.py
    SELECT k, weight, patience FROM category_keys
),
item_categories AS (
    -- an item's share of each of its categories: 1 for its items category (source 1), or its positive
    -- item_features values over their sum (source 2: several weighted categories, e.g. genres)
    SELECT item_id, 1 AS category_source, CAST(category AS VARCHAR) AS category, CAST(1 AS DOUBLE) AS share
    FROM items_in
    WHERE category IS NOT NULL
    UNION ALL
    SELECT f.item_id, 2 AS category_source, f.feature AS category, CAST(f.value AS DOUBLE) / t.total AS share
    FROM features_in AS f
    JOIN (SELECT item_id, SUM(CAST(value AS DOUBLE)) AS total FROM features_in WHERE value > 0 GROUP BY item_id) AS t
        ON f.item_id = t.item_id
    WHERE f.value > 0
),
category_targets AS (
    -- each category's share of the catalog: 1/G of the G categories (uniform_share), and its mass over
    -- every categorized item's (items_share); read from the inputs, not from item_categories (DataFusion
    -- fails on a second read of that union when its two inputs' schemas carry different metadata)
    SELECT g.category_source, g.category,
        CAST(1 AS DOUBLE) / COUNT(*) OVER (PARTITION BY g.category_source) AS uniform_share,
        g.mass / SUM(g.mass) OVER (PARTITION BY g.category_source) AS items_share
    FROM (
        SELECT 1 AS category_source, i.category, CAST(COUNT(*) AS DOUBLE) AS mass
        FROM (SELECT CAST(category AS VARCHAR) AS category FROM items_in WHERE category IS NOT NULL) AS i
        GROUP BY i.category
        UNION ALL
        SELECT 2 AS category_source, f.feature AS category, SUM(CAST(f.value AS DOUBLE) / t.total) AS mass
        FROM features_in AS f
        JOIN (SELECT item_id, SUM(CAST(value AS DOUBLE)) AS total FROM features_in WHERE value > 0 GROUP BY item_id) AS t
            ON f.item_id = t.item_id
        WHERE f.value > 0
        GROUP BY f.feature
    ) AS g
),
history_categories AS (
    -- the mass of each category in a user's interactions: each item seen weighs w_ui, the sum of its
    -- interactions' weights (interaction_weight_col), or 1 without weights (each item counted once)
    SELECT h.user_id, g.category_source, g.category, SUM(h.weight * g.share) AS p_mass
    FROM (SELECT user_id, item_id, COALESCE(SUM(weight), 1) AS weight FROM interactions_in GROUP BY user_id, item_id) AS h
    JOIN item_categories AS g ON h.item_id = g.item_id
    GROUP BY h.user_id, g.category_source, g.category
),
category_masses AS (
    -- per user with a list, cutoff k and patience: each category's mass in the history and in the top k
    -- (an item's share weighted by patience^(rank − 1))
    SELECT m.run_keys, m.user_id, m.cut, m.category_weight, m.category_patience, m.category_source, m.category,
        SUM(m.p_mass) AS p_mass, SUM(m.q_mass) AS q_mass
    FROM (
        SELECT l.run_keys, l.user_id, CAST(c.k AS BIGINT) AS cut, c.weight AS category_weight,
            CAST(c.patience AS DOUBLE) AS category_patience, h.category_source, h.category, h.p_mass, CAST(0 AS DOUBLE) AS q_mass
        FROM list_rows AS l
        CROSS JOIN category_cuts AS c
        JOIN history_categories AS h ON l.user_id = h.user_id
        WHERE l.rank = 1
        UNION ALL
        SELECT l.run_keys, l.user_id, CAST(c.k AS BIGINT) AS cut, c.weight AS category_weight,
            CAST(c.patience AS DOUBLE) AS category_patience, g.category_source, g.category, CAST(0 AS DOUBLE) AS p_mass,
            g.share * CASE WHEN c.weight = 'trec' THEN LN(2) / LN(CASE WHEN l.rank < 2 THEN 2 ELSE l.rank END)
                           WHEN c.weight = 'log' THEN LN(2) / LN(l.rank + 1)
                           ELSE POWER(c.patience, l.rank - 1) END AS q_mass
        FROM list_rows AS l
        JOIN category_cuts AS c ON l.rank <= c.k
        JOIN item_categories AS g ON l.item_id = g.item_id
    ) AS m
    GROUP BY m.run_keys, m.user_id, m.cut, m.category_weight, m.category_patience, m.category_source, m.category
),
category_rows AS (
    -- p_share = p(g|u), the history's category distribution (NULL without a categorized history item);
    -- q_share = q(g|u), the top k's (0 for every category when no listed item has one)
    SELECT m.run_keys, m.user_id, 11 AS src, m.cut, m.category_weight, m.category_patience, m.category_source, m.category,
        CASE WHEN m.p_total > 0 THEN m.p_mass / m.p_total END AS p_share,
        CASE WHEN m.q_total > 0 THEN m.q_mass / m.q_total ELSE 0 END AS q_share,
        t.uniform_share, t.items_share
    FROM (
        SELECT c.run_keys, c.user_id, c.cut, c.category_weight, c.category_patience, c.category_source, c.category,
            c.p_mass, c.q_mass,
            SUM(c.p_mass) OVER (PARTITION BY c.run_keys, c.user_id, c.cut, c.category_weight, c.category_patience,
                                             c.category_source) AS p_total,
            SUM(c.q_mass) OVER (PARTITION BY c.run_keys, c.user_id, c.cut, c.category_weight, c.category_patience,
                                             c.category_source) AS q_total
        FROM category_masses AS c
    ) AS m
    LEFT JOIN category_targets AS t ON m.category_source = t.category_source AND m.category = t.category
),
intent_judged AS (
    -- the relevant judgments per intent (subtopic): (user, item, intent) with relevance >= $threshold,
    -- and R_s = the relevant items of the intent
    SELECT j.user_id, j.item_id, j.intent,
        CAST(COUNT(*) OVER (PARTITION BY j.user_id, j.intent) AS BIGINT) AS intent_rel
    FROM (SELECT DISTINCT user_id, item_id, intent FROM intents_in WHERE relevance >= $threshold) AS j
),
intent_users AS (
    -- every user of intents, with n_intents = |S|, the intents that have a relevant item (0: none has)
    SELECT u.user_id, CAST(COUNT(DISTINCT j.intent) AS BIGINT) AS n_intents
    FROM (SELECT DISTINCT user_id FROM intents_in) AS u
    LEFT JOIN intent_judged AS j ON u.user_id = j.user_id
    GROUP BY u.user_id
),
intent_rows AS (
    -- a list position relevant to an intent, with intent_prior = the positions above it relevant to it
    SELECT l.run_keys, l.user_id, 12 AS src, l.rank, j.intent_rel,
        CAST(ROW_NUMBER() OVER (PARTITION BY l.run_keys, l.user_id, j.intent ORDER BY l.rank ASC) - 1 AS BIGINT)
            AS intent_prior
    FROM list_rows AS l
    JOIN intent_judged AS j ON l.user_id = j.user_id AND l.item_id = j.item_id
    UNION ALL
    SELECT runs.run_keys, u.user_id, 19 AS src, CAST(NULL AS BIGINT) AS rank, CAST(NULL AS BIGINT) AS intent_rel,
        CAST(NULL AS BIGINT) AS intent_prior
    FROM intent_users AS u CROSS JOIN runs
),
intent_alphas AS (
    SELECT CAST(0.5 AS DOUBLE) AS alpha
),
intent_ideal AS (
    -- the greedy ideal order's gain at each step, per (user, alpha): written by the composer as a chain
    -- of picks when a metric reads it (recsql/compose/intents.py); no rows here
    SELECT user_id, CAST(NULL AS DOUBLE) AS alpha, CAST(NULL AS BIGINT) AS step, CAST(NULL AS DOUBLE) AS gain
    FROM intent_users
    WHERE n_intents < 0
),
intent_depths AS (
    -- depth d = 1..$intent_max_k per (run, user with a list and intents, alpha asked): the normalisers'
    -- positions, with the ideal order's gain there (0 past its relevant items)
    SELECT l.run_keys, l.user_id, 13 AS src, CAST(p.pos AS BIGINT) AS rank, a.alpha AS intent_alpha,
        CAST(COALESCE(i.gain, 0) AS DOUBLE) AS ideal_gain
    FROM list_rows AS l
    CROSS JOIN intent_alphas AS a
    JOIN slot_positions AS p ON p.pos <= $intent_max_k
    LEFT JOIN intent_ideal AS i ON i.user_id = l.user_id AND i.alpha = a.alpha AND i.step = p.pos
    WHERE l.rank = 1 AND l.user_id IN (SELECT user_id FROM intent_users)
),
cascade_params AS (
    SELECT kind, grade FROM cascades
),
cascade_factors AS (
    SELECT l.run_keys, l.user_id, l.rank, p.kind AS cascade_kind, p.grade AS cascade_grade,
        CASE WHEN p.kind = 'err'
             THEN (POWER(2, CASE WHEN l.relevance > 0 THEN CAST(l.relevance AS DOUBLE) ELSE 0 END) - 1)
                  / POWER(2, COALESCE(p.grade, m.max_grade))
             ELSE COALESCE(CASE WHEN l.relevance > 0 THEN CAST(l.relevance AS DOUBLE) ELSE 0 END
                           / NULLIF(COALESCE(p.grade, m.max_grade), 0), 0) END AS cascade_rel
    FROM list_rows AS l CROSS JOIN cascade_params AS p CROSS JOIN truth_max AS m
),
cascade_rows AS (
    SELECT run_keys, user_id, 8 AS src, rank, cascade_kind, cascade_grade, cascade_rel,
        CAST(CASE WHEN zeros_before > 0 THEN 0
             ELSE (1 - 2 * MOD(negatives_before, 2)) * EXP(log_before) END AS DOUBLE) AS cascade_reach
    FROM (
        SELECT run_keys, user_id, rank, cascade_kind, cascade_grade, cascade_rel,
            COALESCE(SUM(CASE WHEN cascade_rel = 1 THEN 1 ELSE 0 END)
                OVER (PARTITION BY run_keys, user_id, cascade_kind, cascade_grade ORDER BY rank
                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS zeros_before,
            COALESCE(SUM(CASE WHEN cascade_rel > 1 THEN 1 ELSE 0 END)
                OVER (PARTITION BY run_keys, user_id, cascade_kind, cascade_grade ORDER BY rank
                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS negatives_before,
            COALESCE(SUM(CASE WHEN cascade_rel <> 1 THEN LN(ABS(1 - cascade_rel)) ELSE 0 END)
                OVER (PARTITION BY run_keys, user_id, cascade_kind, cascade_grade ORDER BY rank
                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS log_before
        FROM cascade_factors
    ) AS reach
),
log_policy AS (
    -- per run and logged context, the reward model's value of a stochastic target (target = scores):
    -- Σ_a π_e(a|x) q̂(x, a), π_e(a|x) = the recs' score of (x, a); for a policy per position (target =
    -- positions) per context and position k, Σ_a π_e(a at k|x) q̂(x, a) (recsql/compose/stage.py _per_position)
    SELECT r.run_keys, r.user_id, SUM(-r.ord * q.reward) AS policy_q
    FROM recs_in AS r
    JOIN reward_model_in AS q ON r.user_id = q.user_id AND r.item_id = q.item_id
    GROUP BY r.run_keys, r.user_id
),
log_examination AS (
    -- per logged position, the rewards of the logged rows there weighed by their inverse propensities,
    -- Σ r / π0: under the position-based model with randomized logging proportional to the position's
    -- examination probability (feature log_pbm: pbm_ips with examination = logs)
    SELECT position, SUM(reward / NULLIF(propensity, 0)) AS examined
    FROM logs_in
    GROUP BY position
),
log_rows AS (
    -- one row per run and logged impression (feature logs: the off-policy estimators), user_id NULL:
    -- the target's probability of the logged item there, for target = list (1 where the run's list puts
    -- the item at the logged position, else 0) and target = scores (the recs' score of the item, the
    -- position not read); the logging propensity and reward; the reward model's prediction of the logged
    -- (context, item) and its value of each target at the context (list: the item the list puts at the
    -- logged position, 0 where it puts none; scores: Σ_a π_e(a|x) q̂(x, a)). For the slate estimators (feature
    -- log_slates; a logged slate is the rows of one context): the slate's first row (the slates' count), the
    -- list's probability of the whole slate (1 where it puts every logged item of the slate at its logged
    -- position) and of the slate's positions up to this one (peers at one position included), and the logging
    -- policy's joint and cascade propensities as logged (their windows computed only where a metric reads them:
    -- the composer drops the columns nobody reads). For pbm_ips (feature log_pbm): the list's position of the
    -- logged item, the logged position, the slate's deepest logged position, and log_examination's value at the
    -- list's position and at the logged one
    SELECT runs.run_keys, CASE WHEN l.position < 0 THEN l.user_id END AS user_id, 18 AS src,
        CAST(CASE WHEN CAST(s.rank AS DOUBLE) = l.position THEN 1 ELSE 0 END AS DOUBLE) AS log_pe_list,
        CAST(COALESCE(-c.ord, 0) AS DOUBLE) AS log_pe_scores,
        CAST(l.propensity AS DOUBLE) AS log_propensity, CAST(l.reward AS DOUBLE) AS log_reward,
        CAST(qf.reward AS DOUBLE) AS log_q_factual,
        CAST(COALESCE(qa.reward, 0) AS DOUBLE) AS log_q_list,
        CAST(COALESCE(p.policy_q, 0) AS DOUBLE) AS log_q_scores,
        CAST(CASE WHEN ROW_NUMBER() OVER (PARTITION BY runs.run_keys, l.user_id ORDER BY l.position) = 1
                  THEN 1 ELSE 0 END AS BIGINT) AS log_slate_first,
        CAST(MIN(CASE WHEN CAST(s.rank AS DOUBLE) = l.position THEN 1 ELSE 0 END)
             OVER (PARTITION BY runs.run_keys, l.user_id) AS DOUBLE) AS log_pe_slate,
        CAST(MIN(CASE WHEN CAST(s.rank AS DOUBLE) = l.position THEN 1 ELSE 0 END)
             OVER (PARTITION BY runs.run_keys, l.user_id ORDER BY l.position
                   RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS DOUBLE) AS log_pe_cascade,
        CAST(l.slate_propensity AS DOUBLE) AS log_slate_propensity,
        CAST(l.cascade_propensity AS DOUBLE) AS log_cascade_propensity, l.position AS log_position,
        CAST(s.rank AS DOUBLE) AS log_list_rank,
        CAST(MAX(l.position) OVER (PARTITION BY runs.run_keys, l.user_id) AS DOUBLE) AS log_slate_depth,
        CAST(ex.examined AS DOUBLE) AS log_exam_list, CAST(ep.examined AS DOUBLE) AS log_exam_logged
    FROM logs_in AS l
    CROSS JOIN runs
    LEFT JOIN list_rows AS s ON s.run_keys = runs.run_keys AND s.user_id = l.user_id AND s.item_id = l.item_id
    LEFT JOIN recs_in AS c ON c.run_keys = runs.run_keys AND c.user_id = l.user_id AND c.item_id = l.item_id
    -- the position as logged (a DOUBLE, checked whole): ranks compared as DOUBLEs, exact below 2^53
    LEFT JOIN list_rows AS a ON a.run_keys = runs.run_keys AND a.user_id = l.user_id AND CAST(a.rank AS DOUBLE) = l.position
    LEFT JOIN reward_model_in AS qf ON qf.user_id = l.user_id AND qf.item_id = l.item_id
    LEFT JOIN reward_model_in AS qa ON qa.user_id = l.user_id AND qa.item_id = a.item_id
    LEFT JOIN log_policy AS p ON p.run_keys = runs.run_keys AND p.user_id = l.user_id
    LEFT JOIN log_examination AS ex ON ex.position = CAST(s.rank AS DOUBLE)
    LEFT JOIN log_examination AS ep ON ep.position = l.position
    WHERE EXISTS (SELECT 1 FROM recs_in)  -- no recommendations at all: no run to estimate
),
log_positions AS (
    -- log_rows with, per run and logged position, the number of logged rows there and the sums of their
    -- independent weights (log_pe_list / log_propensity; log_pe_scores / log_propensity for a target policy
    -- per position) and cascade weights (log_pe_cascade / log_cascade_propensity): the self-normalized slate
    -- estimators' per-position normalisers. A window over
    -- log_rows' own windows, hence a CTE of its own; when no metric reads them the composer drops the three
    -- columns, and this CTE, which then only passes log_rows on, with them
    SELECT run_keys, user_id, src, log_pe_list, log_pe_scores, log_propensity, log_reward, log_q_factual, log_q_list,
        log_q_scores, log_slate_first, log_pe_slate, log_pe_cascade, log_slate_propensity, log_cascade_propensity,
        log_position, log_list_rank, log_slate_depth, log_exam_list, log_exam_logged,
        COUNT(*) OVER (PARTITION BY run_keys, log_position) AS log_position_rows,
        SUM(log_pe_list / log_propensity) OVER (PARTITION BY run_keys, log_position) AS log_position_iw,
        SUM(log_pe_cascade / log_cascade_propensity) OVER (PARTITION BY run_keys, log_position) AS log_position_cw,
        SUM(log_pe_scores / log_propensity) OVER (PARTITION BY run_keys, log_position) AS log_position_sw
    FROM log_rows
),
stacked AS (
    SELECT run_keys, user_id, 1 AS src, rank, CAST(NULL AS BIGINT) AS ideal_rank,
        CAST(NULL AS BIGINT) AS cut, item_id, relevance, hit, hits_cum, nonrel_cum,
        tie_gain, tie_gain_exp, tie_miss, CAST(tie_first AS BIGINT) AS tie_first, CAST(tie_last AS BIGINT) AS tie_last
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
    UNION ALL
    SELECT run_keys, user_id, src, cut, item_id, CAST(exposure AS BIGINT) AS exposure,
        CAST(list_users AS BIGINT) AS list_users, CAST(in_catalog AS BIGINT) AS in_catalog,
        CAST(exposure_rank AS BIGINT) AS exposure_rank
    FROM exposure_rows
    UNION ALL
    SELECT run_keys, user_id, src, cut, item_id, CAST(weight_kind AS VARCHAR) AS weight_kind,
        CAST(weight_patience AS DOUBLE) AS weight_patience, CAST(attention AS DOUBLE) AS attention,
        CAST(merit AS DOUBLE) AS merit, CAST(in_catalog AS BIGINT) AS in_catalog, CAST(attention_rank AS BIGINT) AS attention_rank
    FROM attention_rows
    UNION ALL
    SELECT run_keys, user_id, src, cut, CAST(weight_kind AS VARCHAR) AS weight_kind,
        CAST(weight_patience AS DOUBLE) AS weight_patience, CAST(group_name AS VARCHAR) AS group_name,
        CAST(group_attention AS DOUBLE) AS group_attention, CAST(group_exposure AS DOUBLE) AS group_exposure,
        CAST(group_merit AS DOUBLE) AS group_merit, CAST(group_mean AS DOUBLE) AS group_mean,
        CAST(group_merit_mean AS DOUBLE) AS group_merit_mean, CAST(group_rank AS BIGINT) AS group_rank
    FROM attention_groups
    UNION ALL
    SELECT run_keys, user_id, src, cut, item_id, CAST(bias_listed AS BIGINT) AS bias_listed,
        CAST(bias_unseen AS BIGINT) AS bias_unseen, CAST(bias_hits AS DOUBLE) AS bias_hits,
        CAST(bias_relevant AS BIGINT) AS bias_relevant
    FROM bias_rows
    UNION ALL
    SELECT run_keys, user_id, src, cut, item_id, CAST(ee_model AS VARCHAR) AS ee_model,
        CAST(ee_patience AS DOUBLE) AS ee_patience, CAST(ee_utility AS DOUBLE) AS ee_utility,
        CAST(ee_exposure AS DOUBLE) AS ee_exposure, CAST(ee_target AS DOUBLE) AS ee_target
    FROM ee_rows
    UNION ALL
    SELECT run_keys, user_id, src, rank, CAST(pair_sign AS BIGINT) AS pair_sign
    FROM pair_rows
    UNION ALL
    SELECT run_keys, user_id, src, cut, CAST(spread_pairs AS BIGINT) AS spread_pairs,
        CAST(spread_same AS BIGINT) AS spread_same
    FROM category_spread_rows
    UNION ALL
    SELECT run_keys, user_id, src, cut, CAST(spread_items AS BIGINT) AS spread_items,
        CAST(spread_square AS DOUBLE) AS spread_square, CAST(spread_self AS DOUBLE) AS spread_self
    FROM feature_spread_rows
    UNION ALL
    SELECT run_keys, user_id, src, cut, CAST(corr_rank_x AS DOUBLE) AS corr_rank_x,
        CAST(corr_rank_y AS DOUBLE) AS corr_rank_y
    FROM corr_rows
    UNION ALL
    SELECT run_keys, user_id, src, rank, CAST(cascade_kind AS VARCHAR) AS cascade_kind,
        CAST(cascade_grade AS DOUBLE) AS cascade_grade, CAST(cascade_rel AS DOUBLE) AS cascade_rel,
        CAST(cascade_reach AS DOUBLE) AS cascade_reach
    FROM cascade_rows
    UNION ALL
    SELECT run_keys, user_id, src, cut, rank, CAST(short_n AS BIGINT) AS short_n, CAST(long_n AS BIGINT) AS long_n,
        CAST(overlap AS BIGINT) AS overlap, CAST(short_overlap AS BIGINT) AS short_overlap
    FROM agreement_rows
    UNION ALL
    SELECT run_keys, user_id, src, cut, CAST(category_weight AS VARCHAR) AS category_weight,
        CAST(category_patience AS DOUBLE) AS category_patience, CAST(category_source AS BIGINT) AS category_source,
        CAST(category AS VARCHAR) AS category_name, CAST(p_share AS DOUBLE) AS p_share, CAST(q_share AS DOUBLE) AS q_share,
        CAST(uniform_share AS DOUBLE) AS uniform_share, CAST(items_share AS DOUBLE) AS items_share
    FROM category_rows
    UNION ALL
    SELECT run_keys, user_id, src, rank, CAST(intent_rel AS BIGINT) AS intent_rel,
        CAST(intent_prior AS BIGINT) AS intent_prior
    FROM intent_rows
    UNION ALL
    SELECT run_keys, user_id, src, rank, CAST(intent_alpha AS DOUBLE) AS intent_alpha,
        CAST(ideal_gain AS DOUBLE) AS ideal_gain
    FROM intent_depths
    UNION ALL
    SELECT run_keys, user_id, src, CAST(log_pe_list AS DOUBLE) AS log_pe_list,
        CAST(log_pe_scores AS DOUBLE) AS log_pe_scores, CAST(log_propensity AS DOUBLE) AS log_propensity,
        CAST(log_reward AS DOUBLE) AS log_reward, CAST(log_q_factual AS DOUBLE) AS log_q_factual,
        CAST(log_q_list AS DOUBLE) AS log_q_list, CAST(log_q_scores AS DOUBLE) AS log_q_scores,
        CAST(log_slate_first AS BIGINT) AS log_slate_first, CAST(log_pe_slate AS DOUBLE) AS log_pe_slate,
        CAST(log_pe_cascade AS DOUBLE) AS log_pe_cascade, CAST(log_slate_propensity AS DOUBLE) AS log_slate_propensity,
        CAST(log_cascade_propensity AS DOUBLE) AS log_cascade_propensity,
        CAST(log_position_rows AS BIGINT) AS log_position_rows, CAST(log_position_iw AS DOUBLE) AS log_position_iw,
        CAST(log_position_cw AS DOUBLE) AS log_position_cw, CAST(log_position_sw AS DOUBLE) AS log_position_sw,
        CAST(log_position AS DOUBLE) AS log_position,
        CAST(log_list_rank AS DOUBLE) AS log_list_rank, CAST(log_slate_depth AS DOUBLE) AS log_slate_depth,
        CAST(log_exam_list AS DOUBLE) AS log_exam_list, CAST(log_exam_logged AS DOUBLE) AS log_exam_logged
    FROM log_positions
    UNION ALL
    SELECT run_keys, user_id, 9 AS src, rank, item_id, relevance, hit, hits_cum, nonrel_cum
    FROM second_rows
    UNION ALL
    SELECT run_keys, user_id, 0 AS src
    FROM unjudged_users
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
        CAST(i.price AS DOUBLE) AS price, CAST(i.probability AS DOUBLE) AS probability, i.category AS category,
        i.head AS in_head,
        s.tie_first, s.tie_last, s.exposure, s.list_users, s.in_catalog, s.exposure_rank,
        s.pair_sign, s.spread_pairs, s.spread_same, s.spread_items, s.spread_square, s.spread_self, s.corr_rank_x, s.corr_rank_y,
        s.cascade_kind, s.cascade_grade, s.cascade_rel, s.cascade_reach,
        s.short_n, s.long_n, s.overlap, s.short_overlap, s.category_weight, s.category_patience, s.category_source, s.category_name, s.p_share, s.q_share,
        s.uniform_share, s.items_share,
        s.intent_rel, s.intent_prior, s.intent_alpha, s.ideal_gain, ius.n_intents AS n_intents,
        s.weight_kind, s.weight_patience, s.attention, s.merit, s.attention_rank, s.group_name, s.group_attention,
        s.group_exposure, s.group_merit, s.group_mean, s.group_merit_mean, s.group_rank,
        s.bias_listed, s.bias_unseen, s.bias_hits, s.bias_relevant,
        s.ee_model, s.ee_patience, s.ee_utility, s.ee_exposure, s.ee_target,
        s.log_pe_list, s.log_pe_scores, s.log_propensity, s.log_reward, s.log_q_factual, s.log_q_list, s.log_q_scores,
        s.log_slate_first, s.log_pe_slate, s.log_pe_cascade, s.log_slate_propensity, s.log_cascade_propensity,
        s.log_position_rows, s.log_position_iw, s.log_position_cw, s.log_position_sw, s.log_position, s.log_list_rank, s.log_slate_depth,
        s.log_exam_list, s.log_exam_logged,
        pop.n_seen AS n_seen, pop.pop_rank AS pop_rank, pop.seen_before AS seen_before, pop.seen_total AS seen_total, b.expected_rank AS expected_rank, bl.expected_n AS expected_n,
        iu.u_seen AS u_seen, cs.n_catalog AS n_catalog, tl.n_tail AS n_tail
    FROM stacked AS s
    LEFT JOIN truth_users AS u ON s.run_keys = u.run_keys AND s.user_id = u.user_id
    LEFT JOIN items_in AS i ON s.item_id = i.item_id
    LEFT JOIN item_popularity AS pop ON s.item_id = pop.item_id
    LEFT JOIN expected_ranked AS b ON s.user_id = b.user_id AND s.item_id = b.item_id
    LEFT JOIN expected_lengths AS bl ON s.user_id = bl.user_id
    LEFT JOIN intent_users AS ius ON s.user_id = ius.user_id
    CROSS JOIN interaction_users AS iu
    CROSS JOIN catalog_size AS cs
    CROSS JOIN tail_items AS tl
)
SELECT * FROM ranked
