-- name: ee_d
-- family: fairness
-- k: required
-- population: truth
-- params: model enum(rbp, gerr) = rbp; patience number in (0, 1) = 0.5; utility number in (0, 1) = 0.5
-- stage: expected_exposure
-- let: ee_row = src = 17 AND cut = $k AND ee_model = $model AND ee_patience = $patience AND ee_utility = CASE WHEN $model = 'gerr' THEN $utility ELSE 0 END
-- range: [0, inf)
-- formula: EE-D@k = Σ_d ε_d², the disparity of the expected exposure ε_d = (1/S) Σ_s e(position of d in sample s's top k) over the run's S sampled lists (sample_col; a run without samples is its own one sample), e(i) = patience^i at the 0-based position i (model = rbp) or patience^i·(1 − utility)^(relevant items above it) (model = gerr); lower is more equal exposure: a ranking that shuffles items of equal merit spreads it
-- cite: Diaz, Mitra, Ekstrand, Biega & Carterette, "Evaluating Stochastic Rankings with Expected Exposure", CIKM 2020 (EE-D); raw values as TREC Fair Ranking 2021/22 report them
SELECT
    user_id,
    SUM(CASE WHEN ee_row() THEN ee_exposure * ee_exposure END) AS ee_d
FROM ranked
GROUP BY user_id
