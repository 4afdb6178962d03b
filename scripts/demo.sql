-- The demo's report, run by scripts/demo.sh against a table
--   docs(id bigint, name text, body text, fp bigint = simhash(body), lsh bigint[] = simhash_lsh(body))
-- with psql variables :t, the similarity threshold (share of shared 5-character shingles),
-- and :k, the Hamming radius of the fast, approximate layer shown at the end.
--
-- Similarity first: every pair called a near duplicate below is verified, its similarity
-- exact (simhash_jaccard). The 64-bit fingerprints and their Hamming distance come last, as
-- the fast proxy they are.
\pset footer off
\pset null '(null)'
\set ON_ERROR_STOP on

-- A short name for a document: the package of /usr/share/doc/PACKAGE/copyright, else the path.
CREATE FUNCTION pg_temp.short(name text) RETURNS text LANGUAGE sql IMMUTABLE
    RETURN regexp_replace(name, '^/usr/share/doc/([^/]+)/copyright$', '\1');

\echo
\echo '== 1. The documents loaded'
SELECT count(*) AS documents,
       count(*) FILTER (WHERE cardinality(lsh) = 0) AS without_a_character,
       pg_size_pretty(sum(octet_length(body))) AS text
FROM docs;

-- Every pair of documents whose texts share at least :t of their shingles, with that share.
-- (work_mem for the shingle sets, about 6 times the text, so that the pairs are found in
-- memory; with less the call goes on through temporary tables, about 6 times slower.)
SET work_mem = '256MB';
CREATE TEMP TABLE similar_pairs AS
SELECT * FROM simhash_similar_pairs('SELECT id, body FROM docs', :t);
CREATE TEMP TABLE similar_clusters AS
SELECT * FROM simhash_similar_clusters('SELECT id, body FROM docs', :t);
RESET work_mem;

\echo
\echo '== 2. Near duplicates: the pairs of documents sharing at least' :t 'of their 5-character shingles'
\echo '   (simhash_similar_pairs; pairs = identical once case, spaces and punctuation are ignored + similar)'
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE similarity = 1) AS identical,
       count(*) FILTER (WHERE similarity < 1) AS similar,
       round(min(similarity)::numeric, 3) AS least_similarity
FROM similar_pairs;

\echo
\echo '== Side by side: near duplicates that are not identical, the least similar two of each band'
SELECT band, doc1, doc2, similarity, bytes1, bytes2
FROM (SELECT CASE WHEN s.similarity >= 0.95 THEN '0.95 - 1' WHEN s.similarity >= 0.9 THEN '0.90 - 0.95'
                  WHEN s.similarity >= 0.85 THEN '0.85 - 0.90' ELSE 'up to 0.85' END AS band,
             pg_temp.short(a.name) AS doc1, pg_temp.short(b.name) AS doc2,
             round(s.similarity::numeric, 3) AS similarity,
             octet_length(a.body) AS bytes1, octet_length(b.body) AS bytes2,
             row_number() OVER (PARTITION BY width_bucket(s.similarity, 0.8, 1.0, 4)
                                ORDER BY s.similarity, a.name, b.name) AS nth
      FROM similar_pairs s JOIN docs a ON a.id = s.id1 JOIN docs b ON b.id = s.id2
      WHERE s.similarity < 1) x
WHERE nth <= 2
ORDER BY similarity, doc1, doc2;

-- The least similar pair, to show what "near duplicate" means at this threshold.
SELECT count(*) > 0 AS any_pairs FROM similar_pairs \gset
\if :any_pairs
SELECT s.id1 AS a_id, s.id2 AS b_id,
       format('== What differs in the least similar pair, %s and %s (similarity %s): the words found in only one of them',
              pg_temp.short(a.name), pg_temp.short(b.name), round(s.similarity::numeric, 3)) AS differs_title
FROM similar_pairs s JOIN docs a ON a.id = s.id1 JOIN docs b ON b.id = s.id2
ORDER BY s.similarity, a.name, b.name
LIMIT 1 \gset
\echo
\echo :differs_title
WITH words AS (
    SELECT d.id, w.word, min(w.ord) AS first
    FROM docs d, regexp_split_to_table(lower(d.body), '[^[:alnum:]]+') WITH ORDINALITY AS w(word, ord)
    WHERE d.id IN (:a_id, :b_id) AND w.word <> ''
    GROUP BY d.id, w.word)
SELECT pg_temp.short(d.name) AS document,
       count(*) FILTER (WHERE o.word IS NULL) AS own_words,
       count(*) FILTER (WHERE o.word IS NOT NULL) AS shared_words,
       left(string_agg(w.word, ' ' ORDER BY w.first) FILTER (WHERE o.word IS NULL), 100) AS first_own_words
FROM words w JOIN docs d ON d.id = w.id
     LEFT JOIN words o ON o.word = w.word AND o.id <> w.id
GROUP BY d.id, d.name
ORDER BY d.id;
\endif

\echo
\echo '== 3. Clusters (simhash_similar_clusters): keeping one document per cluster'
\echo '   documents = without_near_duplicate + in_clusters;  in_clusters = clusters + to_delete;  kept = documents - to_delete'
SELECT count(*) AS documents,
       count(*) FILTER (WHERE c.id IS NULL) AS without_near_duplicate,
       count(c.id) AS in_clusters,
       count(DISTINCT c.cluster_id) AS clusters,
       count(*) FILTER (WHERE c.id <> c.cluster_id) AS to_delete,
       count(*) - count(*) FILTER (WHERE c.id <> c.cluster_id) AS kept
FROM docs d LEFT JOIN similar_clusters c ON c.id = d.id;

\echo
\echo '== The largest clusters, named by the document kept (its smallest id)'
\echo '   (weakest_link: the lowest similarity with which a member joins its cluster)'
SELECT pg_temp.short(r.name) AS kept,
       count(*) AS members,
       round(min(c.similarity)::numeric, 3) AS weakest_link,
       left(string_agg(pg_temp.short(d.name), ', ' ORDER BY d.name) FILTER (WHERE d.id <> r.id), 90) AS others
FROM similar_clusters c JOIN docs d ON d.id = c.id JOIN docs r ON r.id = c.cluster_id
GROUP BY r.id, r.name
ORDER BY members DESC, kept
LIMIT 10;

-- The document with the most near duplicates, and an edited copy of it: every "the"
-- replaced by "a", and upper case.
SELECT d.id AS busy_id, pg_temp.short(d.name) AS busy_name
FROM docs d LEFT JOIN similar_pairs s ON d.id IN (s.id1, s.id2)
WHERE cardinality(d.lsh) > 0
GROUP BY d.id, d.name
ORDER BY count(s.id1) DESC, d.name
LIMIT 1 \gset
CREATE TEMP TABLE query AS
SELECT upper(regexp_replace(body, '\mthe\M', 'a', 'gi')) AS body FROM docs WHERE id = :busy_id;

\echo
\echo '== 4. Search with a threshold: documents sharing at least' :t 'with an edited copy of' :busy_name
\echo '   (body %~ query through a GIN index on the text, simhash_ops: its LSH keys find the'
\echo '   candidates, the exact similarity checks them; ordered by body <%> query)'
CREATE INDEX docs_body_sim ON docs USING gin (body simhash_ops);
ANALYZE docs;
SELECT set_config('simhash.similarity_threshold', :'t', false) \g /dev/null
SELECT pg_temp.short(d.name) AS document, round((1 - (d.body <%> q.body))::numeric, 3) AS similarity
FROM docs d, query q
WHERE d.body %~ q.body
ORDER BY d.body <%> q.body, document
LIMIT 8;

-- Dedupe on insert: the same documents loaded again, into a table guarded by
-- simhash_dedupe() with the threshold.
CREATE TABLE library (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text, body text,
                      lsh bigint[], dup_of bigint);
CREATE INDEX library_lsh ON library USING gin (lsh) WITH (fastupdate = off);
SELECT format('CREATE TRIGGER library_dedupe BEFORE INSERT OR UPDATE OF body, lsh ON library FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L, %L)',
              'body', 'lsh', :'t', 'link', 'dup_of') \gexec
INSERT INTO library (name, body) SELECT name, body FROM docs ORDER BY id;
\echo
\echo '== 5. Dedupe on insert, policy link: each near duplicate points at an earlier document'
\echo '   (rows = originals + linked). The counts differ a little from step 3''s kept and'
\echo '   to_delete: a cluster joins whole chains of pairs at once, while the trigger sees one'
\echo '   row at a time, in id order, and links it to the best earlier row within the threshold.'
SELECT count(*) AS rows, count(*) FILTER (WHERE dup_of IS NULL) AS originals,
       count(dup_of) AS linked
FROM library;
SELECT pg_temp.short(l.name) AS document, pg_temp.short(o.name) AS near_duplicate_of,
       round(simhash_jaccard(l.body, o.body)::numeric, 3) AS similarity
FROM library l JOIN library o ON o.id = l.dup_of
ORDER BY similarity, document
LIMIT 6;

CREATE TABLE strict_library (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text,
                             body text, lsh bigint[]);
CREATE INDEX strict_library_lsh ON strict_library USING gin (lsh) WITH (fastupdate = off);
SELECT format('CREATE TRIGGER strict_dedupe BEFORE INSERT ON strict_library FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L)',
              'body', 'lsh', :'t', 'reject') \gexec
INSERT INTO strict_library (name, body) SELECT name, body FROM docs WHERE id = :busy_id;
CREATE FUNCTION pg_temp.try_insert(name text, body text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
    INSERT INTO strict_library (name, body) VALUES (name, body);
    RETURN 'inserted';
EXCEPTION WHEN unique_violation THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN format('rejected (SQLSTATE %s): %s', SQLSTATE, detail);
END $$;
\echo
\echo '== Dedupe on insert, policy reject: the edited copy of' :busy_name
SELECT pg_temp.try_insert('edited copy', body) AS result FROM query;

\echo
\echo '== 6. The fast, approximate layer: 64-bit SimHash fingerprints within' :k 'bits (simhash_pairs)'
\echo '   A Hamming radius is a proxy, for speed and for fingerprints stored without their texts:'
\echo '   within_k = verified + not_near_duplicates;  near_duplicate_pairs = verified + farther_than_k'
CREATE TEMP TABLE near_pairs AS
SELECT * FROM simhash_pairs('SELECT id, fp FROM docs', :k);
SELECT (SELECT count(*) FROM near_pairs) AS within_k,
       (SELECT count(*) FROM near_pairs n JOIN similar_pairs s USING (id1, id2)) AS verified,
       (SELECT count(*) FROM near_pairs n WHERE NOT EXISTS
            (SELECT FROM similar_pairs s WHERE s.id1 = n.id1 AND s.id2 = n.id2)) AS not_near_duplicates,
       (SELECT count(*) FROM similar_pairs) AS near_duplicate_pairs,
       (SELECT count(*) FROM similar_pairs s WHERE NOT EXISTS
            (SELECT FROM near_pairs n WHERE n.id1 = s.id1 AND n.id2 = s.id2)) AS farther_than_k;

\echo
\echo '== Nearest fingerprints to the edited copy, through B-tree block indexes (simhash_nearest),'
\echo '   with the similarity that decides'
SELECT count(*) AS block_indexes FROM simhash_create_index('docs', 'fp', :k) \g /dev/null
SELECT pg_temp.short((n.doc).name) AS document, n.distance AS hamming_distance,
       round(simhash_jaccard((n.doc).body, q.body)::numeric, 3) AS similarity
FROM query q, simhash_nearest(NULL::docs, 'fp', simhash(q.body), 5) n;

-- Keeping one document per cluster. A cluster is a chain of verified pairs: a deleted
-- document is a near duplicate of the kept one, or of another member that is.
SELECT count(*) FILTER (WHERE simhash_jaccard(d.body, r.body) >= :t) AS direct,
       count(*) FILTER (WHERE simhash_jaccard(d.body, r.body) < :t) AS chained
FROM similar_clusters c JOIN docs d ON d.id = c.id JOIN docs r ON r.id = c.cluster_id
WHERE c.id <> c.cluster_id \gset
\echo
\echo '== 7. Keeping one document per cluster (simhash_similar_clusters), twice: the second run deletes nothing'
\echo '   Of the deleted documents,' :direct 'share at least' :t 'with the one kept and' :chained 'are joined to it through a chain of such pairs.'
SET work_mem = '256MB';
WITH gone AS (
    DELETE FROM docs d USING simhash_similar_clusters('SELECT id, body FROM docs', :t) c
    WHERE d.id = c.id AND c.id <> c.cluster_id
    RETURNING d.id)
SELECT (SELECT count(*) FROM gone) AS deleted, (SELECT count(*) FROM docs) - (SELECT count(*) FROM gone) AS kept;
WITH gone AS (
    DELETE FROM docs d USING simhash_similar_clusters('SELECT id, body FROM docs', :t) c
    WHERE d.id = c.id AND c.id <> c.cluster_id
    RETURNING d.id)
SELECT (SELECT count(*) FROM gone) AS deleted_again;
RESET work_mem;
