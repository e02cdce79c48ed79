-- The pairs of runs a global metric of recsql.compare is tested on (README, "Comparing runs"), read by
-- sql/_compare_global.sql and sql/_compare_weighted.sql.
--
-- formula: a pair (run, baseline) for each run but the baseline (baseline given: cmp_baselines.every = 0), or each
--   run with every run before it (every = 1); unit: the pair's number 1..P in (run, baseline) order; owners: each
--   pair's two runs, role 1 the run, role 2 the baseline (whose lists a user's sign sends to side 1 or 2);
--   units (of the metrics recomputed by their own templates, sql/_compare_weighted.sql and sql/_compare_logged.sql):
--   each run alone (baseline 0) and each pair, within each segment (cmp_unit_segments: 1..S with segments, else the
--   one segment 0), numbered 1..U in (run, baseline, segment) order.
-- cite: Fisher, The Design of Experiments, 1935, §21 (randomization by swapping a unit's treatments).
--
-- Inputs: cmp_runs(run), cmp_baselines(run, every), cmp_unit_segments(segment) (the segments compared). Output:
-- cmp_global_pairs(run, baseline), cmp_global_pair_units(run, baseline, unit), cmp_global_owners(unit, run, baseline,
-- owner, role), cmp_global_units(run, baseline, segment, unit).
WITH
cmp_global_pairs AS (
    SELECT a.run AS run, b.run AS baseline
    FROM cmp_runs AS a
    CROSS JOIN cmp_baselines AS b
    WHERE a.run <> b.run AND (b.every = 0 OR a.run > b.run)
),
cmp_global_pair_units AS (
    SELECT run, baseline, CAST(ROW_NUMBER() OVER (ORDER BY run, baseline) AS BIGINT) AS unit FROM cmp_global_pairs
),
cmp_global_owners AS (
    SELECT u.unit AS unit, u.run AS run, u.baseline AS baseline,
        CASE WHEN k.role = 1 THEN u.run ELSE u.baseline END AS owner, k.role AS role
    FROM cmp_global_pair_units AS u
    CROSS JOIN (SELECT 1 AS role UNION ALL SELECT 2 AS role) AS k
),
cmp_global_units AS (
    SELECT u.run AS run, u.baseline AS baseline, g.segment AS segment,
        CAST(ROW_NUMBER() OVER (ORDER BY u.run, u.baseline, g.segment) AS BIGINT) AS unit
    FROM (
        SELECT run, CAST(0 AS BIGINT) AS baseline FROM cmp_runs
        UNION ALL
        SELECT run, baseline FROM cmp_global_pairs
    ) AS u
    CROSS JOIN cmp_unit_segments AS g
)
SELECT * FROM cmp_global_owners
