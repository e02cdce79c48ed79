-- Gain functions (README, "How a list is scored", step 4), chosen by a metric's `gain` option and
-- written GAIN() in metric files.
-- gain = max(relevance, 0), unjudged 0; hit = 1 when relevance >= threshold.
-- linear: the relevance itself (trec_eval, Järvelin & Kekäläinen 2002)
-- exponential: gain_exp = 2^gain - 1 (Burges et al., ICML 2005), computed by the stage
-- binary: 1 for a relevant item, else 0 (RePlay, Spark RankingMetrics)
SELECT
    gain AS linear,
    gain_exp AS exponential,
    CAST(hit AS DOUBLE) AS binary
