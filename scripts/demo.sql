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

-- Near-duplicate pairs, then groups: each document joins the group of its smallest
-- near neighbour (or its own), a one-step approximation of connected components that
-- simhash_clusters() will replace.
CREATE TEMP TABLE near_pairs AS
SELECT a.id AS id1, b.id AS id2, hamming(a.fp, b.fp) AS distance
FROM docs a JOIN docs b ON a.id < b.id AND hamming(a.fp, b.fp) <= :k;

CREATE TEMP TABLE groups AS
SELECT d.id, least(d.id, min(p.id1)) AS group_id
FROM docs d JOIN near_pairs p ON p.id2 = d.id
GROUP BY d.id
UNION ALL
SELECT DISTINCT p.id1, p.id1 FROM near_pairs p
WHERE NOT EXISTS (SELECT 1 FROM near_pairs q WHERE q.id2 = p.id1);

\echo
\echo '== Near-duplicate pairs by Hamming distance (k = ' :k ')'
SELECT distance, count(*) AS pairs FROM near_pairs GROUP BY distance ORDER BY distance;

\echo
\echo '== The largest near-duplicate groups'
SELECT r.name AS representative,
       count(*) AS members,
       max(hamming(r.fp, d.fp)) AS max_distance,
       left(string_agg(d.name, ', ' ORDER BY d.name) FILTER (WHERE d.id <> r.id), 110) AS others
FROM groups g JOIN docs d ON d.id = g.id JOIN docs r ON r.id = g.group_id
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
