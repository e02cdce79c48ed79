-- ties = "average": override of the stage's list_judged CTE (sql/_ranked.sql). Items with equal
-- `ord` form a tie group; every ordering of a group is equally likely (McSherry & Najork, ECIR 2008),
-- so the expected value of any metric that sums a per-position term is the same sum with each
-- position's term replaced by its group's mean. A row therefore carries the group means of hit,
-- gain and 2^gain - 1; rank is still a distinct position (ROW_NUMBER), which is all the discount
-- needs. The group is measured over the whole list, before the cut at $max_k, so a group that
-- straddles the cut is averaged over all of its members.
-- tie_miss is the factor this row contributes to P(no hit in the top k): a group of m items with
-- r relevant ones, whose positions t = 1..c fall within k, misses all of them with probability
-- C(m - r, c) / C(m, c) = Π_{t ≤ c} (m - r - t + 1) / (m - t + 1).
SELECT run_keys, user_id, item_id, rank, ord, relevance, hit, tie_gain, tie_gain_exp,
    CAST(tie_size - tie_hits - tie_pos + 1 AS DOUBLE) / (tie_size - tie_pos + 1) AS tie_miss
FROM (
    SELECT l.run_keys, l.user_id, l.item_id, l.rank, l.ord, t.relevance,
        AVG(CASE WHEN t.relevance >= $threshold THEN CAST(1 AS DOUBLE) ELSE CAST(0 AS DOUBLE) END)
            OVER (PARTITION BY l.run_keys, l.user_id, l.ord) AS hit,
        AVG(CASE WHEN t.relevance > 0 AND ($gain_rule = 'all' OR t.relevance >= $threshold) THEN CAST(t.relevance AS DOUBLE) ELSE CAST(0 AS DOUBLE) END)
            OVER (PARTITION BY l.run_keys, l.user_id, l.ord) AS tie_gain,
        AVG(CASE WHEN t.relevance > 0 AND ($gain_rule = 'all' OR t.relevance >= $threshold) THEN POWER(2, CAST(t.relevance AS DOUBLE)) - 1 ELSE CAST(0 AS DOUBLE) END)
            OVER (PARTITION BY l.run_keys, l.user_id, l.ord) AS tie_gain_exp,
        COUNT(*) OVER (PARTITION BY l.run_keys, l.user_id, l.ord) AS tie_size,
        SUM(CASE WHEN t.relevance >= $threshold THEN 1 ELSE 0 END)
            OVER (PARTITION BY l.run_keys, l.user_id, l.ord) AS tie_hits,
        ROW_NUMBER() OVER (PARTITION BY l.run_keys, l.user_id, l.ord ORDER BY l.rank) AS tie_pos
    FROM list_ranked AS l
    LEFT JOIN truth_judged AS t
        ON l.run_keys = t.run_keys AND l.user_id = t.user_id AND l.item_id = t.item_id
) AS groups
WHERE $max_k IS NULL OR rank <= $max_k
