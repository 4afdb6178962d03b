-- The table index (dedupe_table_filter.c, with a similarity threshold): a long COPY or
-- INSERT whose transaction holds the table lock reads the table's rows once (their LSH
-- keys and shingle sets) into memory, and the trigger then answers each new row from it:
-- no GIN search, no candidate fetched. The answer must be the trigger's, row for row: each
-- statement here is compared with the same rows inserted one by one by a function (one
-- INSERT a row: no statement searches often enough for an index, which its DEBUG1 lines
-- would show), for skip and link at 0.7, 0.8 and 0.9, with and without stored sets, into a
-- table with rows in it and into a partitioned one; reject; COPY; then the statements the
-- index must stay away from (ON CONFLICT DO NOTHING, a data-modifying WITH that deletes,
-- SQL run by a default, REPEATABLE READ) and the memory bound.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- 1,500 texts in families: an original of 30 words and copies with 1 to 4 words replaced
-- (similarities from about 0.65 to 0.9), in a shuffled order.
CREATE TABLE words AS SELECT i, substr(md5(i::text), 1, 3 + i % 6) AS w FROM generate_series(0, 999) i;
CREATE TABLE fam AS
SELECT f, v, (SELECT string_agg(CASE WHEN v > 0 AND p % 7 = (f + v) % 7 AND p / 7 < v
                                     THEN 'edit' || v || '_' || p ELSE w END, ' ' ORDER BY p)
              FROM generate_series(0, 29) p JOIN words ON words.i = (f * 37 + p * 101) % 1000) AS body
FROM generate_series(1, 300) f, generate_series(0, 4) v;
CREATE TABLE src AS SELECT row_number() OVER (ORDER BY md5(f || '/' || v)) AS id, body FROM fam;
INSERT INTO src VALUES (2001, NULL), (2002, '...');
CREATE FUNCTION fresh() RETURNS text LANGUAGE sql IMMUTABLE AS
  $$ SELECT string_agg(md5(i::text), ' ') FROM generate_series(1, 30) i $$;

-- by_stmt is loaded by one statement (the index), by_func by the same rows inserted one by
-- one (no index); both hold the same 200 rows first (and row 4999, a text no other is near).
CREATE FUNCTION make_pair(t float8, policy text, sets boolean) RETURNS void LANGUAGE plpgsql
SET client_min_messages = warning AS $$
DECLARE args text := format('%L, %L, %L, %L', 'body', 'lsh', 'similarity=' || t, policy)
  || CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END
  || CASE WHEN sets THEN ', ''sets=sets''' ELSE '' END;
BEGIN
  DROP TABLE IF EXISTS by_stmt, by_func;
  CREATE TABLE by_stmt (id bigint PRIMARY KEY, body text, lsh bigint[], dup_of bigint, sets bytea);
  CREATE TABLE by_func (LIKE by_stmt INCLUDING ALL);
  CREATE INDEX ON by_stmt USING gin (lsh);
  CREATE INDEX ON by_func USING gin (lsh);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON by_stmt FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%s)', args);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON by_func FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%s)', args);
  IF policy <> 'reject' THEN
    INSERT INTO by_stmt SELECT 5000 + id, body FROM src WHERE id % 8 = 0 ORDER BY id;
    INSERT INTO by_func SELECT 5000 + id, body FROM src WHERE id % 8 = 0 ORDER BY id;
    INSERT INTO by_stmt (id, body) VALUES (4999, fresh());
    INSERT INTO by_func (id, body) VALUES (4999, fresh());
  END IF;
END $$;
CREATE FUNCTION load_func(tbl text, query text) RETURNS bigint LANGUAGE plpgsql
SET client_min_messages = debug1 AS $$
DECLARE n bigint := 0; m bigint; r record;
BEGIN
  EXECUTE format('LOCK TABLE %I IN SHARE ROW EXCLUSIVE MODE', tbl);
  FOR r IN EXECUTE query LOOP
    EXECUTE format('INSERT INTO %I (id, body) VALUES ($1, $2)', tbl) USING r.id, r.body;
    GET DIAGNOSTICS m = ROW_COUNT;
    n := n + m;
  END LOOP;
  RETURN n;
END $$;
-- The rows that differ between the two tables (0: the same rows, keys, sets, links).
CREATE FUNCTION differ() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FROM by_stmt s FULL JOIN by_func f USING (id)
          WHERE s IS NULL OR f IS NULL
             OR (s.body, s.lsh, s.dup_of, s.sets) IS DISTINCT FROM (f.body, f.lsh, f.dup_of, f.sets));
END $$;
-- The statement under test (it must run at top level: a function's INSERT is one of many).
\set load 'BEGIN; LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE; SET LOCAL client_min_messages = debug1; INSERT INTO by_stmt (id, body) SELECT id, body FROM src ORDER BY id; COMMIT;'
\set compare 'SELECT load_func(''by_func'', ''SELECT id, body FROM src ORDER BY id'') AS inserted, differ(), (SELECT count(*) FROM by_stmt) AS rows, (SELECT count(dup_of) FROM by_stmt) AS linked;'

-- skip and link at 0.7, 0.8, 0.9, with and without stored sets: the statement makes the
-- index (DEBUG1: its rows, and the searches before it) and keeps the same rows and links
SELECT make_pair(0.8, 'skip', false);
:load
:compare
-- the brute force: no two rows at or above 0.8, and every text offered is in the table
-- or at or above 0.8 to a row in it
SELECT count(*) AS similar_pairs_left FROM by_stmt a JOIN by_stmt b ON a.id < b.id
WHERE a.lsh && b.lsh AND simhash_jaccard(a.body, b.body) >= 0.8;
SELECT count(*) AS dropped_without_reason FROM src s
WHERE s.body IS NOT NULL AND simhash_lsh(s.body) <> '{}'
  AND NOT EXISTS (SELECT FROM by_stmt d WHERE simhash_jaccard(d.body, s.body) >= 0.8);

SELECT make_pair(0.8, 'skip', true);
:load
:compare
SELECT make_pair(0.7, 'skip', false);
:load
:compare
SELECT make_pair(0.9, 'skip', true);
:load
:compare
SELECT make_pair(0.8, 'link', false);
:load
:compare
SELECT make_pair(0.8, 'link', true);
:load
:compare
SELECT make_pair(0.7, 'link', true);
:load
:compare
-- link: every link names a row at or above the threshold (an original when one is)
SELECT count(*) AS bad_links FROM by_stmt a JOIN by_stmt o ON o.id = a.dup_of
WHERE simhash_jaccard(a.body, o.body) < 0.7;

-- reject: rows without a near duplicate go in whole through the index; a row near one of
-- them in a later statement, or in the same one after the index is made, is rejected
-- with the trigger's message (the search names the row)
SELECT make_pair(0.8, 'reject', false);
CREATE TABLE uniq AS SELECT id, body FROM src s
WHERE body IS NOT NULL AND NOT EXISTS (SELECT FROM src o WHERE o.id < s.id AND simhash_jaccard(o.body, s.body) >= 0.8);
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT id, body FROM uniq ORDER BY id;
COMMIT;
SELECT (SELECT count(*) FROM by_stmt) = (SELECT count(*) FROM uniq) AS all_inserted;
INSERT INTO by_stmt (id, body) SELECT 9999, body || ' x' FROM uniq ORDER BY id LIMIT 1;
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO by_stmt (id, body) SELECT id + 10000, fresh() || id FROM uniq UNION ALL SELECT 19999, (SELECT body FROM uniq ORDER BY id LIMIT 1) ORDER BY 1;
ROLLBACK;

-- COPY FROM: the same (psql's \copy, through a file in the current directory)
SELECT make_pair(0.8, 'link', false);
\copy (SELECT id, body FROM src ORDER BY id) TO 'simhash_table_index.tmp'
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
\copy by_stmt (id, body) FROM 'simhash_table_index.tmp'
COMMIT;
\! rm -f simhash_table_index.tmp
:compare

-- link by a key of type text: no index (it names rows by int2, int4 or int8 keys), every
-- row searched
CREATE TABLE parts_link (id text PRIMARY KEY, body text, lsh bigint[], dup_of text);
CREATE INDEX ON parts_link USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON parts_link FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
BEGIN;
LOCK TABLE parts_link IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO parts_link (id, body) SELECT id::text, body FROM src ORDER BY id;
COMMIT;
SELECT count(*) AS bad_links FROM parts_link a JOIN parts_link o ON o.id = a.dup_of
WHERE simhash_jaccard(a.body, o.body) < 0.8;

-- A partitioned table: each partition read, rows route to either; the same rows as into
-- one table
CREATE TABLE parts (id bigint, lang text, body text, lsh bigint[], dup_of bigint, PRIMARY KEY (id, lang))
    PARTITION BY LIST (lang);
CREATE TABLE parts_a PARTITION OF parts FOR VALUES IN ('a');
CREATE TABLE parts_b PARTITION OF parts FOR VALUES IN ('b');
CREATE INDEX ON parts USING gin (lsh);
CREATE TRIGGER dedupe BEFORE INSERT ON parts FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
INSERT INTO parts SELECT 5000 + id, 'b', body FROM src WHERE id % 8 = 0;
BEGIN;
LOCK TABLE parts IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO parts (id, lang, body) SELECT id, CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END, body FROM src ORDER BY id;
COMMIT;
SELECT make_pair(0.8, 'skip', false);
:load
SELECT (SELECT count(*) FROM parts) AS kept, count(*) - 1 AS kept_unpartitioned FROM by_stmt;

-- Writes the index does not hear of, made while it is in use: it is dropped (DEBUG1), and
-- the rows are searched. Each deletes row 4999 (a text no other row is near) or keeps a
-- row the trigger let through out of the table; the statement then offers that text again
-- as row 3000, which skip must keep.
-- a data-modifying WITH that deletes, run when the statement's rows are all in
SELECT make_pair(0.8, 'skip', false);
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
WITH d AS (DELETE FROM by_stmt WHERE id = 4999 RETURNING body)
INSERT INTO by_stmt (id, body)
SELECT * FROM (SELECT id, body FROM src ORDER BY id) a UNION ALL SELECT 3000, body FROM d;
COMMIT;
SELECT count(*) AS row_3000_kept FROM by_stmt WHERE id = 3000;
-- ON CONFLICT DO NOTHING: a row the trigger let through (id 5008 is there) is not inserted
SELECT make_pair(0.8, 'skip', false);
DELETE FROM by_stmt WHERE id = 4999;
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body)
SELECT * FROM (SELECT id, body FROM src ORDER BY id) a UNION ALL VALUES (5008, fresh()), (3000, fresh())
ON CONFLICT (id) DO NOTHING;
COMMIT;
SELECT count(*) AS row_3000_kept FROM by_stmt WHERE id = 3000;
-- a default whose function deletes a row of the table while the rows are written (SQL
-- between two rows: the state of the statement starts again, and no index is made)
SELECT make_pair(0.8, 'skip', false);
CREATE SEQUENCE calls;
CREATE FUNCTION delete_at_1000() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  IF nextval('calls') = 1000 THEN
    DELETE FROM by_stmt WHERE id = 4999;
  END IF;
  RETURN NULL;
END $$;
ALTER TABLE by_stmt ALTER COLUMN dup_of SET DEFAULT delete_at_1000();
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT * FROM (SELECT id, body FROM src ORDER BY id) a UNION ALL SELECT 3000, fresh();
COMMIT;
SELECT count(*) AS row_3000_kept FROM by_stmt WHERE id = 3000;
ALTER TABLE by_stmt ALTER COLUMN dup_of DROP DEFAULT;
-- REPEATABLE READ: no index (a search checks its rows against the transaction's snapshot)
SELECT make_pair(0.8, 'skip', false);
BEGIN ISOLATION LEVEL REPEATABLE READ;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT id, body FROM src ORDER BY id;
COMMIT;
:compare

-- maintenance_work_mem: past three quarters of it, rows are held without their sets (a
-- new row sharing a key with one is searched); past all of it, no index. Either way, the
-- same rows as one by one. (1536kB: the 443 rows read first fit, the chain heads of both
-- tables included, 512 kB; their sets only in part.)
SELECT make_pair(0.8, 'link', false);
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL maintenance_work_mem = '1536kB';
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT id, body FROM src ORDER BY id;
COMMIT;
:compare

-- Audit (round 6). Each case: rows searched one by one (single INSERTs, no index) and the
-- same texts at the end of a long statement answered by the index must be kept, skipped
-- or linked alike. 600 texts near nothing make the index (after 256 searches).
CREATE VIEW filler AS SELECT 1000 + i AS id, md5(i::text) || ' ' || md5((i + 7)::text) || ' ' || md5((i + 13)::text) AS body
FROM generate_series(1, 600) i;
-- link: two originals of the same text (written before the trigger, the larger key first
-- in the table): the search and the index both pick the smaller key (row 10)
CREATE TABLE tie (id bigint PRIMARY KEY, body text, lsh bigint[], dup_of bigint);
CREATE INDEX ON tie USING gin (lsh) WITH (fastupdate = off);
\set same '''the very same paragraph of text that two original rows hold before the trigger'''
INSERT INTO tie (id, body, lsh) VALUES (20, :same, simhash_lsh(:same));
INSERT INTO tie (id, body, lsh) VALUES (10, :same, simhash_lsh(:same));
CREATE TRIGGER dedupe BEFORE INSERT ON tie FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
INSERT INTO tie (id, body) VALUES (30, :same);
BEGIN;
LOCK TABLE tie IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO tie (id, body) SELECT * FROM filler UNION ALL SELECT 5000, :same ORDER BY 1;
COMMIT;
SELECT id, dup_of FROM tie WHERE id IN (30, 5000) ORDER BY id;
-- 'sets=sets': a well-formed stored set written while the trigger did not fire decides
-- (docs/dedupe.md), in the search as in the index, even against a byte-identical text.
-- Row 1: text x, x's keys, y's set: a new x is not near it. Row 2: text z, y's keys, y's
-- set: a new y is near it.
CREATE TABLE st (id bigint PRIMARY KEY, body text, lsh bigint[], sets bytea);
CREATE INDEX ON st USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON st FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=sets');
\set x '''a paragraph whose stored set was written for another text while the trigger was off'''
\set y '''nothing at all like it: zebra quartz jukebox vexing fjord nymph'''
\set z '''and a third text, also unlike the other two: plain words in a row'''
INSERT INTO st (id, body) VALUES (100, :y);
ALTER TABLE st DISABLE TRIGGER dedupe;
INSERT INTO st (id, body, lsh, sets) SELECT 1, :x, simhash_lsh(:x), sets FROM st WHERE id = 100;
INSERT INTO st (id, body, lsh, sets) SELECT 2, :z, simhash_lsh(:y), sets FROM st WHERE id = 100;
ALTER TABLE st ENABLE TRIGGER dedupe;
DELETE FROM st WHERE id = 100;
INSERT INTO st (id, body) VALUES (30, :x);
INSERT INTO st (id, body) VALUES (31, :y);
BEGIN;
LOCK TABLE st IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO st (id, body) SELECT * FROM filler UNION ALL VALUES (5000, :x), (5001, :y) ORDER BY 1;
COMMIT;
SELECT id FROM st WHERE id IN (30, 31, 5000, 5001) ORDER BY id;
DROP TABLE tie, st;
DROP VIEW filler;

DROP TABLE by_stmt, by_func, parts, parts_link, uniq, src, fam, words CASCADE;
DROP SEQUENCE calls;
DROP FUNCTION delete_at_1000();
DROP FUNCTION fresh();
DROP FUNCTION load_func(text, text);
DROP FUNCTION differ();
DROP FUNCTION make_pair(float8, text, boolean);
