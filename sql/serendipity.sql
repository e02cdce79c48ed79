-- name: serendipity
-- family: novelty
-- k: required
-- needs: interactions_or_expected_recs
-- stage: expected_recs; popularity
-- range: [0, 1]
-- formula: serendipity@k = Σ_{i∈L} hit_i · [i ∉ L_expected] / k; L_expected = the user's top k in expected_recs, or without one the k most popular items of interactions (n_i descending, ties by item id)
-- cite: Ge, Delgado-Battenfeld & Jannach, RecSys 2010; Murakami, Mori & Orihara, New Frontiers in Artificial Intelligence (JSAI 2007), LNCS 4914, 2008; Kaminskas & Bridge, ACM TiiS 2016
SELECT
    user_id,
    CAST(SUM(CASE WHEN src = 1 AND rank <= $k AND hit = 1
                   AND COALESCE(CASE WHEN $has_expected_recs = 'yes' THEN expected_rank ELSE pop_rank END, $k + 1) > $k
              THEN 1 ELSE 0 END) AS DOUBLE) / $k AS serendipity
FROM ranked
GROUP BY user_id
