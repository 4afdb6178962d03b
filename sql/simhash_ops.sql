-- The similarity operators (%~, <%>, <~>), the setting simhash.similarity_threshold, the GIN
-- operator class simhash_ops, and block indexes built CONCURRENTLY from
-- simhash_create_index_statements.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- Errors as SQLSTATE: message.
CREATE FUNCTION pg_temp.try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

-- == Operators on values ==
-- The setting exists once the library is loaded in the session (by any call of its
-- functions or operators, or by CREATE EXTENSION).
SELECT simhash_jaccard('a', 'a') AS loaded;
SHOW simhash.similarity_threshold;
SELECT 'The quick brown fox jumps over the lazy dog near the river bank.'
       %~ 'The quick brown fox jumps over the lazy dog near the river bank!' AS same_text,
       'The quick brown fox jumps over the lazy dog near the river bank.'
       %~ 'The quick brown fox jumped over a lazy dog near the river bank.' AS edited,
       'The quick brown fox jumps over the lazy dog near the river bank.'
       %~ 'Something else entirely, about databases and indexes.' AS other;
-- <%> is 1 - simhash_jaccard, <~> is hamming.
SELECT round(('The quick brown fox jumps over the lazy dog near the river bank.'
              <%> 'The quick brown fox jumped over a lazy dog near the river bank.')::numeric, 6) AS distance,
       round((1 - simhash_jaccard('The quick brown fox jumps over the lazy dog near the river bank.',
                                  'The quick brown fox jumped over a lazy dog near the river bank.'))::numeric, 6) AS one_minus_jaccard;
SELECT 5::bigint <~> 3::bigint AS two, -1::bigint <~> 1::bigint AS sixty_three, 0::bigint <~> (-1)::bigint AS sixty_four,
       simhash('a b c d e') <~> simhash('a b c d f') = hamming(simhash('a b c d e'), simhash('a b c d f')) AS as_hamming;
-- Commutators.
SELECT oprname, oprcom::regoperator FROM pg_operator
WHERE oid IN ('%~(text,text)'::regoperator, '<%>(text,text)'::regoperator, '<~>(bigint,bigint)'::regoperator)
ORDER BY 1;

-- NULL, empty texts, texts without characters: %~ is false when the similarity is
-- undefined or 0, <%> NULL when undefined (as simhash_jaccard).
SELECT NULL::text %~ 'abc' AS null_left, 'abc' %~ NULL::text AS null_right,
       '' %~ '' AS empty_empty, '' %~ 'some text here' AS empty_text,
       '!!! ??? ...' %~ '!!! ??? ...' AS no_chars, '!!! ??? ...' %~ '' AS no_chars_empty;
SELECT '' <%> '' AS empty_empty, '!!! ???' <%> '...' AS no_chars, '' <%> 'some text here' AS empty_text,
       NULL::text <%> 'x' AS null_left, NULL::bigint <~> 1 AS null_fp;

-- == The setting ==
-- Bounds 0..1: 22023 outside them, and for what is not a number.
SELECT pg_temp.try($$SET simhash.similarity_threshold = 1.5$$);
SELECT pg_temp.try($$SET simhash.similarity_threshold = -0.1$$);
SELECT pg_temp.try($$SET simhash.similarity_threshold = 'high'$$);
SELECT pg_temp.try($$SET simhash.similarity_threshold = 'NaN'$$);
SET simhash.similarity_threshold = 0;
SHOW simhash.similarity_threshold;
-- At 0 every pair with a defined similarity is similar, and nothing else.
SELECT 'abcdef' %~ 'uvwxyz' AS zero_similarity, '' %~ 'abcdef' AS empty_text, '' %~ '' AS undefined;
-- The smallest thresholds the setting takes: no cap on the shingles a row may have (once
-- an endless loop that no cancel reached).
SET simhash.similarity_threshold = 1e-300;
SELECT 'a b c'::text %~ 'a b c' AS tiny_same, repeat('other words ', 500) %~ 'other words here' AS tiny_near;
SET simhash.similarity_threshold = 1e-307;
SELECT 'abcdef' %~ 'uvwxyz' AS tiniest_zero, 'abcdef' %~ 'abcdefg' AS tiniest_near;
SET simhash.similarity_threshold = 1;
SELECT 'Hello, World!' %~ 'hello world' AS normalized_equal, 'Hello, World!' %~ 'hello world!!' AS also;
RESET simhash.similarity_threshold;
SHOW simhash.similarity_threshold;
-- The functions that read it are STABLE, the others IMMUTABLE (none in an index expression).
SELECT p.oid::regprocedure, p.provolatile, p.proisstrict, p.proparallel
FROM pg_proc p
WHERE p.oid IN ('simhash_similar_op(text,text)'::regprocedure,
                'simhash_jaccard_distance(text,text)'::regprocedure,
                'simhash_gin_extract_query(text,internal,smallint,internal,internal,internal,internal)'::regprocedure)
ORDER BY 1::text;
SELECT pg_temp.try($$CREATE TEMP TABLE regress_simhash_ops_bad (b text); CREATE INDEX ON regress_simhash_ops_bad ((b %~ 'x'))$$) AS stable_in_index;

-- == The GIN operator class, on real text ==
-- Paragraphs of /usr/share/doc/*/copyright (licences: many exact and near duplicates),
-- plus an edited copy of every 7th paragraph and rows without text.
CREATE TABLE regress_simhash_ops_docs (id integer PRIMARY KEY, body text);
\copy regress_simhash_ops_docs FROM 'test/data/ops_paragraphs.tsv'
INSERT INTO regress_simhash_ops_docs
SELECT id + 10000, regexp_replace(body, ' (the|a|of|and) ', ' \1 \1 ') FROM regress_simhash_ops_docs WHERE id % 7 = 0;
INSERT INTO regress_simhash_ops_docs VALUES (20001, NULL), (20002, ''), (20003, '!!! ??? ...');
SELECT count(*) AS rows, count(DISTINCT body) AS distinct_bodies FROM regress_simhash_ops_docs;
CREATE INDEX regress_simhash_ops_docs_body ON regress_simhash_ops_docs USING gin (body simhash_ops);
ANALYZE regress_simhash_ops_docs;
-- The queries: every 10th paragraph, an edited copy of every 20th, and the texts without
-- characters.
CREATE TEMP TABLE regress_simhash_ops_q AS
SELECT id AS qid, body AS q FROM regress_simhash_ops_docs WHERE id % 10 = 0 AND id < 10000
UNION ALL
SELECT id + 50000, regexp_replace(body, '([a-z]+) ([a-z]+)', '\2 \1') FROM regress_simhash_ops_docs WHERE id % 20 = 0 AND id < 10000
UNION ALL
SELECT 60000, '' UNION ALL SELECT 60001, '!!! ??? ...';

SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT id FROM regress_simhash_ops_docs WHERE body %~ 'Permission is hereby granted, free of charge';
EXPLAIN (COSTS OFF)
SELECT q.qid, d.id FROM regress_simhash_ops_q q
CROSS JOIN LATERAL (SELECT d.id FROM regress_simhash_ops_docs d WHERE d.body %~ q.q) d;
-- The rows found through the index against a brute-force scan with simhash_jaccard, at
-- several thresholds. missed: pairs the LSH keys miss (possible from 0.7 on, 0 on this
-- data); extra: rows below the threshold (never: every candidate is rechecked).
SET enable_seqscan = on;
CREATE TEMP TABLE regress_simhash_ops_bf AS
SELECT q.qid, d.id, simhash_jaccard(d.body, q.q) AS j
FROM regress_simhash_ops_q q, regress_simhash_ops_docs d;
SET enable_seqscan = off;
CREATE FUNCTION pg_temp.compare(t double precision)
    RETURNS TABLE (threshold double precision, pairs bigint, by_index bigint, missed bigint, extra bigint)
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('simhash.similarity_threshold', t::text, true);
    CREATE TEMP TABLE ix ON COMMIT DROP AS
    SELECT q.qid, d.id FROM regress_simhash_ops_q q
    CROSS JOIN LATERAL (SELECT d.id FROM regress_simhash_ops_docs d WHERE d.body %~ q.q) d;
    CREATE TEMP TABLE bf ON COMMIT DROP AS
    SELECT b.qid, b.id FROM regress_simhash_ops_bf b WHERE b.j >= t;
    RETURN QUERY SELECT t, (SELECT count(*) FROM bf), (SELECT count(*) FROM ix),
        (SELECT count(*) FROM (SELECT * FROM bf EXCEPT ALL SELECT * FROM ix) m),
        (SELECT count(*) FROM (SELECT * FROM ix EXCEPT ALL SELECT * FROM bf) e);
    DROP TABLE ix, bf;
END
$$;
SELECT * FROM pg_temp.compare(0.7);
SELECT * FROM pg_temp.compare(0.8);
SELECT * FROM pg_temp.compare(0.9);
-- %~ reads a stored text only as far as it can still reach the threshold, in slices of a
-- toasted one, and counts what it read against the query's set: the same answer as
-- simhash_jaccard on long texts (paragraphs joined, or one repeated: few distinct shingles
-- in many bytes), compressed, stored out of line uncompressed, or short, at every threshold.
CREATE TEMP TABLE regress_simhash_ops_long (id int, body text);
ALTER TABLE regress_simhash_ops_long ALTER body SET STORAGE EXTERNAL;
INSERT INTO regress_simhash_ops_long
SELECT n * 100 + r, CASE WHEN r = 0 THEN string_agg(body, ' ' ORDER BY id)
                         ELSE repeat(min(body) || ' ', r * 40) END
FROM (VALUES (1), (2), (5), (40), (200)) k(n), (VALUES (0), (1), (3)) x(r),
     regress_simhash_ops_docs d
WHERE d.id BETWEEN 10 AND 9 + n AND d.body <> ''
GROUP BY n, r;
INSERT INTO regress_simhash_ops_long SELECT id + 1, body FROM regress_simhash_ops_long;
ALTER TABLE regress_simhash_ops_long ALTER body SET STORAGE EXTENDED;
UPDATE regress_simhash_ops_long SET body = body || '' WHERE id % 2 = 1;
SELECT count(*) AS texts, max(octet_length(body)) AS longest,
       count(*) FILTER (WHERE pg_column_size(body) < octet_length(body)) AS compressed
FROM regress_simhash_ops_long;
CREATE FUNCTION pg_temp.compare_long(t double precision)
    RETURNS TABLE (threshold double precision, pairs bigint, similar bigint, differ bigint)
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('simhash.similarity_threshold', t::text, true);
    RETURN QUERY
    SELECT t, count(*), count(*) FILTER (WHERE l.body %~ q.body),
           count(*) FILTER (WHERE (l.body %~ q.body) <> coalesce(simhash_jaccard(l.body, q.body) >= t, false))
    FROM regress_simhash_ops_long l, regress_simhash_ops_long q;
END
$$;
SELECT * FROM pg_temp.compare_long(0.0);
SELECT * FROM pg_temp.compare_long(0.3);
SELECT * FROM pg_temp.compare_long(0.6);
SELECT * FROM pg_temp.compare_long(0.95);
SELECT * FROM pg_temp.compare_long(1.0);
SELECT * FROM pg_temp.compare(1.0);
-- Below 0.7 the index is read whole and every row rechecked: the same rows as the scan.
SELECT * FROM pg_temp.compare(0.5);
SELECT * FROM pg_temp.compare(0.1);
SET simhash.similarity_threshold = 0.3;
EXPLAIN (COSTS OFF)
SELECT id FROM regress_simhash_ops_docs WHERE body %~ 'Permission is hereby granted, free of charge';
-- which the planner avoids when it may read the table instead.
SET enable_seqscan = on;
EXPLAIN (COSTS OFF)
SELECT id FROM regress_simhash_ops_docs WHERE body %~ 'Permission is hereby granted, free of charge';
RESET simhash.similarity_threshold;
SET enable_seqscan = off;

-- The most similar rows, nearest first, with <%> (the index finds, the distance orders).
SELECT id, round((1 - (body <%> q.q))::numeric, 4) AS similarity
FROM regress_simhash_ops_docs, (SELECT q FROM regress_simhash_ops_q WHERE qid = 50100) q
WHERE body %~ q.q ORDER BY body <%> q.q, id LIMIT 5;
-- The same answer as simhash_similar_nearest on a stored key column (the 0.2 recipe).
ALTER TABLE regress_simhash_ops_docs ADD COLUMN lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED;
SELECT (n.doc).id, round(n.similarity::numeric, 4) AS similarity
FROM simhash_similar_nearest(NULL::regress_simhash_ops_docs, 'body', 'lsh',
                             (SELECT q FROM regress_simhash_ops_q WHERE qid = 50100), 5, 0.8) n;
-- and with no key column, through %~ and the simhash_ops index, at its own threshold
-- (the session's setting is left as it was).
SET simhash.similarity_threshold = 0.95;
SELECT (n.doc).id, round(n.similarity::numeric, 4) AS similarity
FROM simhash_similar_nearest(NULL::regress_simhash_ops_docs, 'body', NULL,
                             (SELECT q FROM regress_simhash_ops_q WHERE qid = 50100), 5, 0.8) n;
SHOW simhash.similarity_threshold;
RESET simhash.similarity_threshold;
-- The same as the stored-key form for every query.
SELECT t, count(*) AS queries,
       count(*) FILTER (WHERE
           ARRAY(SELECT ((n.doc).id, n.similarity)::text FROM simhash_similar_nearest(NULL::regress_simhash_ops_docs, 'body', 'lsh', q.q, 10, t) n)
         = ARRAY(SELECT ((n.doc).id, n.similarity)::text FROM simhash_similar_nearest(NULL::regress_simhash_ops_docs, 'body', NULL, q.q, 10, t) n)) AS equal
FROM regress_simhash_ops_q q, (VALUES (0.7::float8)) v(t) GROUP BY t ORDER BY t;
SELECT pg_temp.try($$SELECT simhash_similar_nearest(NULL::regress_simhash_ops_docs, 'body', NULL, 'x', 5, 0.5)$$);
-- The index keys are simhash_lsh(body): a row is found by its own text at threshold 1.
SET simhash.similarity_threshold = 1;
SELECT count(*) AS found_by_own_text FROM regress_simhash_ops_docs d
WHERE d.body <> '' AND d.id IN (SELECT id FROM regress_simhash_ops_docs d2 WHERE d2.body %~ d.body);
SELECT count(*) AS with_characters FROM regress_simhash_ops_docs WHERE lsh <> '{}';
RESET simhash.similarity_threshold;
-- Writes keep the index current.
INSERT INTO regress_simhash_ops_docs (id, body)
VALUES (30000, 'A brand new paragraph about the indexing of near duplicate texts in PostgreSQL.');
SELECT id FROM regress_simhash_ops_docs
WHERE body %~ 'A brand new paragraph about the indexing of near-duplicate texts in PostgreSQL!';
UPDATE regress_simhash_ops_docs SET body = 'Something else' WHERE id = 30000;
SELECT id FROM regress_simhash_ops_docs
WHERE body %~ 'A brand new paragraph about the indexing of near-duplicate texts in PostgreSQL!';
RESET enable_seqscan;

-- pg_trgm (contrib) installs beside it in the same schema: no operator name is shared.
SELECT count(*) AS pg_trgm_available FROM pg_available_extensions WHERE name = 'pg_trgm';
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
RESET client_min_messages;
SELECT 'The quick brown fox jumps' % 'The quick brown fox jumped' AS trgm_similar,
       'The quick brown fox jumps over the lazy dog' %~ 'The quick brown fox jumps over the lazy dog.' AS simhash_similar;
CREATE INDEX regress_simhash_ops_docs_trgm ON regress_simhash_ops_docs USING gin (body gin_trgm_ops);
DROP INDEX regress_simhash_ops_docs_trgm;
DROP EXTENSION pg_trgm;

-- == Block indexes built CONCURRENTLY ==
CREATE TABLE regress_simhash_ops_fp (id integer PRIMARY KEY, fp bigint);
INSERT INTO regress_simhash_ops_fp
SELECT id, simhash(body) FROM regress_simhash_ops_docs WHERE body IS NOT NULL;
-- <~> orders by Hamming distance as hamming() does.
SELECT (SELECT array_agg(f.id ORDER BY f.fp <~> g.fp, f.id) FROM (SELECT * FROM regress_simhash_ops_fp f ORDER BY f.fp <~> (SELECT fp FROM regress_simhash_ops_fp WHERE id = 70), f.id LIMIT 10) f, regress_simhash_ops_fp g WHERE g.id = 70)
     = (SELECT array_agg(f.id ORDER BY hamming(f.fp, g.fp), f.id) FROM (SELECT * FROM regress_simhash_ops_fp f ORDER BY hamming(f.fp, (SELECT fp FROM regress_simhash_ops_fp WHERE id = 70)), f.id LIMIT 10) f, regress_simhash_ops_fp g WHERE g.id = 70) AS same_order;
SELECT * FROM simhash_create_index_statements('regress_simhash_ops_fp', 'fp', 3, 4);
SELECT * FROM simhash_create_index_statements('regress_simhash_ops_fp', 'fp', 3, 4) \gexec
SELECT * FROM simhash_block_indexes('regress_simhash_ops_fp', 'fp');
SELECT tbl, col, max_distance, blocks FROM simhash_layouts WHERE tbl = 'regress_simhash_ops_fp'::regclass;
-- simhash_near finds them (the catalog, not simhash_layouts, tells the planner), with the
-- rows of simhash_within.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT id FROM regress_simhash_ops_fp WHERE simhash_near(fp, 0, 3);
SELECT (SELECT array_agg(f.id ORDER BY f.id) FROM regress_simhash_ops_fp f, regress_simhash_ops_fp g
        WHERE g.id = 70 AND simhash_near(f.fp, g.fp, 3))
     = (SELECT array_agg(f.id ORDER BY f.id) FROM regress_simhash_ops_fp f, regress_simhash_ops_fp g
        WHERE g.id = 70 AND simhash_within(f.fp, g.fp, 3)) AS same_rows;
RESET enable_seqscan;
-- Run again: nothing left to build.
SELECT * FROM simhash_create_index_statements('regress_simhash_ops_fp', 'fp', 3, 4);
-- An index left invalid by a failed CONCURRENTLY build (here: not unique) is dropped first.
CREATE UNIQUE INDEX CONCURRENTLY regress_simhash_ops_fp_bad ON regress_simhash_ops_fp (simhash_block(fp, 8, 0));
SELECT indisvalid FROM pg_index WHERE indexrelid = 'regress_simhash_ops_fp_bad'::regclass;
-- A layout of 8 blocks replaces the one of 4: built first, the old one dropped after.
SELECT * FROM simhash_create_index_statements('regress_simhash_ops_fp', 'fp', 7, 8);
SELECT * FROM simhash_create_index_statements('regress_simhash_ops_fp', 'fp', 7, 8) \gexec
SELECT * FROM simhash_block_indexes('regress_simhash_ops_fp', 'fp');
SELECT tbl, col, max_distance, blocks FROM simhash_layouts WHERE tbl = 'regress_simhash_ops_fp'::regclass;
-- Arguments checked as simhash_create_index checks them.
SELECT pg_temp.try($$SELECT simhash_create_index_statements('regress_simhash_ops_fp', 'fp', 17)$$);
SELECT pg_temp.try($$SELECT simhash_create_index_statements('regress_simhash_ops_fp', 'fp', 3, 1)$$);
SELECT pg_temp.try($$SELECT simhash_create_index_statements('regress_simhash_ops_fp', 'nope')$$);
SELECT pg_temp.try($$SELECT simhash_create_index_statements('regress_simhash_ops_docs', 'body')$$);

DROP TABLE regress_simhash_ops_fp;
DROP TABLE regress_simhash_ops_docs;

-- The dedupe trigger served by the simhash_ops index: with a similarity threshold the key
-- column may be left out, simhash_dedupe('body', 'similarity=0.8', policy), and the GIN
-- index with simhash_ops on the text column finds the candidates (the same rows as a keys
-- column would: simhash_dedupe_equivalence compares every path).
CREATE TABLE regress_simhash_ops_dd (id bigint PRIMARY KEY, body text, dup_of bigint);
CREATE INDEX regress_simhash_ops_dd_body ON regress_simhash_ops_dd USING gin (body simhash_ops)
    WITH (fastupdate = off);
CREATE TRIGGER dd BEFORE INSERT OR UPDATE OF body ON regress_simhash_ops_dd FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'similarity=0.8', 'link', 'dup_of');
INSERT INTO regress_simhash_ops_dd VALUES
  (1, 'Permission is hereby granted, free of charge, to any person obtaining a copy of this software'),
  (2, 'Permission is hereby granted, free of charge, to any person obtaining a copy of this software.'),
  (3, 'Something else entirely, about tomatoes in a small garden in the summer');
UPDATE regress_simhash_ops_dd SET body = 'Something else entirely, about tomatoes in a small garden in the summer!' WHERE id = 1;
SELECT id, dup_of FROM regress_simhash_ops_dd ORDER BY id;
-- the plan: a Bitmap Index Scan of the simhash_ops index, no keys column in the table
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM regress_simhash_ops_dd WHERE body %~ 'Permission is hereby granted';
RESET enable_seqscan;
-- reject names the row; a load through simhash_dedupe_insert answers as INSERT does
DROP TRIGGER dd ON regress_simhash_ops_dd;
CREATE TRIGGER dd BEFORE INSERT ON regress_simhash_ops_dd FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'similarity=0.8', 'reject');
\set VERBOSITY default
INSERT INTO regress_simhash_ops_dd (id, body) VALUES (4, 'PERMISSION is hereby granted, free of charge, to any person obtaining a copy of this software');
\set VERBOSITY terse
SELECT simhash_dedupe_insert('regress_simhash_ops_dd', $$SELECT 5::bigint AS id, 'A new text about the weather in the mountains in winter' AS body$$) AS inserted;
-- without the index, a NOTICE (every row reads the table) and the same answers
DROP INDEX regress_simhash_ops_dd_body;
INSERT INTO regress_simhash_ops_dd (id, body) VALUES (6, 'A new text about the weather in the mountains in winter.');
-- the shorter form needs the written-out threshold, a table, and a threshold
CREATE TABLE regress_simhash_ops_bad (id int, body text);
CREATE TRIGGER dd BEFORE INSERT ON regress_simhash_ops_bad FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'k=3', 'skip');
CREATE TRIGGER dd BEFORE INSERT ON regress_simhash_ops_bad FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'similarity=0.5', 'skip');
-- a keys column may even be named like a limit: a limit after it keeps the longer form
CREATE TABLE regress_simhash_ops_odd (id int PRIMARY KEY, body text, "similarity=0.8" bigint[]);
CREATE INDEX ON regress_simhash_ops_odd USING gin ("similarity=0.8") WITH (fastupdate = off);
CREATE TRIGGER dd BEFORE INSERT ON regress_simhash_ops_odd FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'similarity=0.8', 'similarity=0.8', 'reject');
INSERT INTO regress_simhash_ops_odd (id, body) VALUES (1, 'Permission is hereby granted, free of charge, to any person');
INSERT INTO regress_simhash_ops_odd (id, body) VALUES (2, 'PERMISSION is hereby granted, free of charge, to any person');
SELECT id, cardinality("similarity=0.8") AS keys FROM regress_simhash_ops_odd;
DROP TABLE regress_simhash_ops_odd;
CREATE VIEW regress_simhash_ops_v AS SELECT * FROM regress_simhash_ops_bad;
CREATE TRIGGER dv INSTEAD OF INSERT ON regress_simhash_ops_v FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'similarity=0.8', 'skip');
DROP VIEW regress_simhash_ops_v;
DROP TABLE regress_simhash_ops_dd, regress_simhash_ops_bad;
