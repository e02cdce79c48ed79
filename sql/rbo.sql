-- name: rbo
-- family: run_agreement
-- k: required
-- population: lists
-- params: p number in (0, 1) = 0.9
-- needs: expected_recs
-- stage: agreement
-- range: [0, 1]
-- formula: rank-biased overlap, extrapolated (RBO_EXT), of the user's top k L and the top k E of expected_recs (the reference run): with s and l the shorter and longer list's lengths and X_d the overlap of the two lists' top d, RBO_EXT = (1 − p) Σ_{d=1..l} p^(d−1) X_d / d + (1 − p) Σ_{d=s+1..l} p^(d−1) X_s (d − s) / (s d) + ((X_l − X_s) / l + X_s / s) p^l (for lists of one length, (1 − p) Σ_{d=1..k} p^(d−1) X_d / d + p^k X_k / k); 0 for a user without an expected list; 1 only when the lists agree to depth k
-- cite: Webber, Moffat & Zobel, ACM TOIS 28(4), 2010, equation 32 (rank-biased overlap for uneven lists); the rbo package's RankingSimilarity.rbo_ext
SELECT
    user_id,
    COALESCE(SUM(CASE WHEN src = 10 AND cut = $k THEN
        (1 - $p) * POWER($p, rank - 1) * (
            CAST(overlap AS DOUBLE) / rank
            + CASE WHEN rank > short_n THEN CAST(short_overlap AS DOUBLE) * (rank - short_n) / (rank * short_n) ELSE 0 END)
        + CASE WHEN rank = long_n
               THEN (CAST(overlap - short_overlap AS DOUBLE) / long_n + CAST(short_overlap AS DOUBLE) / short_n) * POWER($p, long_n)
               ELSE 0 END
    END), 0) AS rbo
FROM ranked
GROUP BY user_id
