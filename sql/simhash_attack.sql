-- Findings of the attack review of the similarity operators, simhash_ops,
-- simhash_similar_nearest without a key column and simhash_create_index_statements: each
-- case here failed before its fix.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- == simhash_similar_nearest without a key column: min_similarity as given ==
-- It hands min_similarity to %~ through the setting, as text. A session whose
-- extra_float_digits is negative prints float8 with fewer digits (-15: one), so that 0.76
-- became 0.8 (a row of 0.77 missed) and 0.74 became 0.7 (a row of 0.70 returned).
CREATE TABLE regress_simhash_attack_docs (id integer PRIMARY KEY, body text);
INSERT INTO regress_simhash_attack_docs VALUES
    (1, 'the quick brown fox jumps over the lazy dog near the river bank today'),
    (2, 'the quick brown fox jumps over the lazy dog near the river bank yesterday'),
    (3, 'the quick brown fox jumps over the lazy cat near the river bank yesterday morning');
CREATE INDEX ON regress_simhash_attack_docs USING gin (body simhash_ops);
SELECT a.id AS id1, b.id AS id2, round(simhash_jaccard(a.body, b.body)::numeric, 4) AS similarity
FROM regress_simhash_attack_docs a, regress_simhash_attack_docs b WHERE a.id < b.id ORDER BY 1, 2;
SET extra_float_digits = -15;
-- 2 (0.7705 to 1) is at least 0.76; 3 (0.70 to 2) is below 0.74.
SELECT (n.doc).id, round(n.similarity::numeric, 4) AS similarity
FROM simhash_similar_nearest(NULL::regress_simhash_attack_docs, 'body', NULL,
                             (SELECT body FROM regress_simhash_attack_docs WHERE id = 1), 10, 0.76) n;
SELECT (n.doc).id, round(n.similarity::numeric, 4) AS similarity
FROM simhash_similar_nearest(NULL::regress_simhash_attack_docs, 'body', NULL,
                             (SELECT body FROM regress_simhash_attack_docs WHERE id = 2), 10, 0.74) n;
-- The same rows as the stored-key form, and the session's settings untouched.
ALTER TABLE regress_simhash_attack_docs ADD COLUMN lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED;
SELECT t::numeric AS t,
       ARRAY(SELECT (n.doc).id FROM simhash_similar_nearest(NULL::regress_simhash_attack_docs, 'body', NULL, d.body, 10, t) n)
     = ARRAY(SELECT (n.doc).id FROM simhash_similar_nearest(NULL::regress_simhash_attack_docs, 'body', 'lsh', d.body, 10, t) n) AS same
FROM regress_simhash_attack_docs d, (VALUES (0.7::float8), (0.74), (0.76), (0.85), (1)) v (t)
WHERE d.id IN (1, 2) ORDER BY d.id, t;
SHOW extra_float_digits;
SHOW simhash.similarity_threshold;
RESET extra_float_digits;
-- Within a transaction too: set_config(..., true) lasted until the transaction's end (a
-- function's SET clause undoes on return only the settings it names), so the caller's
-- next %~ ran at the function's min_similarity, and extra_float_digits stayed changed.
BEGIN;
SET LOCAL simhash.similarity_threshold = 0.5;
SET LOCAL extra_float_digits = 0;
SELECT count(*) AS found FROM simhash_similar_nearest(NULL::regress_simhash_attack_docs, 'body', NULL,
                             (SELECT body FROM regress_simhash_attack_docs WHERE id = 1), 10, 0.95);
SHOW simhash.similarity_threshold;
SHOW extra_float_digits;
-- 1 and 2 (0.53 and 0.70 to 3, at the transaction's 0.5)
SELECT id FROM regress_simhash_attack_docs
WHERE body %~ (SELECT body FROM regress_simhash_attack_docs WHERE id = 3) AND id <> 3 ORDER BY id;
COMMIT;
BEGIN;
SET simhash.similarity_threshold = 0.7;
SELECT count(*) AS found FROM simhash_similar_nearest(NULL::regress_simhash_attack_docs, 'body', NULL,
                             (SELECT body FROM regress_simhash_attack_docs WHERE id = 1), 10, 0.9);
SHOW simhash.similarity_threshold;
COMMIT;
SHOW simhash.similarity_threshold;
RESET simhash.similarity_threshold;
DROP TABLE regress_simhash_attack_docs;

-- == simhash_create_index_statements on a partitioned table ==
-- PostgreSQL builds no index CONCURRENTLY on a partitioned table: the statements printed
-- all failed under \gexec but the last, which recorded a layout without its indexes. Now
-- refused (0A000) before any statement, and nothing is recorded.
CREATE TABLE regress_simhash_attack_parts (id integer, fp bigint) PARTITION BY RANGE (id);
CREATE TABLE regress_simhash_attack_parts_1 PARTITION OF regress_simhash_attack_parts FOR VALUES FROM (0) TO (1000);
INSERT INTO regress_simhash_attack_parts SELECT i, simhash('text ' || i) FROM generate_series(1, 999) i;
SELECT * FROM simhash_create_index_statements('regress_simhash_attack_parts', 'fp', 3, 4) \gexec
SELECT count(*) AS layouts FROM simhash_layouts WHERE tbl = 'regress_simhash_attack_parts'::regclass;
-- A partition is a table of its own: its statements work.
SELECT * FROM simhash_create_index_statements('regress_simhash_attack_parts_1', 'fp', 3, 4) \gexec
SELECT index, blocks, block FROM simhash_block_indexes('regress_simhash_attack_parts_1', 'fp');
DROP TABLE regress_simhash_attack_parts;

-- == simhash_create_index_statements names every relation by its schema ==
-- A temporary table and its indexes were printed by their names alone (the function's own
-- search_path finds pg_temp), so that run through \gexec under search_path = public,
-- pg_temp the statements built the new layout on public's table of the same name, dropped
-- its block indexes and recorded its layout. (The temporary schema's name, pg_temp_<n>,
-- differs between runs: the statements are shown with it replaced, and run unechoed.)
CREATE TABLE regress_simhash_attack_same (id integer, fp bigint);
INSERT INTO regress_simhash_attack_same SELECT i, simhash('text ' || i) FROM generate_series(1, 200) i;
SELECT count(*) AS indexes FROM simhash_create_index('regress_simhash_attack_same', 'fp', 3, 4);
CREATE TEMP TABLE regress_simhash_attack_same (id integer, fp bigint);
INSERT INTO pg_temp.regress_simhash_attack_same SELECT i, simhash('temp ' || i) FROM generate_series(1, 200) i;
SELECT count(*) AS indexes FROM simhash_create_index('pg_temp.regress_simhash_attack_same', 'fp', 3, 4);
SET search_path = public, pg_temp;
SELECT regexp_replace(s, 'pg_temp_[0-9]+', 'pg_temp_N', 'g') AS statement
FROM simhash_create_index_statements('pg_temp.regress_simhash_attack_same', 'fp', 5, 6) s;
\set ECHO none
SELECT * FROM simhash_create_index_statements('pg_temp.regress_simhash_attack_same', 'fp', 5, 6) \gexec
\set ECHO all
RESET search_path;
-- public's table keeps its 4 block indexes and its layout (3, 4 blocks); the temporary
-- one has the new ones (5, 6 blocks)
SELECT c.relnamespace = pg_my_temp_schema() AS temporary, l.max_distance, l.blocks,
       (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid) AS indexes
FROM pg_class c LEFT JOIN simhash_layouts l ON l.tbl = c.oid AND l.col = 'fp'
WHERE c.relname = 'regress_simhash_attack_same' ORDER BY 1;
DROP TABLE pg_temp.regress_simhash_attack_same;
DROP TABLE public.regress_simhash_attack_same;

-- == simhash_similar_nearest on a table with a column named t ==
-- Its query named the row t, which such a column took over (42804, "structure of query
-- does not match"), with a key column or without; and a temporary table named after a
-- built-in type keeps its own row type.
CREATE TABLE regress_simhash_attack_t (id integer, t text, lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(t)) STORED);
INSERT INTO regress_simhash_attack_t (id, t) VALUES
    (1, 'the quick brown fox jumps over the lazy dog near the river bank today'),
    (2, 'the quick brown fox jumps over the lazy dog near the river bank yesterday'),
    (3, 'something else entirely, about databases and their indexes');
CREATE INDEX ON regress_simhash_attack_t USING gin (t simhash_ops);
SELECT (n.doc).id, round(n.similarity::numeric, 4) AS similarity
FROM simhash_similar_nearest(NULL::regress_simhash_attack_t, 't', NULL,
                             'the quick brown fox jumps over the lazy dog near the river bank today', 10, 0.75) n;
SELECT (n.doc).id, round(n.similarity::numeric, 4) AS similarity
FROM simhash_similar_nearest(NULL::regress_simhash_attack_t, 't', 'lsh',
                             'the quick brown fox jumps over the lazy dog near the river bank today', 10, 0.75) n;
CREATE TEMP TABLE int4 (id integer, body text);
INSERT INTO int4 SELECT id, t FROM regress_simhash_attack_t;
SELECT (n.doc).id, pg_typeof(n.doc) = 'pg_temp.int4'::regtype AS own_type
FROM simhash_similar_nearest(NULL::pg_temp.int4, 'body', NULL,
                             'the quick brown fox jumps over the lazy dog near the river bank today', 10, 0.75) n;
DROP TABLE pg_temp.int4;
DROP TABLE regress_simhash_attack_t;

-- A view has no ctid, by which the searches order ties: refused up front (42809) rather than
-- with "column t.ctid does not exist" (found by the attack round).
CREATE TABLE regress_simhash_attack_v_base (id int, body text, fp bigint);
INSERT INTO regress_simhash_attack_v_base VALUES (1, 'the same words', simhash('the same words'));
CREATE VIEW regress_simhash_attack_v AS SELECT * FROM regress_simhash_attack_v_base;
\set VERBOSITY terse
SELECT * FROM simhash_nearest(NULL::regress_simhash_attack_v, 'fp', simhash('the same words'), 1);
SELECT * FROM simhash_similar_nearest(NULL::regress_simhash_attack_v, 'body', NULL, 'the same words', 1, 0.8);
-- the table itself is served
SELECT (n.doc).id, n.distance FROM simhash_nearest(NULL::regress_simhash_attack_v_base, 'fp', simhash('the same words'), 1) n;
DROP VIEW regress_simhash_attack_v;
DROP TABLE regress_simhash_attack_v_base;
