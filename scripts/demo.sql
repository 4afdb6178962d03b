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
\echo '== Near-duplicate pairs by Hamming distance, up to' :k
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
\echo '== The farthest pairs still within k, texts not identical: what a near duplicate looks like'
SELECT a.name AS doc1, b.name AS doc2, p.distance,
       octet_length(a.body) AS bytes1, octet_length(b.body) AS bytes2
FROM near_pairs p JOIN docs a ON a.id = p.id1 JOIN docs b ON b.id = p.id2
WHERE a.body <> b.body
ORDER BY p.distance DESC, a.name, b.name
LIMIT 10;

-- Search through block indexes (simhash_create_index, simhash_near, simhash_nearest).
\echo
\echo '== Block indexes for radius search up to k'
SELECT index FROM simhash_create_index('docs', 'fp', :k) AS index;
SELECT index, radius, probes FROM simhash_search_plan('docs', 'fp', :k);

-- The document with the most near duplicates, and its neighbours found through the indexes.
SELECT q.id AS busy_id, q.name AS busy_name
FROM docs q WHERE q.fp IS NOT NULL
ORDER BY (SELECT count(*) FROM docs d WHERE simhash_near(d.fp, q.fp, :k)) DESC, q.name
LIMIT 1 \gset
\echo
\echo '== Near duplicates of' :busy_name '(through the indexes)'
SELECT d.name, hamming(d.fp, q.fp) AS distance, octet_length(d.body) AS bytes
FROM docs q JOIN docs d ON simhash_near(d.fp, q.fp, :k) AND d.id <> q.id
WHERE q.id = :busy_id
ORDER BY distance, d.name
LIMIT 8;

\echo
\echo '== Nearest documents to an edited copy of it (one word changed, upper case)'
SELECT (n.doc).name, n.distance
FROM simhash_nearest(NULL::docs, 'fp',
                     (SELECT simhash(upper(regexp_replace(body, '\mthe\M', 'a'))) FROM docs WHERE id = :busy_id),
                     5) n;

\echo
\echo '== Skew: the largest bucket of each block (rows sharing one block value)'
SELECT block, rows, fingerprints, round(ratio::numeric, 1) AS times_the_mean
FROM simhash_skew('docs', 'fp', 1);

-- Dedupe on insert: the same documents loaded into tables guarded by simhash_dedupe().
CREATE TABLE library (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text, body text,
                      fp bigint, dup_of bigint);
SELECT format('CREATE TRIGGER library_dedupe BEFORE INSERT OR UPDATE OF body, fp ON library FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L, %L)',
              'body', 'fp', :k, 'link', 'dup_of') \gexec
SELECT count(*) FROM simhash_create_index('library', 'fp', :k) \g /dev/null
INSERT INTO library (name, body) SELECT name, body FROM docs ORDER BY name;
\echo
\echo '== Dedupe on insert, policy link: each near duplicate points at an earlier original'
SELECT count(*) AS rows, count(dup_of) AS linked_to_an_original FROM library;
SELECT l.name, o.name AS duplicate_of, hamming(l.fp, o.fp) AS distance
FROM library l JOIN library o ON o.id = l.dup_of
ORDER BY distance DESC, l.name
LIMIT 8;

CREATE TABLE strict_library (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text, body text, fp bigint);
SELECT format('CREATE TRIGGER strict_dedupe BEFORE INSERT ON strict_library FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L)',
              'body', 'fp', :k, 'reject') \gexec
SELECT count(*) FROM simhash_create_index('strict_library', 'fp', :k) \g /dev/null
INSERT INTO strict_library (name, body) SELECT name, body FROM docs WHERE id = :busy_id;
CREATE FUNCTION pg_temp.try_insert(name text, body text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
    INSERT INTO strict_library (name, body) VALUES (name, body);
    RETURN 'inserted';
EXCEPTION WHEN unique_violation THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN format('rejected (SQLSTATE %s): %s %s', SQLSTATE, SQLERRM, detail);
END $$;
\echo
\echo '== Dedupe on insert, policy reject: an edited copy of' :busy_name
SELECT pg_temp.try_insert(name || ' (edited)', upper(regexp_replace(body, '\mthe\M', 'a'))) AS result
FROM docs WHERE id = :busy_id;

-- Verified near duplicates: the real share of 5-character shingles, not a Hamming radius.
\echo
\echo '== Verified near duplicates: pairs of documents sharing at least 80 % of their shingles'
-- (work_mem for the shingle sets, about 6 times the text, so that the pairs are found in
-- memory; with less the call goes on through temporary tables, about 6 times slower)
SET work_mem = '256MB';
CREATE TEMP TABLE similar_pairs AS
SELECT * FROM simhash_similar_pairs('SELECT id, body FROM docs', 0.8);
RESET work_mem;
SELECT count(*) AS pairs_at_0_8,
       count(*) FILTER (WHERE similarity = 1) AS identical_after_normalization,
       (SELECT count(*) FROM near_pairs) AS pairs_within_k,
       count(*) FILTER (WHERE NOT EXISTS (SELECT FROM near_pairs n WHERE n.id1 = s.id1 AND n.id2 = s.id2))
           AS not_within_k
FROM similar_pairs s;

\echo
\echo '== The least similar of them (each a real near duplicate, similarity exact)'
SELECT a.name AS doc1, b.name AS doc2, round(s.similarity::numeric, 3) AS similarity,
       hamming(a.fp, b.fp) AS distance
FROM similar_pairs s JOIN docs a ON a.id = s.id1 JOIN docs b ON b.id = s.id2
ORDER BY s.similarity, a.name, b.name
LIMIT 8;

\echo
\echo '== Search with a threshold: LSH keys with a GIN index, then the similarity'
ALTER TABLE docs ADD COLUMN lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED;
CREATE INDEX docs_lsh ON docs USING gin (lsh);
ANALYZE docs;
SELECT d.name, round(simhash_jaccard(d.body, q.body)::numeric, 3) AS similarity
FROM docs d, (SELECT regexp_replace(body, '\mthe\M', 'a') AS body FROM docs WHERE id = :busy_id) q
WHERE d.lsh && simhash_lsh(q.body) AND simhash_jaccard(d.body, q.body) >= 0.8
ORDER BY similarity DESC, d.name
LIMIT 8;

\echo
\echo '== Keeping one document per cluster, twice: the second run finds nothing to delete'
WITH gone AS (
    DELETE FROM docs d USING simhash_clusters('SELECT id, fp FROM docs', :k) c
    WHERE d.id = c.id AND c.id <> c.cluster_id
    RETURNING d.id)
SELECT (SELECT count(*) FROM gone) AS deleted, (SELECT count(*) FROM docs) - (SELECT count(*) FROM gone) AS left;
WITH gone AS (
    DELETE FROM docs d USING simhash_clusters('SELECT id, fp FROM docs', :k) c
    WHERE d.id = c.id AND c.id <> c.cluster_id
    RETURNING d.id)
SELECT (SELECT count(*) FROM gone) AS deleted_again;
