-- name: diversity
-- family: diversity
-- k: required
-- population: lists
-- params: by enum(category, features) = category
-- needs: category if by = category; features if by = features
-- stage: pairs; categories if by = category; feature_vectors if by = features
-- range: [0, 1] if by = category; [0, 2]
-- formula: intra-list diversity@k = mean over pairs i < j of L of the dissimilarity: 1 if the categories differ, else 0 (by = category); 1 − cosine of the feature vectors (by = features); pairs with a missing category or vector (or a zero vector) are skipped; NULL when no pair is left (#L < 2)
-- cite: Ziegler, McNee, Konstan & Lausen, WWW 2005 (intra-list similarity); Smyth & McClave, ICCBR 2001
SELECT
    user_id,
    AVG(CASE WHEN src = 6 AND rank <= $k THEN
            CASE WHEN $by = 'features' THEN pair_feature_dissim ELSE pair_category_dissim END
        END) AS diversity
FROM ranked
GROUP BY user_id
