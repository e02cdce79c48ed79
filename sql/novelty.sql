-- name: novelty
-- family: novelty
-- k: optional
-- population: lists
-- params: p enum(interactions, items) = interactions
-- needs: interactions if p = interactions; probability if p = items
-- stage: popularity if p = interactions; interaction_users if p = interactions
-- range: [0, inf)
-- formula: novelty@k = Σ_{i∈L} −log2 p_i / #L; p_i = n_i / U_I (users of interactions who saw i / all its users), or the items' given probability (p = items); an item with p = 0, never seen or without a probability adds 0 but counts in #L; 0 for an empty list
-- cite: Zhou, Kuscsik, Liu, Medo, Wakeling & Zhang, PNAS 2010 (self-information); Vargas & Castells, RecSys 2011
SELECT
    user_id,
    COALESCE(
        SUM(CASE WHEN src = 1 AND rank <= $k THEN
                CASE WHEN $p = 'items'
                     THEN CASE WHEN probability > 0 THEN -LN(probability) / LN(2) ELSE 0 END
                     ELSE CASE WHEN n_seen > 0 AND u_seen > 0 THEN -LN(CAST(n_seen AS DOUBLE) / u_seen) / LN(2) ELSE 0 END
                END
            END)
        / NULLIF(SUM(CASE WHEN src = 1 AND rank <= $k THEN 1 ELSE 0 END), 0),
        0) AS novelty
FROM ranked
GROUP BY user_id
