-- Position discounts (README, "Metrics"), chosen by a metric's `discount` option and written DISCOUNT(x) in
-- metric files; x is a 1-based position. A custom discount is a SQL expression in `rank`.
-- log2: 1 / log2(i + 1) (Burges et al. 2005; trec_eval ndcg)
-- jarvelin: 1 / max(1, log2 i) (Järvelin & Kekäläinen, TOIS 2002, base b = 2)
-- Written with LN, which every SQL engine has (a two-argument LOG is missing or reversed in some).
SELECT
    LN(2) / LN(rank + 1) AS log2,
    1 / GREATEST(1, LN(rank) / LN(2)) AS jarvelin
