/* recsql 0.1.0: ndcg@2, map@2, ndcg(ideal=list)@2, ndcg(ideal=k_slots)@3, precision(denominator=list)@3 (summary: one row per run) */
/* convention: recsql; relevant: relevance >= 1; population: relevant (users with a relevant truth item) */
/* ties: item_id (tied items in item id order, ascending); dialect: datafusion */
WITH recs_in AS (
  SELECT
    "model" AS _run0,
    "user_id" AS user_id,
    "item_id" AS item_id,
    -CAST("score" AS DOUBLE PRECISION) AS ord
  FROM "r"
), truth_in AS (
  SELECT
    "user_id" AS user_id,
    "item_id" AS item_id,
    CAST("relevance" AS DOUBLE PRECISION) AS relevance
  FROM "t"
), runs AS (
  SELECT DISTINCT
    _run0
  FROM recs_in
), truth_runs AS (
  SELECT
    runs._run0 AS _run0,
    t.user_id AS user_id,
    t.relevance AS relevance
  FROM runs
  CROSS JOIN truth_in AS t
), truth_users AS (
  SELECT
    _run0,
    user_id,
    CAST(SUM(CASE WHEN relevance >= 1 THEN 1 ELSE 0 END) AS BIGINT) AS n_rel
  FROM truth_runs
  GROUP BY
    _run0,
    user_id
), list_ranked AS (
  SELECT
    _run0,
    user_id,
    item_id,
    CAST(ROW_NUMBER() OVER (PARTITION BY _run0, user_id ORDER BY ord ASC, item_id ASC) AS BIGINT) AS rank
  FROM recs_in
), list_judged AS (
  SELECT
    l._run0 AS _run0,
    l.user_id AS user_id,
    l.rank AS rank,
    t.relevance AS relevance,
    CASE WHEN t.relevance >= 1 THEN 1 ELSE 0 END AS hit
  FROM list_ranked AS l
  LEFT JOIN truth_in AS t
    ON l.user_id = t.user_id AND l.item_id = t.item_id
  WHERE
    l.rank <= 3
), list_rows AS (
  SELECT
    _run0,
    user_id,
    rank,
    relevance,
    hit,
    CAST(SUM(hit) OVER (
      PARTITION BY _run0, user_id
      ORDER BY rank
      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
    ) AS BIGINT) AS hits_cum
  FROM list_judged
), truth_ordered AS (
  SELECT
    t.user_id AS user_id,
    t.relevance AS relevance,
    CAST(ROW_NUMBER() OVER (PARTITION BY t.user_id ORDER BY t.relevance DESC, t.item_id ASC) AS BIGINT) AS ideal_rank
  FROM truth_in AS t
), truth_rows AS (
  SELECT
    runs._run0 AS _run0,
    t.user_id AS user_id,
    t.relevance AS relevance,
    CASE WHEN t.relevance >= 1 THEN 1 ELSE 0 END AS hit,
    t.ideal_rank AS ideal_rank
  FROM runs
  CROSS JOIN truth_ordered AS t
  WHERE
    t.ideal_rank <= 3
), list_ideal_cuts AS (
  SELECT
    2 AS k
), list_ideal AS (
  SELECT
    l._run0 AS _run0,
    l.user_id AS user_id,
    l.relevance AS relevance,
    l.hit AS hit,
    CAST(c.k AS BIGINT) AS cut,
    CAST(ROW_NUMBER() OVER (
      PARTITION BY l._run0, l.user_id, c.k
      ORDER BY COALESCE(l.relevance, 0) DESC, l.rank ASC
    ) AS BIGINT) AS ideal_rank
  FROM list_rows AS l
  JOIN list_ideal_cuts AS c
    ON l.rank <= c.k
), digits AS (
  SELECT
    0 AS d
  UNION ALL
  SELECT
    1
  UNION ALL
  SELECT
    2
  UNION ALL
  SELECT
    3
  UNION ALL
  SELECT
    4
  UNION ALL
  SELECT
    5
  UNION ALL
  SELECT
    6
  UNION ALL
  SELECT
    7
  UNION ALL
  SELECT
    8
  UNION ALL
  SELECT
    9
), slot_positions AS (
  SELECT
    1 + a.d + 10 * b.d + 100 * c.d + 1000 * e.d AS pos
  FROM digits AS b
  CROSS JOIN digits AS c
  CROSS JOIN digits AS e
  CROSS JOIN digits AS a
), slots AS (
  SELECT
    u._run0 AS _run0,
    u.user_id AS user_id,
    CAST(p.pos AS BIGINT) AS ideal_rank
  FROM slot_positions AS p
  CROSS JOIN truth_users AS u
  WHERE
    p.pos <= 3
), stacked AS (
  SELECT
    _run0,
    user_id,
    1 AS src,
    rank,
    CAST(NULL AS BIGINT) AS ideal_rank,
    CAST(NULL AS BIGINT) AS cut,
    relevance,
    hit,
    hits_cum
  FROM list_rows
  UNION ALL
  SELECT
    _run0,
    user_id,
    2 AS src,
    CAST(NULL AS BIGINT) AS rank,
    ideal_rank,
    CAST(NULL AS BIGINT) AS cut,
    relevance,
    hit,
    CAST(NULL AS BIGINT) AS hits_cum
  FROM truth_rows
  UNION ALL
  SELECT
    _run0,
    user_id,
    3 AS src,
    CAST(NULL AS BIGINT) AS rank,
    ideal_rank,
    cut,
    relevance,
    hit,
    CAST(NULL AS BIGINT) AS hits_cum
  FROM list_ideal
  UNION ALL
  SELECT
    _run0,
    user_id,
    4 AS src,
    CAST(NULL AS BIGINT) AS rank,
    ideal_rank,
    CAST(NULL AS BIGINT) AS cut,
    CAST(1 AS DOUBLE PRECISION) AS relevance,
    1 AS hit,
    CAST(NULL AS BIGINT) AS hits_cum
  FROM slots
), ranked AS (
  SELECT
    s._run0 AS _run0,
    s.user_id AS user_id,
    s.src AS src,
    s.rank AS rank,
    s.ideal_rank AS ideal_rank,
    s.cut AS cut,
    s.hit AS hit,
    s.hits_cum AS hits_cum,
    CASE
      WHEN s.relevance > 0
      THEN CAST(s.relevance AS DOUBLE PRECISION)
      ELSE CAST(0 AS DOUBLE PRECISION)
    END AS gain,
    COALESCE(u.n_rel, 0) AS n_rel
  FROM stacked AS s
  LEFT JOIN truth_users AS u
    ON u._run0 = s._run0 AND s.user_id = u.user_id
), per_user_raw AS (
  SELECT
    _run0,
    MAX(n_rel) AS _n_rel,
    MAX(CASE WHEN src = 1 THEN 1 ELSE 0 END) AS _has_recs,
    CAST(COALESCE(
      CAST(SUM(
        CASE
          WHEN src = 1 AND rank <= 2
          THEN gain * (
            CAST(LN(2) AS DOUBLE PRECISION) / LN(rank + 1)
          )
        END
      ) AS DOUBLE PRECISION) / NULLIF(
        COALESCE(
          SUM(
            CASE
              WHEN src = 2 AND ideal_rank <= 2
              THEN gain * (
                CAST(LN(2) AS DOUBLE PRECISION) / LN(ideal_rank + 1)
              )
            END
          ),
          0
        ),
        0
      ),
      0
    ) AS DOUBLE PRECISION) AS ndcg_at_2, /* ndcg@2: nDCG@k = DCG@k / IDCG@k, 0 when IDCG@k = 0; IDCG@k from ideal = truth (every truth item's gain, sorted, top k) or list (the user's own top-k gains re-sorted); with ideal = binary or k_slots (slots of gain 1) the list's gains are binary too, hit_i (RePlay, Spark), so nDCG ≤ 1 */
    CAST(COALESCE(
      CAST(SUM(
        CASE
          WHEN src = 1 AND rank <= 2 AND hit = 1
          THEN CAST(hits_cum AS DOUBLE PRECISION) / rank
          ELSE 0
        END
      ) AS DOUBLE PRECISION) / NULLIF(LEAST(2, MAX(n_rel)), 0),
      0
    ) AS DOUBLE PRECISION) AS map_at_2, /* map@2: AP@k = Σ_{i≤k} hit_i · (hits@i / i) / D; D = min(k, R) (min), R (relevant: trec_eval, ranx), hits@k (hits), k (k); 0 when D = 0 */
    CAST(COALESCE(
      CAST(SUM(
        CASE
          WHEN src = 1 AND rank <= 2
          THEN gain * (
            CAST(LN(2) AS DOUBLE PRECISION) / LN(rank + 1)
          )
        END
      ) AS DOUBLE PRECISION) / NULLIF(
        COALESCE(
          SUM(
            CASE
              WHEN src = 3 AND cut = 2
              THEN gain * (
                CAST(LN(2) AS DOUBLE PRECISION) / LN(ideal_rank + 1)
              )
            END
          ),
          0
        ),
        0
      ),
      0
    ) AS DOUBLE PRECISION) AS ndcg_ideal_list_at_2, /* ndcg(ideal=list)@2: nDCG@k = DCG@k / IDCG@k, 0 when IDCG@k = 0; IDCG@k from ideal = truth (every truth item's gain, sorted, top k) or list (the user's own top-k gains re-sorted); with ideal = binary or k_slots (slots of gain 1) the list's gains are binary too, hit_i (RePlay, Spark), so nDCG ≤ 1 */
    CAST(COALESCE(
      CAST(SUM(
        CASE
          WHEN src = 1 AND rank <= 3
          THEN CAST(hit AS DOUBLE PRECISION) * (
            CAST(LN(2) AS DOUBLE PRECISION) / LN(rank + 1)
          )
        END
      ) AS DOUBLE PRECISION) / NULLIF(
        COALESCE(
          SUM(
            CASE
              WHEN src = 4 AND ideal_rank <= 3
              THEN (
                CAST(LN(2) AS DOUBLE PRECISION) / LN(ideal_rank + 1)
              )
            END
          ),
          0
        ),
        0
      ),
      0
    ) AS DOUBLE PRECISION) AS ndcg_ideal_k_slots_at_3, /* ndcg(ideal=k_slots)@3: nDCG@k = DCG@k / IDCG@k, 0 when IDCG@k = 0; IDCG@k from ideal = truth (every truth item's gain, sorted, top k) or list (the user's own top-k gains re-sorted); with ideal = binary or k_slots (slots of gain 1) the list's gains are binary too, hit_i (RePlay, Spark), so nDCG ≤ 1 */
    CAST(COALESCE(
      CAST(SUM(CASE WHEN src = 1 AND rank <= 3 THEN hit ELSE 0 END) AS DOUBLE PRECISION) / NULLIF(SUM(CASE WHEN src = 1 AND rank <= 3 THEN 1 ELSE 0 END), 0),
      0
    ) AS DOUBLE PRECISION) AS precision_denominator_list_at_3 /* precision(denominator=list)@3: hits@k / k; denominator=list: hits@k / min(k, n) (0 for an empty list) */
  FROM ranked
  GROUP BY
    _run0,
    user_id
), checks_recs_invalid AS (
  SELECT
    CAST(COALESCE(
      SUM(
        CASE
          WHEN _run0 IS NULL
          OR user_id IS NULL
          OR item_id IS NULL
          OR ord IS NULL
          OR (
            CAST(ord AS DOUBLE PRECISION) > 1.7976931348623157E308
            OR CAST(ord AS DOUBLE PRECISION) < -1.7976931348623157E308
            OR CAST(ord AS DOUBLE PRECISION) <> CAST(ord AS DOUBLE PRECISION)
          )
          THEN 1
          ELSE 0
        END
      ),
      0
    ) AS BIGINT) AS recs_invalid_rows
  FROM recs_in
), checks_recs_copies AS (
  SELECT
    CAST(MAX(d) AS BIGINT) AS recs_duplicate_rows
  FROM (
    SELECT
      CAST(COALESCE(SUM(n - 1), 0) AS BIGINT) AS d
    FROM (
      SELECT
        COUNT(*) AS n
      FROM list_ranked
      WHERE
        rank <= 3
      GROUP BY
        _run0,
        user_id,
        item_id
    ) AS g
  ) AS l
), checks_truth_invalid AS (
  SELECT
    CAST(COALESCE(
      SUM(
        CASE
          WHEN user_id IS NULL
          OR item_id IS NULL
          OR relevance IS NULL
          OR (
            CAST(relevance AS DOUBLE PRECISION) > 1.7976931348623157E308
            OR CAST(relevance AS DOUBLE PRECISION) < -1.7976931348623157E308
            OR CAST(relevance AS DOUBLE PRECISION) <> CAST(relevance AS DOUBLE PRECISION)
          )
          THEN 1
          ELSE 0
        END
      ),
      0
    ) AS BIGINT) AS truth_invalid_rows
  FROM truth_in
), checks_truth_copies AS (
  SELECT
    CAST(COALESCE(SUM(n - 1), 0) AS BIGINT) AS truth_duplicate_rows
  FROM (
    SELECT
      COUNT(*) AS n
    FROM truth_in
    GROUP BY
      user_id,
      item_id
  ) AS g
), checks AS (
  SELECT
    checks_recs_invalid.recs_invalid_rows AS recs_invalid_rows,
    checks_recs_copies.recs_duplicate_rows AS recs_duplicate_rows,
    checks_truth_invalid.truth_invalid_rows AS truth_invalid_rows,
    checks_truth_copies.truth_duplicate_rows AS truth_duplicate_rows
  FROM checks_recs_copies
  CROSS JOIN checks_truth_invalid
  CROSS JOIN checks_truth_copies
  CROSS JOIN checks_recs_invalid
), per_user AS (
  SELECT
    _run0,
    CASE WHEN _n_rel > 0 THEN ndcg_at_2 END AS ndcg_at_2,
    CASE WHEN _n_rel > 0 THEN map_at_2 END AS map_at_2,
    CASE WHEN _n_rel > 0 THEN ndcg_ideal_list_at_2 END AS ndcg_ideal_list_at_2,
    CASE WHEN _n_rel > 0 THEN ndcg_ideal_k_slots_at_3 END AS ndcg_ideal_k_slots_at_3,
    CASE WHEN _n_rel > 0 THEN precision_denominator_list_at_3 END AS precision_denominator_list_at_3,
    _has_recs,
    _n_rel
  FROM per_user_raw
)
SELECT
  _run0 AS "model",
  CAST(COALESCE(SUM(CASE WHEN _n_rel > 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS n_users,
  AVG(ndcg_at_2) AS "ndcg@2",
  AVG(map_at_2) AS "map@2",
  AVG(ndcg_ideal_list_at_2) AS "ndcg(ideal=list)@2",
  AVG(ndcg_ideal_k_slots_at_3) AS "ndcg(ideal=k_slots)@3",
  AVG(precision_denominator_list_at_3) AS "precision(denominator=list)@3",
  CAST(COALESCE(SUM(CASE WHEN _n_rel > 0 AND _has_recs = 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS users_without_recs,
  CAST(COALESCE(SUM(CASE WHEN _n_rel = 0 AND _has_recs = 1 THEN 1 ELSE 0 END), 0) AS BIGINT) AS recs_users_without_truth,
  (
    SELECT
      recs_invalid_rows
    FROM checks
  ) AS recs_invalid_rows,
  (
    SELECT
      recs_duplicate_rows
    FROM checks
  ) AS recs_duplicate_rows,
  (
    SELECT
      truth_invalid_rows
    FROM checks
  ) AS truth_invalid_rows,
  (
    SELECT
      truth_duplicate_rows
    FROM checks
  ) AS truth_duplicate_rows
FROM per_user
GROUP BY
  _run0
ORDER BY
  _run0