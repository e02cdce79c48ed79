-- DuckDB override of the stage's list_ranked CTE (sql/_ranked.sql) for the main list, ranked by a given rank column
-- or by scores (ord: the rank, or -score), its ties broken by the item id itself: the same rows, in the same order,
-- as sql/_topk.duckdb.sql (each user's best $max_k rows by (ord, item_id)), from heaps on the order alone. A heap
-- keyed by the tuple (ord, item_id) builds and compares a sort key per row; keyed by ord, it compares doubles (2.3x
-- as fast on 10M ranked rows) and holds less memory (10M scored rows fit a 400 MB memory limit).
-- How: each user's $max_k + 1 smallest ords (MIN(ord, n)) and the items that hold them (MIN_BY(item_id, ord, n)),
-- both in ascending ord, so zipped they pair each item with its ord. Let v be the $max_k-th smallest ord. When the
-- next one is larger (or there is none), every row with ord <= v is in the heap, and no row outside it ties v: the
-- top $max_k are the heap's first $max_k by (ord, item_id). When it ties v (a tie across the cut, which the heap's
-- arbitrary choice among equal ords cannot settle), the rows with ord < v (fewer than $max_k, all in the heap)
-- come first, then the smallest item ids among all the user's rows with ord = v (the subquery b: recs read again,
-- for those users and rows alone; LIST_CONCAT skips its NULL for the other users). The composer makes the subquery
-- `lists` the CTE list_heads (the input checks count recs' invalid rows and rows in its scan; b reads it by that
-- name) and `tops` the CTE list_tops (its `top` the duplicate check's). Rows with a NULL item or order are in
-- neither heap (they are invalid rows, which the checks refuse).
SELECT run_keys, user_id, UNNEST(top) AS item_id, UNNEST(RANGE(1, LEN(top) + 1)) AS rank
FROM (
    SELECT lists.run_keys, lists.user_id,
        LIST_CONCAT(LIST_TRANSFORM(LIST_FILTER(LIST_SORT(LIST_ZIP(lists.ords, lists.items)),
                                               lambda p: b.v IS NULL OR p[1] < b.v), lambda p: p[2]),
                    b.items)[1:$max_k] AS top
    FROM (
        SELECT run_keys, user_id, MIN_BY(item_id, ord, $max_k + 1) AS items,
            MIN(ord, $max_k + 1) FILTER (WHERE item_id IS NOT NULL) AS ords
        FROM recs_in
        GROUP BY run_keys, user_id
    ) AS lists
    LEFT JOIN (
        SELECT r.run_keys, r.user_id, MAX(t.v) AS v, MIN(r.item_id, $max_k) AS items
        FROM recs_in AS r
        JOIN (
            SELECT run_keys, user_id, LIST_EXTRACT(ords, $max_k) AS v
            FROM list_heads
            WHERE LEN(ords) > $max_k AND LIST_EXTRACT(ords, $max_k + 1) = LIST_EXTRACT(ords, $max_k)
        ) AS t
            ON r.run_keys = t.run_keys AND r.user_id = t.user_id AND r.ord = t.v
        GROUP BY r.run_keys, r.user_id
    ) AS b
        ON lists.run_keys = b.run_keys AND lists.user_id = b.user_id
) AS tops
