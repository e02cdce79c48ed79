-- Resampling weights and sign flips of recsql.compare (README, "Comparing runs"): the same integers on every engine.
--
-- formula: P = 2^31 − 1; MIX(x) = x^5 mod P, a permutation of 0..P−1 (gcd(5, P − 1) = 1) computed as three
--   products of numbers below P, so no intermediate reaches 2^62 (SQLite, PostgreSQL, MariaDB, Spark,
--   ClickHouse, DataFusion and DuckDB all keep such integers exact; no engine hash, no XOR).
--   Per resample b = 1..$resamples and stream (1: bootstrap weights, 2: sign flips, 3: run shuffles):
--   key_b = MIX(($stream_key + b·$b_step) mod P), where $stream_key = MIX((seed·$seed_step + stream) mod P)
--   is computed by recsql in Python; per user (dense index i = 1..n): key_i = MIX((i·$user_step + $user_shift) mod P);
--   per (b, i): u = MIX((key_b + key_i) mod P).
--   w = the Poisson(1) draw of u by inverse CDF: the least j with u < ceil(F(j)·P), F the Poisson(1) CDF
--   (POISSON(u): recsql writes the thresholds as literals); s = +1 if u (stream 2) is even, −1 if odd.
-- cite: Poisson bootstrap: Hanley & MacGibbon, Computer Methods and Programs in Biomedicine 83(1), 2006;
--   Chamandy, Muralidharan, Najmi & Naidu, "Estimating uncertainty for massive data streams", Google, 2012.
--   x^5 mod P as a permutation polynomial: Lidl & Niederreiter, Finite Fields, 1997, ch. 7.
--
-- Input: cmp_users(user_idx, drawn) (drawn = 1: a user resampled). Output: cmp_draws(resample, user_idx, w, s); cmp_resample_keys(resample, k1, k2,
-- k3) and cmp_user_keys(user_idx, k) for the run shuffles of sql/_compare_tukey.sql.
WITH
cmp_digits AS (
    SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
    UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9
),
cmp_resamples AS (
    SELECT CAST(a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 1 AS BIGINT) AS resample
    FROM cmp_digits AS a CROSS JOIN cmp_digits AS b CROSS JOIN cmp_digits AS c CROSS JOIN cmp_digits AS e
    WHERE a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 1 <= $resamples
),
cmp_resample_in AS (
    SELECT resample,
        ($weight_key + resample * $b_step) % $P AS x1,
        ($flip_key + resample * $b_step) % $P AS x2,
        ($shuffle_key + resample * $b_step) % $P AS x3
    FROM cmp_resamples
),
cmp_resample_keys AS (
    SELECT resample, MIX(x1) AS k1, MIX(x2) AS k2, MIX(x3) AS k3 FROM cmp_resample_in
),
cmp_user_in AS (
    SELECT user_idx, (user_idx * $user_step + $user_shift) % $P AS x FROM cmp_users WHERE drawn = 1
),
cmp_user_keys AS (
    SELECT user_idx, MIX(x) AS k FROM cmp_user_in
),
cmp_draw_in AS (
    SELECT r.resample AS resample, u.user_idx AS user_idx, (r.k1 + u.k) % $P AS y1, (r.k2 + u.k) % $P AS y2
    FROM cmp_resample_keys AS r CROSS JOIN cmp_user_keys AS u
),
cmp_draw_mixed AS (
    SELECT resample, user_idx, MIX(y1) AS u1, MIX(y2) AS u2 FROM cmp_draw_in
),
cmp_draws AS (
    SELECT resample, user_idx, POISSON(u1) AS w, 1 - 2 * (u2 % 2) AS s FROM cmp_draw_mixed
)
SELECT * FROM cmp_draws
