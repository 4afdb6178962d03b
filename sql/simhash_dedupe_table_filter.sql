-- The table filter (dedupe_table_filter.c): with a distance, a long COPY or INSERT whose
-- transaction holds the table lock reads the table's fingerprints from a block index
-- once, and the trigger then skips the search of a row with no fingerprint within k. The
-- answer must be the trigger's, row for row: each statement here is compared with the same
-- rows inserted one by one, in the same order, by a function (one INSERT a row: no
-- statement searches often enough for a filter, which its DEBUG1 lines would show), for
-- every policy, at k = 1, 3 and 6, into a table with rows in it and into a partitioned
-- one; then the statements the filter must stay away from (a data-modifying WITH, ON
-- CONFLICT DO UPDATE, SQL run by a default that writes the table, an UPDATE between two
-- statements of one transaction, a rolled back savepoint) and a brute force.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- 1,500 texts in families: an original of 30 words and copies with 1 to 4 words replaced
-- (near duplicates at small k, some not), in a shuffled order.
CREATE TABLE words AS SELECT i, substr(md5(i::text), 1, 3 + i % 6) AS w FROM generate_series(0, 999) i;
CREATE TABLE fam AS
SELECT f, v, (SELECT string_agg(CASE WHEN v > 0 AND p % 7 = (f + v) % 7 AND p / 7 < v
                                     THEN 'edit' || v || '_' || p ELSE w END, ' ' ORDER BY p)
              FROM generate_series(0, 29) p JOIN words ON words.i = (f * 37 + p * 101) % 1000) AS body
FROM generate_series(1, 300) f, generate_series(0, 4) v;
CREATE TABLE src AS SELECT row_number() OVER (ORDER BY md5(f || '/' || v)) AS id, body FROM fam;
INSERT INTO src VALUES (2001, NULL), (2002, '...');

-- by_stmt is loaded by one statement (the filter), by_func by the same rows inserted one by
-- one (no filter); both hold the same 200 rows first.
CREATE FUNCTION make_pair(k int, policy text) RETURNS void LANGUAGE plpgsql
SET client_min_messages = warning AS $$
BEGIN
  DROP TABLE IF EXISTS by_stmt, by_func;
  CREATE TABLE by_stmt (id bigint PRIMARY KEY, body text, fp bigint, dup_of bigint);
  CREATE TABLE by_func (LIKE by_stmt INCLUDING ALL);
  PERFORM simhash_create_index('by_stmt', 'fp', k, k + 1);
  PERFORM simhash_create_index('by_func', 'fp', k, k + 1);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON by_stmt FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L%s)',
                 'body', 'fp', 'k=' || k, policy, CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON by_func FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L%s)',
                 'body', 'fp', 'k=' || k, policy, CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END);
  IF policy <> 'reject' THEN
    INSERT INTO by_stmt SELECT 5000 + id, body FROM src WHERE id % 8 = 0 ORDER BY id;
    INSERT INTO by_func SELECT 5000 + id, body FROM src WHERE id % 8 = 0 ORDER BY id;
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
-- The rows that differ between the two tables (0: the same rows, fingerprints, links).
CREATE FUNCTION differ() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FROM by_stmt s FULL JOIN by_func f USING (id)
          WHERE s IS NULL OR f IS NULL OR (s.body, s.fp, s.dup_of) IS DISTINCT FROM (f.body, f.fp, f.dup_of));
END $$;

-- skip and link at k = 1, 3, 6: the statement builds the filter (DEBUG1: its size and the
-- searches before it), and keeps the same rows and links as the function
SELECT make_pair(1, 'skip');
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT id, body FROM src ORDER BY id;
COMMIT;
SELECT load_func('by_func', 'SELECT id, body FROM src ORDER BY id') AS inserted, differ(),
       (SELECT count(*) FROM by_stmt) AS kept;

SELECT make_pair(3, 'skip');
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT id, body FROM src ORDER BY id;
COMMIT;
SELECT load_func('by_func', 'SELECT id, body FROM src ORDER BY id') AS inserted, differ(),
       (SELECT count(*) FROM by_stmt) AS kept;
-- the brute force: no two rows within 3, and every text offered is in the table or
-- within 3 of a row in it
SELECT count(*) AS near_pairs_left FROM by_stmt a JOIN by_stmt b ON a.id < b.id AND hamming(a.fp, b.fp) <= 3;
SELECT count(*) AS dropped_without_reason FROM src s
WHERE simhash(s.body) IS NOT NULL
  AND NOT EXISTS (SELECT FROM by_stmt d WHERE hamming(d.fp, simhash(s.body)) <= 3);

SELECT make_pair(6, 'skip');
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT id, body FROM src ORDER BY id;
COMMIT;
SELECT load_func('by_func', 'SELECT id, body FROM src ORDER BY id') AS inserted, differ(),
       (SELECT count(*) FROM by_stmt) AS kept;

SELECT make_pair(3, 'link');
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT id, body FROM src ORDER BY id;
COMMIT;
SELECT load_func('by_func', 'SELECT id, body FROM src ORDER BY id') AS inserted, differ(),
       (SELECT count(dup_of) FROM by_stmt) AS linked;

SELECT make_pair(6, 'link');
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO by_stmt (id, body) SELECT id, body FROM src ORDER BY id;
COMMIT;
SELECT load_func('by_func', 'SELECT id, body FROM src ORDER BY id') AS inserted, differ(),
       (SELECT count(dup_of) FROM by_stmt) AS linked;

-- reject: rows without a near duplicate go in whole by the filter; a later statement's
-- row near one of them is rejected, with the trigger's message
SELECT make_pair(3, 'reject');
CREATE TABLE uniq AS SELECT DISTINCT ON (fp) id, body, fp FROM (SELECT id, body, simhash(body) AS fp FROM src) s
WHERE NOT EXISTS (SELECT FROM src o WHERE o.id < s.id AND hamming(simhash(o.body), s.fp) <= 3) ORDER BY fp, id;
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT id, body FROM uniq ORDER BY id;
COMMIT;
SELECT (SELECT count(*) FROM by_stmt) = (SELECT count(*) FROM uniq) AS all_inserted;
INSERT INTO by_stmt (id, body) SELECT 9999, body FROM uniq ORDER BY id LIMIT 1;
-- ... and in one statement: the near duplicate comes after the filter is made
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO by_stmt (id, body) SELECT id + 10000, body || ' more' FROM uniq UNION ALL SELECT 9999, (SELECT body FROM uniq ORDER BY id LIMIT 1) ORDER BY 1;
ROLLBACK;

-- COPY FROM: the same (the statement is a COPY at top level)
-- (psql's \copy, through a file in the current directory)
SELECT make_pair(3, 'skip');
\copy (SELECT id, body FROM src ORDER BY id) TO 'simhash_table_filter.tmp'
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
\copy by_stmt (id, body) FROM 'simhash_table_filter.tmp'
COMMIT;
\! rm -f simhash_table_filter.tmp
SELECT load_func('by_func', 'SELECT id, body FROM src ORDER BY id') AS inserted, differ(),
       (SELECT count(*) FROM by_stmt) AS kept;

-- A partitioned table: each partition's index read, rows route to either
CREATE TABLE parts (id bigint, lang text, body text, fp bigint, dup_of bigint, PRIMARY KEY (id, lang))
    PARTITION BY LIST (lang);
CREATE TABLE parts_a PARTITION OF parts FOR VALUES IN ('a');
CREATE TABLE parts_b PARTITION OF parts FOR VALUES IN ('b');
SELECT count(*) AS blocks FROM simhash_create_index('parts', 'fp', 3, 4);
CREATE TRIGGER dedupe BEFORE INSERT ON parts FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
INSERT INTO parts SELECT 5000 + id, 'b', body FROM src WHERE id % 8 = 0;
BEGIN;
LOCK TABLE parts IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO parts (id, lang, body) SELECT id, CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END, body FROM src ORDER BY id;
COMMIT;
SELECT count(*) AS kept, (SELECT count(*) FROM by_stmt) AS kept_unpartitioned FROM parts WHERE id < 5000;
SELECT count(*) AS near_pairs_left FROM parts a JOIN parts b ON (a.id, a.lang) < (b.id, b.lang) AND hamming(a.fp, b.fp) <= 3;

-- Writes the trigger does not see, made while the filter is in use: the filter is dropped
-- (DEBUG1), and the near duplicate the write makes is found. Each moves row 5008 onto a
-- text no other row is near (fresh()); the statement later offers that text again as row
-- 3000, which skip must drop.
CREATE FUNCTION fresh() RETURNS text LANGUAGE sql IMMUTABLE AS
  $$ SELECT string_agg(md5(i::text), ' ') FROM generate_series(1, 30) i $$;
-- a data-modifying WITH, run when the statement's rows are all in (same command id)
SELECT make_pair(3, 'skip');
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
WITH u AS (UPDATE by_stmt SET body = fresh(), fp = simhash(fresh()) WHERE id = 5008 RETURNING id)
INSERT INTO by_stmt (id, body)
SELECT * FROM (SELECT id, body FROM src ORDER BY id) a UNION ALL SELECT 3000, fresh() FROM u;
COMMIT;
SELECT count(*) AS row_3000_kept FROM by_stmt WHERE id = 3000;
-- ON CONFLICT DO UPDATE writing a fingerprint of its own
SELECT make_pair(3, 'skip');
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body)
SELECT * FROM (SELECT id, body FROM src ORDER BY id) a UNION ALL VALUES (5008, 'a text of its own'), (3000, fresh())
ON CONFLICT (id) DO UPDATE SET body = fresh(), fp = simhash(fresh());
COMMIT;
SELECT count(*) AS row_3000_kept FROM by_stmt WHERE id = 3000;
-- a default whose function writes the table while the rows are written (at its 1000th call)
SELECT make_pair(3, 'skip');
CREATE SEQUENCE calls;
CREATE FUNCTION touch_at_1000() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  IF nextval('calls') = 1000 THEN
    UPDATE by_stmt SET body = fresh(), fp = simhash(fresh()) WHERE id = 5008;
  END IF;
  RETURN NULL;
END $$;
ALTER TABLE by_stmt ALTER COLUMN dup_of SET DEFAULT touch_at_1000();
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT * FROM (SELECT id, body FROM src ORDER BY id) a UNION ALL SELECT 3000, fresh();
COMMIT;
SELECT count(*) AS row_3000_kept FROM by_stmt WHERE id = 3000;
ALTER TABLE by_stmt ALTER COLUMN dup_of DROP DEFAULT;
-- an UPDATE between two statements of one transaction: the second makes its own filter
SELECT make_pair(3, 'skip');
BEGIN;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT id, body FROM src ORDER BY id;
UPDATE by_stmt SET body = fresh(), fp = simhash(fresh()) WHERE id = 5008;
INSERT INTO by_stmt (id, body) SELECT id + 10000, body || ' again' FROM src UNION ALL SELECT 3000, fresh() ORDER BY 1;
COMMIT;
SELECT count(*) AS row_3000_kept FROM by_stmt WHERE id = 3000;
-- a savepoint rolled back after the filter was made (its locks released with it): the
-- next statement starts without it
SELECT make_pair(3, 'skip');
BEGIN;
SAVEPOINT a;
LOCK TABLE by_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO by_stmt (id, body) SELECT id, body FROM src ORDER BY id;
ROLLBACK TO a;
INSERT INTO by_stmt (id, body) VALUES (3000, fresh());
COMMIT;
-- nothing is left near anything, after all of them
SELECT count(*) AS near_pairs_left FROM by_stmt a JOIN by_stmt b ON a.id < b.id AND hamming(a.fp, b.fp) <= 3;

-- maintenance_work_mem: the filter is made only when its making fits (k + 4 copies of each
-- fingerprint, plus its tables and the radix sort's counts: at k = 3, 46,811 fingerprints
-- in 4096 kB, 9,362 in 2048 kB); either way every new row is kept. (Before, only the made
-- filter was counted: 12,000 fingerprints were read in 2048 kB, about 2.3 MB at the peak.)
CREATE TABLE big (id bigint PRIMARY KEY, body text, fp bigint);
INSERT INTO big SELECT i, md5(i::text) || ' ' || md5((-i)::text), simhash(md5(i::text) || ' ' || md5((-i)::text))
FROM generate_series(1, 12000) i;
SELECT count(DISTINCT fp) AS fingerprints FROM big;
SELECT count(*) AS blocks FROM simhash_create_index('big', 'fp', 3, 4);
CREATE TRIGGER dedupe BEFORE INSERT ON big FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
BEGIN;
LOCK TABLE big IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL maintenance_work_mem = '4096kB';
SET LOCAL client_min_messages = debug1;
INSERT INTO big (id, body) SELECT i, md5(i::text) || ' new' FROM generate_series(100001, 101000) i;
ROLLBACK;
BEGIN;
LOCK TABLE big IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL maintenance_work_mem = '2048kB';
SET LOCAL client_min_messages = debug1;
INSERT INTO big (id, body) SELECT i, md5(i::text) || ' new' FROM generate_series(100001, 101000) i;
COMMIT;
SELECT count(*) AS new_rows_kept FROM big WHERE id > 100000;
DROP TABLE big;

DROP TABLE by_stmt, by_func, parts, uniq, src, fam, words CASCADE;
DROP SEQUENCE calls;
DROP FUNCTION touch_at_1000();
DROP FUNCTION fresh();
DROP FUNCTION load_func(text, text);
DROP FUNCTION differ();
DROP FUNCTION make_pair(int, text);
