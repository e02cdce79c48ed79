-- DuckDB override of the stage's truth_ordered CTE (sql/_ranked.sql), used when no metric reads the
-- truth order beyond its first $ideal_max_k positions: each user's $ideal_max_k largest relevances
-- from max(relevance, n), a bounded heap per user, instead of ROW_NUMBER() sorting all of truth.
-- The ideal order's gains are the portable stage's: relevance descending, position by position.
-- Which of several items of equal relevance takes a position changes no gain, so the rows carry no
-- item id (only money_recall reads a truth row's item, and it keeps the portable order: stage
-- feature truth_rows). A NULL relevance is left out here and sorted last there: an invalid input
-- the checks count either way.
SELECT ideal.run_keys, ideal.user_id, NULL AS item_id, UNNEST(ideal.top) AS relevance,
    UNNEST(RANGE(1, LEN(ideal.top) + 1)) AS ideal_rank
FROM (
    SELECT t.run_keys, t.user_id, MAX(t.relevance, $ideal_max_k) AS top
    FROM truth_in AS t
    WHERE $negative_unjudged = 'no' OR t.relevance >= 0
    GROUP BY t.run_keys, t.user_id
) AS ideal
