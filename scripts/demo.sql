-- The demo's report, run by scripts/demo.sh against a table
--   docs(id bigint, name text, body text, fp bigint = simhash(body))
-- with psql variable :k, the maximum Hamming distance of a near duplicate.
\pset footer off
\pset null '(null)'

\echo
\echo '== Fingerprinted documents'
SELECT count(*) AS documents,
       count(fp) AS with_fingerprint,
       count(*) - count(fp) AS without_tokens,
       pg_size_pretty(sum(octet_length(body))) AS text
FROM docs;

-- Every near-duplicate pair, and the clusters they join into (connected components,
-- named by their smallest id), found inside the database by simhash_pairs() and
-- simhash_clusters().
CREATE TEMP TABLE near_pairs AS
SELECT * FROM simhash_pairs('SELECT id, fp FROM docs', :k);

CREATE TEMP TABLE clusters AS
SELECT * FROM simhash_clusters('SELECT id, fp FROM docs', :k);

\echo
\echo '== Near-duplicate pairs by Hamming distance (k = ' :k ')'
SELECT distance, count(*) AS pairs FROM near_pairs GROUP BY distance ORDER BY distance;

\echo
\echo '== Clusters: what keeping one document per cluster would leave'
SELECT count(*) AS documents,
       count(*) FILTER (WHERE c.id IS NULL) AS without_near_duplicate,
       count(DISTINCT c.cluster_id) AS clusters,
       count(*) FILTER (WHERE c.id <> c.cluster_id) AS duplicates_to_drop,
       count(*) - count(*) FILTER (WHERE c.id <> c.cluster_id) AS documents_kept
FROM docs d LEFT JOIN clusters c ON c.id = d.id
WHERE d.fp IS NOT NULL;

\echo
\echo '== The largest clusters (named by their first document; distance to it)'
SELECT r.name AS representative,
       count(*) AS members,
       max(c.distance) AS max_distance,
       left(string_agg(d.name, ', ' ORDER BY d.name) FILTER (WHERE d.id <> r.id), 110) AS others
FROM clusters c JOIN docs d ON d.id = c.id JOIN docs r ON r.id = c.cluster_id
GROUP BY r.id, r.name
ORDER BY members DESC, representative
LIMIT 15;

\echo
\echo '== Closest pairs that are not identical texts: what a near duplicate looks like'
SELECT a.name AS doc1, b.name AS doc2, p.distance,
       octet_length(a.body) AS bytes1, octet_length(b.body) AS bytes2
FROM near_pairs p JOIN docs a ON a.id = p.id1 JOIN docs b ON b.id = p.id2
WHERE a.body <> b.body
ORDER BY p.distance DESC, a.name, b.name
LIMIT 10;
