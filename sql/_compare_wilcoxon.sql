-- The Wilcoxon signed-rank statistic of recsql.compare (README, "Comparing runs"), per pair of runs and metric.
--
-- formula: on the differences q = ROUND(v·grain) (sql/_compare_observed.sql: differences equal but for the
--   rounding of sums are equal), over the users with q ≠ 0 (zero differences dropped: Wilcoxon's method),
--   rank |q| ascending with tied values given their average rank; r_plus = Σ ranks of q > 0;
--   n_nonzero = #{q ≠ 0}; ties_term = Σ over tie groups of (t³ − t) = Σ over users of (t² − 1).
--   Finished in Python: z = (r_plus − n(n + 1)/4) / sqrt((n(n + 1)(2n + 1) − ties_term / 2) / 24),
--   p = 2·(1 − Φ(|z|)), no continuity correction: scipy.stats.wilcoxon(d, zero_method="wilcox",
--   correction=False, method="approx").
-- cite: Wilcoxon, "Individual comparisons by ranking methods", Biometrics Bulletin 1(6), 1945;
--   tie correction: Lehmann, Nonparametrics: Statistical Methods Based on Ranks, 1975.
--
-- Input: cmp_pairs(run, baseline, metric, user_idx, v, q). Output: cmp_wilcoxon(run, baseline, metric, n_nonzero,
-- r_plus, ties_term).
WITH
cmp_nonzero AS (
    SELECT run, baseline, metric, q, ABS(q) AS a FROM cmp_pairs WHERE q <> 0
),
cmp_signed_ranks AS (
    SELECT run, baseline, metric, q,
        CAST(RANK() OVER (PARTITION BY run, baseline, metric ORDER BY a) AS DOUBLE) AS first_rank,
        CAST(COUNT(*) OVER (PARTITION BY run, baseline, metric, a) AS DOUBLE) AS t
    FROM cmp_nonzero
),
cmp_wilcoxon AS (
    SELECT run, baseline, metric,
        CAST(COUNT(*) AS BIGINT) AS n_nonzero,
        CAST(SUM(CASE WHEN q > 0 THEN first_rank + (t - 1) / 2 ELSE 0 END) AS DOUBLE) AS r_plus,
        CAST(SUM(t * t - 1) AS DOUBLE) AS ties_term
    FROM cmp_signed_ranks
    GROUP BY run, baseline, metric
)
SELECT * FROM cmp_wilcoxon
