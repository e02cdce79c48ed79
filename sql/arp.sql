-- name: arp
-- family: long_tail
-- k: optional
-- population: lists
-- needs: interactions
-- stage: popularity
-- range: [0, inf)
-- formula: ARP@k = Σ_{i∈L} n_i / #L, n_i = users of interactions who saw item i (0 if never seen); 0 for an empty list
-- cite: Abdollahpouri, Burke & Mobasher, FLAIRS 2019 (average recommendation popularity, ARP)
SELECT
    user_id,
    COALESCE(
        CAST(SUM(CASE WHEN src = 1 AND rank <= $k THEN COALESCE(n_seen, 0) END) AS DOUBLE)
        / NULLIF(SUM(CASE WHEN src = 1 AND rank <= $k THEN 1 ELSE 0 END), 0),
        0) AS arp
FROM ranked
GROUP BY user_id
