-- Verified near duplicates: simhash_jaccard / simhash_containment / simhash_shingles, and
-- simhash_similar_pairs / simhash_similar_clusters against a brute force whose shingle
-- Jaccard is computed independently, in plain SQL.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- Known values: abcdefg and abcdefh share 2 of 4 shingles; normalization ignores case, white
-- space and punctuation; a text shorter than 5 characters is one shingle.
SELECT simhash_jaccard('abcdefg', 'abcdefh') AS half,
       simhash_jaccard('Permission is hereby granted, free of charge.',
                       'PERMISSION   IS HEREBY granted free of charge') AS same,
       simhash_jaccard('abc', 'ABC!') AS short_same,
       simhash_jaccard('abc', 'abd') AS short_different,
       simhash_jaccard('', 'abcdef') AS one_empty,
       simhash_jaccard('', '...') IS NULL AS both_empty_null,
       simhash_jaccard(NULL, 'abc') IS NULL AS strict;
SELECT simhash_containment('abcdefg', 'xx abcdefg yy') AS inside,
       round(simhash_containment('xx abcdefg yy', 'abcdefg')::numeric, 4) AS partly,
       simhash_containment('...', 'abc') IS NULL AS empty_null;
-- Chinese and Japanese are shingled by characters.
SELECT cardinality(simhash_shingles('自由软件基金会')) AS zh_shingles,
       simhash_jaccard('自由软件基金会', '自由软件基金会。') AS zh_same,
       round(simhash_jaccard('これはテストの文章です', 'これはテストの文章でした')::numeric, 4) AS ja;
-- The stored set gives the same answers, and is simhash_features(body, 'char', 5).
SELECT simhash_jaccard(simhash_shingles('abcdefg'), simhash_shingles('abcdefh')) AS from_sets,
       simhash_containment(simhash_shingles('abcdefg'), simhash_shingles('xx abcdefg yy')) AS contained,
       cardinality(simhash_shingles('')) AS empty_set,
       simhash_shingles('the quick brown fox') =
           (SELECT array_agg(f.feature ORDER BY (f.feature::bit(64))::text)
            FROM simhash_features('the quick brown fox', 'char', 5) f) AS same_as_features;
-- Sets that are not made by simhash_shingles are refused.
SELECT simhash_jaccard(ARRAY[2, 1]::bigint[], ARRAY[1]::bigint[]);
SELECT simhash_jaccard(ARRAY[1, 1]::bigint[], ARRAY[1]::bigint[]);
SELECT simhash_jaccard(ARRAY[1, NULL]::bigint[], ARRAY[1]::bigint[]);
SELECT simhash_jaccard(ARRAY[[1, 2]]::bigint[], ARRAY[1]::bigint[]);
SELECT simhash_jaccard('{}'::bigint[], '{}'::bigint[]) IS NULL AS both_empty_null;

-- LSH keys: 20 a text (none without characters), the same from the text or its set, equal
-- for texts equal after normalization, and golden values that must never change (stored
-- keys are searched with keys computed later).
SELECT cardinality(simhash_lsh('The quick brown fox jumps over the lazy dog')) AS keys,
       cardinality(simhash_lsh('... !!!')) AS no_char_keys,
       simhash_lsh(simhash_shingles('The quick brown fox')) = simhash_lsh('The quick brown fox') AS from_set,
       simhash_lsh('The Quick, brown FOX') = simhash_lsh('the quick brown fox') AS normalized,
       simhash_lsh('自由软件基金会') && simhash_lsh('自由软件基金会。') AS zh_shared,
       simhash_lsh(NULL) IS NULL AS strict;
SELECT (simhash_lsh('The quick brown fox jumps over the lazy dog'))[1:3] AS golden_en,
       (simhash_lsh('abc'))[1:2] AS golden_short,
       (simhash_lsh('これはテストの文章です'))[20] AS golden_ja;
-- The digest of the shingle set: equal for texts equal once normalized, NULL without a
-- character, and a golden value.
SELECT simhash_shingle_digest('The Quick, brown FOX!') = simhash_shingle_digest('the quick brown fox') AS normalized_equal,
       simhash_shingle_digest('the quick brown fox') <> simhash_shingle_digest('the quick brown fax') AS different,
       simhash_shingle_digest('... !!!') IS NULL AS no_char_null,
       simhash_shingle_digest('The quick brown fox jumps over the lazy dog') AS golden;
-- The summary is the digest and the keys from one shingling; both NULL without a character.
SELECT s.digest = simhash_shingle_digest('The quick brown fox') AS same_digest,
       s.keys = simhash_lsh('The quick brown fox') AS same_keys
FROM simhash_shingle_summary('The quick brown fox') s;
SELECT s.digest IS NULL AND s.keys IS NULL AS both_null FROM simhash_shingle_summary('... !!!') s;
-- Keys of a set given as an array: the same rules as the other set functions.
SELECT simhash_lsh(ARRAY[1, NULL]::bigint[]);
SELECT simhash_lsh(ARRAY[[1, 2]]::bigint[]);
SELECT cardinality(simhash_lsh('{}'::bigint[])) AS empty_set_no_keys;
-- Keys shared by band position: a pair shares a key when some band agrees.
SELECT count(*) FILTER (WHERE k.a = k.b) AS bands_shared
FROM unnest(simhash_lsh('Permission is hereby granted, free of charge, to any person obtaining a copy'),
            simhash_lsh('Permission is hereby granted, free of charge, to any person obtaining a copy of this software')) AS k (a, b);

-- The test collection: 14 licence sentences and 12 deterministic edits of each (a word
-- dropped, a word replaced, words swapped, case and punctuation changed, text appended),
-- exact copies, short texts, texts without characters and a NULL text.
CREATE TABLE sim_docs (id integer PRIMARY KEY, body text);
CREATE TABLE sim_base (b integer, body text);
INSERT INTO sim_base VALUES
 (1, 'Permission is hereby granted free of charge to any person obtaining a copy of this software and associated documentation files'),
 (2, 'The above copyright notice and this permission notice shall be included in all copies or substantial portions of the Software'),
 (3, 'This program is free software you can redistribute it and or modify it under the terms of the GNU General Public License'),
 (4, 'This program is distributed in the hope that it will be useful but WITHOUT ANY WARRANTY without even the implied warranty'),
 (5, 'Redistribution and use in source and binary forms with or without modification are permitted provided that the following conditions are met'),
 (6, 'Licensed under the Apache License Version 2.0 you may not use this file except in compliance with the License'),
 (7, 'THE SOFTWARE IS PROVIDED AS IS WITHOUT WARRANTY OF ANY KIND EXPRESS OR IMPLIED INCLUDING BUT NOT LIMITED TO THE WARRANTIES'),
 (8, 'On Debian systems the complete text of the GNU General Public License version 2 can be found in the file usr share common licenses'),
 (9, 'Neither the name of the copyright holder nor the names of its contributors may be used to endorse or promote products derived'),
 (10, 'You should have received a copy of the GNU Lesser General Public License along with this library if not write to the Free Software Foundation'),
 (11, 'In no event shall the authors or copyright holders be liable for any claim damages or other liability whether in an action of contract'),
 (12, 'Everyone is permitted to copy and distribute verbatim copies of this license document but changing it is not allowed'),
 (13, 'The licenses for most software are designed to take away your freedom to share and change it'),
 (14, 'This package was debianized by its maintainer and the packaging is licensed under the same terms as the software itself');
INSERT INTO sim_docs (id, body)
SELECT b * 100 + v,
       CASE v
         WHEN 0 THEN s.body
         WHEN 1 THEN array_to_string(w[1:n/2] || w[n/2+2:n], ' ')
         WHEN 2 THEN array_to_string(w[1:2] || ARRAY['changed'] || w[4:n], ' ')
         WHEN 3 THEN array_to_string(w[1:n-2] || ARRAY[w[n], w[n-1]], ' ')
         WHEN 4 THEN upper(replace(s.body, ' ', ', '))
         WHEN 5 THEN s.body || ' and also a short remark at the end'
         WHEN 6 THEN array_to_string(w[3:n], ' ')
         WHEN 7 THEN array_to_string(w[1:n/3] || ARRAY['several', 'new', 'words', 'here'] || w[n/3+1:n], ' ')
         WHEN 8 THEN array_to_string(w[n/2+1:n] || w[1:n/2], ' ')
         WHEN 9 THEN s.body
         WHEN 10 THEN array_to_string(w[1:n-5], ' ')
         WHEN 11 THEN replace(s.body, 'e', 'é')
         ELSE array_to_string(w[1:3] || w[5:7] || w[9:n], ' ')
       END
FROM sim_base s, LATERAL (SELECT string_to_array(s.body, ' ') AS w) a,
     LATERAL (SELECT cardinality(a.w) AS n) c,
     generate_series(0, 12) v;
INSERT INTO sim_docs VALUES (1, 'abc'), (2, 'ABC'), (3, 'abd'), (4, ''), (5, '?!'), (6, NULL),
                            (7, '自由软件基金会的通用公共许可证'), (8, '自由软件基金会的通用公共许可证。'),
                            (9, '自由软件基金会的宽通用公共许可证');

-- The independent reference: normalized characters of these texts are the letters and
-- digits, lower-cased (é folds to é itself), white space and punctuation dropped; a shingle
-- is 5 consecutive characters, or the whole text when shorter.
CREATE TABLE sim_ref AS
SELECT d.id, s.shingle
FROM sim_docs d,
     LATERAL (SELECT lower(regexp_replace(d.body, '[^[:alnum:]]', '', 'g')) AS t) n,
     LATERAL (SELECT DISTINCT CASE WHEN length(n.t) < 5 THEN n.t ELSE substr(n.t, i, 5) END AS shingle
              FROM generate_series(1, greatest(length(n.t) - 4, 1)) i) s
WHERE length(n.t) > 0;
CREATE TABLE sim_truth AS
WITH sizes AS (SELECT id, count(*) AS n FROM sim_ref GROUP BY id),
common AS (SELECT x.id AS id1, y.id AS id2, count(*) AS c
           FROM sim_ref x JOIN sim_ref y ON x.shingle = y.shingle AND x.id < y.id
           GROUP BY 1, 2)
SELECT a.id AS id1, b.id AS id2,
       coalesce(c.c, 0)::float8 / (a.n + b.n - coalesce(c.c, 0)) AS jaccard
FROM sizes a JOIN sizes b ON a.id < b.id
LEFT JOIN common c ON c.id1 = a.id AND c.id2 = b.id;

-- simhash_jaccard equals the reference on every pair.
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE abs(simhash_jaccard(a.body, b.body) - t.jaccard) > 1e-12) AS differ
FROM sim_truth t JOIN sim_docs a ON a.id = t.id1 JOIN sim_docs b ON b.id = t.id2;

-- simhash_similar_pairs: every returned pair is right (its similarity is the reference's and
-- at least the threshold); and how many reference pairs it finds, per threshold.
CREATE TABLE sim_found AS
SELECT t.threshold, p.*
FROM (VALUES (0.5), (0.7), (0.8), (0.9)) t (threshold),
     LATERAL simhash_similar_pairs('SELECT id, body FROM sim_docs', t.threshold) p;
SELECT f.threshold, count(*) AS returned,
       count(*) FILTER (WHERE r.jaccard IS NULL OR abs(r.jaccard - f.similarity) > 1e-12
                              OR f.similarity < f.threshold OR f.id1 >= f.id2) AS wrong
FROM sim_found f LEFT JOIN sim_truth r ON r.id1 = f.id1 AND r.id2 = f.id2
GROUP BY 1 ORDER BY 1;
SELECT t.threshold, count(r.*) AS reference_pairs, count(f.id1) AS found,
       round(count(f.id1)::numeric / count(r.*), 3) AS recall
FROM (VALUES (0.5), (0.7), (0.8), (0.9)) t (threshold)
JOIN sim_truth r ON r.jaccard >= t.threshold
LEFT JOIN sim_found f ON f.threshold = t.threshold AND f.id1 = r.id1 AND f.id2 = r.id2
GROUP BY 1 ORDER BY 1;
-- The pairs missed at 0.8, if any, with their reference similarity.
SELECT r.id1, r.id2, round(r.jaccard::numeric, 3) AS jaccard
FROM sim_truth r LEFT JOIN sim_found f ON f.threshold = 0.8 AND f.id1 = r.id1 AND f.id2 = r.id2
WHERE r.jaccard >= 0.8 AND f.id1 IS NULL ORDER BY 1, 2;
-- Exact copies and copies that differ only in case are pairs of similarity 1.
SELECT id1, id2, similarity FROM sim_found
WHERE threshold = 0.9 AND id1 < 10 ORDER BY 1, 2;

-- simhash_similar_clusters: the connected components of the pairs, named by their smallest
-- id, checked against a transitive closure of simhash_similar_pairs in SQL.
CREATE TABLE sim_clusters AS
SELECT * FROM simhash_similar_clusters('SELECT id, body FROM sim_docs', 0.8);
WITH RECURSIVE e AS (SELECT id1 AS a, id2 AS b FROM sim_found WHERE threshold = 0.8
                     UNION SELECT id2, id1 FROM sim_found WHERE threshold = 0.8),
reach (a, b) AS (SELECT a, a FROM e UNION SELECT r.a, e.b FROM reach r JOIN e ON e.a = r.b),
want AS (SELECT a AS id, min(b) AS cluster_id FROM reach GROUP BY a)
SELECT (SELECT count(*) FROM want) AS rows_,
       (SELECT count(DISTINCT cluster_id) FROM want) AS clusters,
       (SELECT count(*) FROM want w FULL JOIN sim_clusters c USING (id)
        WHERE w.cluster_id IS DISTINCT FROM c.cluster_id) AS differ,
       (SELECT count(*) FROM sim_clusters c
        WHERE c.similarity IS DISTINCT FROM
              (SELECT max(f.similarity) FROM sim_found f
               WHERE f.threshold = 0.8 AND c.id IN (f.id1, f.id2))) AS wrong_similarity;

-- Search with a threshold, the documented recipe: a stored column of LSH keys with a GIN
-- index, rows sharing a key with the query's, then verification. Against a scan that
-- computes the similarity of every row.
ALTER TABLE sim_docs ADD COLUMN lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED;
CREATE INDEX sim_docs_lsh ON sim_docs USING gin (lsh);
ANALYZE sim_docs;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM sim_docs WHERE lsh && simhash_lsh('some text');
CREATE TABLE sim_search AS
SELECT q.id AS qid, d.id, simhash_jaccard(d.body, q.body) AS similarity
FROM sim_docs q, sim_docs d
WHERE q.id % 100 IN (0, 4, 7) AND d.id <> q.id
  AND d.lsh && simhash_lsh(q.body)
  AND simhash_jaccard(d.body, q.body) >= 0.8;
RESET enable_seqscan;
SELECT (SELECT count(*) FROM sim_search) AS found,
       count(*) AS scan,
       count(*) FILTER (WHERE s.id IS NULL) AS missed
FROM sim_docs q JOIN sim_docs d ON d.id <> q.id AND simhash_jaccard(d.body, q.body) >= 0.8
LEFT JOIN sim_search s ON s.qid = q.id AND s.id = d.id
WHERE q.id % 100 IN (0, 4, 7);
-- simhash_similar_nearest: the most similar rows first, as a scan that computes every
-- similarity orders them (ties by ctid), for three queries.
WITH q AS (SELECT id, body FROM sim_docs WHERE id IN (300, 704, 1101)),
n AS (SELECT q.id AS query, x.r, (x.doc).id, x.similarity
      FROM q, LATERAL simhash_similar_nearest(NULL::sim_docs, 'body', 'lsh', q.body, 4)
              WITH ORDINALITY AS x (doc, similarity, r)),
b AS (SELECT * FROM (SELECT q.id AS query, d.id, simhash_jaccard(d.body, q.body) AS similarity,
                            row_number() OVER (PARTITION BY q.id
                                               ORDER BY simhash_jaccard(d.body, q.body) DESC, d.ctid) AS r
                     FROM q JOIN sim_docs d ON simhash_jaccard(d.body, q.body) >= 0.8) z
      WHERE z.r <= 4)
SELECT coalesce(n.query, b.query) AS query, count(*) AS rows_,
       bool_and(n.id IS NOT DISTINCT FROM b.id AND n.similarity IS NOT DISTINCT FROM b.similarity) AS same
FROM n FULL JOIN b ON n.query = b.query AND n.r = b.r
GROUP BY 1 ORDER BY 1;
SELECT * FROM simhash_similar_nearest(NULL::sim_docs, 'body', 'lsh', 'x', 3, 0.5);
SELECT * FROM simhash_similar_nearest(NULL::sim_docs, 'nope', 'lsh', 'x');
SELECT * FROM simhash_similar_nearest(NULL::sim_docs, 'body', 'body', 'x');
SELECT * FROM simhash_similar_nearest(1, 'body', 'lsh', 'x');
ALTER TABLE sim_docs DROP COLUMN lsh;

-- Texts are grouped as identical by their bytes, whatever the column's collation.
CREATE COLLATION sim_ci (provider = icu, locale = 'und-u-ks-level1', deterministic = false);
CREATE TABLE sim_accents (id integer, body text COLLATE sim_ci);
INSERT INTO sim_accents VALUES (1, 'Résumé café naïve façade'), (2, 'Resume cafe naive facade'),
                               (3, 'Resume cafe naive facade');
SELECT * FROM simhash_similar_pairs('SELECT id, body FROM sim_accents', 0.9);
DROP TABLE sim_accents;
DROP COLLATION sim_ci;

-- A query that ends in a -- comment: the same pairs as without it.
SELECT (SELECT count(*) FROM simhash_similar_pairs('SELECT id, body FROM sim_docs -- all of them', 0.8)) =
       (SELECT count(*) FROM simhash_similar_pairs('SELECT id, body FROM sim_docs', 0.8)) AS same_pairs,
       (SELECT count(*) FROM simhash_similar_clusters('SELECT id, body FROM sim_docs -- all of them', 0.8)) =
       (SELECT count(*) FROM simhash_similar_clusters('SELECT id, body FROM sim_docs', 0.8)) AS same_clusters;

-- Past work_mem the shingle sets go on in temporary files (the engine's external mode),
-- with the same answers at every threshold (LSH from 0.7, fingerprints below); temporary
-- files, not tables, so a read-only transaction works either way.
CREATE TEMP TABLE sim_mem_pairs AS
SELECT v.t, p.* FROM (VALUES (0.5), (0.7), (0.8), (0.95)) v (t),
     LATERAL simhash_similar_pairs('SELECT id, body FROM sim_docs', v.t) p;
CREATE TEMP TABLE sim_mem_clusters AS
SELECT * FROM simhash_similar_clusters('SELECT id, body FROM sim_docs', 0.8);
SET work_mem = '64kB';
SELECT count(*) AS pairs,
       (SELECT count(*) FROM sim_mem_pairs) AS in_memory,
       count(*) FILTER (WHERE m.id1 IS NULL) AS only_spilled
FROM (SELECT v.t, p.* FROM (VALUES (0.5), (0.7), (0.8), (0.95)) v (t),
           LATERAL simhash_similar_pairs('SELECT id, body FROM sim_docs', v.t) p) d
LEFT JOIN sim_mem_pairs m ON m.t = d.t AND m.id1 = d.id1 AND m.id2 = d.id2 AND m.similarity = d.similarity;
SELECT count(*) AS rows, count(*) FILTER (WHERE m.id IS NULL) AS only_spilled
FROM simhash_similar_clusters('SELECT id, body FROM sim_docs', 0.8) d
LEFT JOIN sim_mem_clusters m ON m.id = d.id AND m.cluster_id = d.cluster_id AND m.similarity = d.similarity;
BEGIN READ ONLY;
SELECT count(*) AS spilled FROM simhash_similar_pairs('SELECT id, body FROM sim_docs', 0.8);
SELECT count(*) AS spilled FROM simhash_similar_clusters('SELECT id, body FROM sim_docs', 0.8);
ROLLBACK;
-- The query runs once, also when the engine goes external while reading it. A function
-- with a side effect runs once a row; and a query that turns standard_conforming_strings
-- off while it runs, so that its text would parse as more statements a second time, runs
-- as the one SELECT it is.
SET work_mem = '64kB';
CREATE TEMP TABLE sim_calls (id bigint);
CREATE FUNCTION pg_temp.sim_log(i bigint) RETURNS bigint LANGUAGE sql VOLATILE
    AS 'INSERT INTO sim_calls VALUES (i) RETURNING i';
SELECT count(*) AS pairs FROM simhash_similar_pairs('SELECT pg_temp.sim_log(id), body FROM sim_docs', 0.8);
SELECT count(*) AS calls, count(DISTINCT id) AS ids, (SELECT count(*) FROM sim_docs) AS rows FROM sim_calls;
CREATE SEQUENCE sim_seq;
SELECT count(*) AS pairs FROM simhash_similar_pairs($q$SELECT id, body FROM sim_docs WHERE set_config('standard_conforming_strings', 'off', true) IS NOT NULL AND 'a\' <> $$ X' = 'x') AS q(id, body) LIMIT 0)), NULL; SELECT nextval('sim_seq'); SELECT NULL::regtype, ((SELECT 1 FROM (SELECT 1, 2 WHERE 'y' = 'y' -- $$$q$, 0.9);
SELECT is_called AS injected_statement_ran FROM sim_seq;
SHOW standard_conforming_strings;
DROP SEQUENCE sim_seq;
DROP TABLE sim_calls;
RESET work_mem;
-- Batches handed over as work_mem comes near, then external, on 5,000 rows of 660 bytes
-- (500 texts, 10 copies each, grouped as identical in memory and in the files alike): the
-- same pairs as in memory, also with records loaded a few at a time (64kB).
CREATE TEMP TABLE sim_md5 AS
SELECT i AS id, (SELECT string_agg(md5((i % 500 * 1000 + j)::text), ' ') FROM generate_series(1, 20) j) AS body
FROM generate_series(1, 5000) i;
SET work_mem = '4MB';
SELECT count(*) AS pairs, sum(id1 + id2) AS ids FROM simhash_similar_pairs('SELECT id, body FROM sim_md5', 0.8);
SET work_mem = '64kB';
SELECT pg_stat_force_next_flush();
SELECT temp_files AS temp_files_before FROM pg_stat_database WHERE datname = current_database() \gset
SELECT count(*) AS pairs, sum(id1 + id2) AS ids FROM simhash_similar_pairs('SELECT id, body FROM sim_md5', 0.8);
SELECT count(*) AS rows, count(DISTINCT cluster_id) AS clusters FROM simhash_similar_clusters('SELECT id, body FROM sim_md5', 0.8);
-- (external mode used temporary files: a records file and one a band, for each call)
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT temp_files - :temp_files_before >= 42 AS went_external FROM pg_stat_database WHERE datname = current_database();
SET work_mem = '1GB';
SELECT count(*) AS pairs, sum(id1 + id2) AS ids FROM simhash_similar_pairs('SELECT id, body FROM sim_md5', 0.8);
SELECT count(*) AS rows, count(DISTINCT cluster_id) AS clusters FROM simhash_similar_clusters('SELECT id, body FROM sim_md5', 0.8);
DROP TABLE sim_md5;
RESET work_mem;
BEGIN READ ONLY;
SELECT count(*) AS in_memory FROM simhash_similar_pairs('SELECT id, body FROM sim_docs', 0.8);
SELECT count(*) AS in_memory FROM simhash_similar_clusters('SELECT id, body FROM sim_docs', 0.8);
ROLLBACK;
DROP TABLE sim_mem_pairs, sim_mem_clusters;

-- Long runs are cancellable: 30000 copies of one text are 450 million pairs, and 30000
-- texts that differ in their last word all share LSH keys (450 million candidates in the
-- first band); the statement timeout stops both, and the session goes on.
SET work_mem = '1GB';
SET statement_timeout = '1s';
SELECT count(*) FROM simhash_similar_pairs('SELECT i, ''the same text in every row'' FROM generate_series(1, 30000) i', 0.8);
SELECT count(*) FROM simhash_similar_clusters('SELECT i, ''permission is hereby granted free of charge to any person obtaining a copy '' || i FROM generate_series(1, 30000) i', 0.8);
-- and so are they in external mode, where a batch waits for its records from the files
SET work_mem = '64kB';
SELECT count(*) FROM simhash_similar_pairs('SELECT i, ''permission is hereby granted free of charge to any person obtaining a copy '' || i FROM generate_series(1, 30000) i', 0.8);
RESET statement_timeout;
RESET work_mem;
SELECT count(*) AS pairs FROM simhash_similar_pairs('SELECT id, body FROM sim_docs', 0.8);

-- Symbols inside words do not count (measured and kept: docs/verified.md, "What counts as
-- identical: symbols inside words"); pinned here, so that a change of the normalization,
-- which would change every stored key, is seen.
SELECT simhash_jaccard('GNU C++ 编译器套件', 'GNU C 编译器套件') AS cpp_vs_c,
       simhash_jaccard('x86_64 build of 1.2.3', 'x86 64 build of 1 2 3') AS version_vs_spaced;

-- The candidates per threshold: LSH keys from 0.7, two fingerprints below.
SELECT t, r.* FROM (VALUES (1.0), (0.9), (0.7), (0.69), (0.5)) v (t), simhash_similar_recipes(v.t) r;

-- Bad input.
SELECT * FROM simhash_similar_pairs('SELECT id, body FROM sim_docs', 0);
SELECT * FROM simhash_similar_pairs('SELECT id, body FROM sim_docs', 1.5);
SELECT * FROM simhash_similar_pairs('SELECT id, body FROM sim_docs', 'NaN');
SELECT * FROM simhash_similar_pairs('SELECT body, id FROM sim_docs', 0.8);
SELECT * FROM simhash_similar_pairs('SELECT id, id FROM sim_docs', 0.8);
SELECT * FROM simhash_similar_pairs('SELECT NULL::bigint, body FROM sim_docs', 0.8);
SELECT * FROM simhash_similar_pairs('SELECT 1, body FROM sim_docs', 0.8);
SELECT * FROM simhash_similar_pairs('SELECT id FROM sim_docs', 0.8);
-- an id is unique among every row, those with a NULL body or no character included, in
-- memory as in external mode
SELECT * FROM simhash_similar_pairs('VALUES (1, ''hello world foo''), (2, ''hello world foo''), (1, NULL)', 0.8);
SELECT * FROM simhash_similar_pairs('VALUES (1, ''hello world foo''), (2, ''hello world foo''), (1, ''!!!'')', 0.8);
SET work_mem = '64kB';
SELECT * FROM simhash_similar_pairs('VALUES (1, ''hello world foo''), (2, ''hello world foo''), (1, NULL)', 0.8);
RESET work_mem;
SELECT * FROM simhash_similar_clusters('SELECT id, body FROM sim_docs', -1);
-- Only a SELECT that changes nothing: what the functions are for (read once, through a
-- cursor).
SELECT * FROM simhash_similar_pairs('WITH d AS (DELETE FROM sim_docs WHERE id < 0 RETURNING id, body) SELECT * FROM d', 0.8);
BEGIN;
DECLARE sim_cursor CURSOR FOR SELECT id, body FROM sim_docs;
SELECT * FROM simhash_similar_pairs('FETCH ALL FROM sim_cursor', 0.8);
ROLLBACK;
SELECT * FROM simhash_similar_pairs('SHOW work_mem', 0.8);
SELECT * FROM simhash_similar_pairs('SELECT 1, ''a''; SELECT 2, ''b''', 0.8);
SELECT count(*) AS for_share FROM simhash_similar_pairs('SELECT id, body FROM sim_docs FOR SHARE', 0.8);
-- The threads a call may use: 1 + max_parallel_workers_per_gather, at most
-- simhash.max_threads, which only a superuser may change.
SHOW simhash.max_threads;
CREATE ROLE regress_simhash_threads;
SET ROLE regress_simhash_threads;
SET simhash.max_threads = 64;
RESET ROLE;
DROP ROLE regress_simhash_threads;
SET simhash.max_threads = 1;
SELECT count(*) AS one_thread FROM simhash_similar_pairs('SELECT id, body FROM sim_docs', 0.8);
RESET simhash.max_threads;
SELECT count(*) AS none FROM simhash_similar_pairs('SELECT id, body FROM sim_docs WHERE false', 0.8);
SELECT count(*) AS none FROM simhash_similar_clusters('SELECT id, body FROM sim_docs WHERE false', 0.8);
-- The table forms (on Citus they work on the workers, test/citus/run.sh): elsewhere the
-- query forms' answers, row for row; their columns checked.
SELECT (SELECT count(*) FROM (SELECT * FROM simhash_similar_pairs('sim_docs', 'id', 'body', 0.8)
                              EXCEPT SELECT * FROM simhash_similar_pairs('SELECT id, body FROM sim_docs', 0.8)) x) AS pairs_extra,
       (SELECT count(*) FROM (SELECT * FROM simhash_similar_pairs('SELECT id, body FROM sim_docs', 0.8)
                              EXCEPT SELECT * FROM simhash_similar_pairs('sim_docs', 'id', 'body', 0.8)) x) AS pairs_missed,
       (SELECT count(*) FROM simhash_similar_pairs('sim_docs', 'id', 'body', 0.8)) AS pairs,
       (SELECT count(*) FROM (SELECT * FROM simhash_similar_clusters('sim_docs', 'id', 'body', 0.8)
                              EXCEPT SELECT * FROM simhash_similar_clusters('SELECT id, body FROM sim_docs', 0.8)) x) AS clusters_differ;
SELECT simhash_lsh_first_shared('{1,2,3}'::bigint[], '{4,2,3}'::bigint[]) AS second, simhash_lsh_first_shared('{1,2}'::bigint[], '{3,4}'::bigint[]) AS none;
SELECT simhash_lsh_first_shared('{1,NULL}'::bigint[], '{1,2}'::bigint[]);
SELECT simhash_lsh_first_shared('{}'::bigint[], '{1,2}'::bigint[]) IS NULL AS empty_none;
CREATE TABLE sim_chars AS SELECT id, body::char(300) AS body FROM sim_docs;
SELECT count(*) > 0 AS char_column FROM simhash_similar_pairs('sim_chars', 'id', 'body', 0.8);
DROP TABLE sim_chars;
SELECT * FROM simhash_similar_pairs('sim_docs', 'id', 'nope', 0.8);
SELECT * FROM simhash_similar_pairs('sim_docs', 'body', 'id', 0.8);

-- Nothing is left behind: no temporary table, no changed setting.
SELECT count(*) AS temp_tables FROM pg_class WHERE relname LIKE 'simhash_%' AND relpersistence = 't';
SHOW enable_hashjoin;

DROP TABLE sim_docs, sim_base, sim_ref, sim_truth, sim_found, sim_clusters, sim_search;
