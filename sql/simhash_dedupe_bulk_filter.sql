-- The load's filter (dedupe_bulk.c): with a distance, simhash_dedupe_insert() searches the
-- table for its fingerprints before writing, and the trigger skips the search of a row the
-- table had no near duplicate for and no row written since is within k of. The answer must
-- be the trigger's, row for row: each load here is compared with the same rows inserted
-- one statement through the trigger (INSERT ... SELECT in the same order), for every policy,
-- at k = 1, 3 and 6, into a table with rows already in it, with a filter that fills up
-- (work_mem 64kB), and into a partitioned table; and checked against a brute force.
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
SELECT count(*) AS texts, count(DISTINCT body) AS distinct_texts FROM src;

-- One table loaded through the trigger row by row, one by simhash_dedupe_insert(); both
-- hold the same 200 rows first (ids above 5000, near duplicates of loaded rows among them).
CREATE FUNCTION make_pair(k int, policy text) RETURNS void LANGUAGE plpgsql
SET client_min_messages = warning AS $$
BEGIN
  DROP TABLE IF EXISTS by_row, by_load;
  CREATE TABLE by_row (id bigint PRIMARY KEY, body text, fp bigint, dup_of bigint);
  CREATE TABLE by_load (LIKE by_row INCLUDING ALL);
  PERFORM simhash_create_index('by_row', 'fp', k, k + 1);
  PERFORM simhash_create_index('by_load', 'fp', k, k + 1);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON by_row FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L%s)',
                 'body', 'fp', 'k=' || k, policy, CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON by_load FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L%s)',
                 'body', 'fp', 'k=' || k, policy, CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END);
  IF policy <> 'reject' THEN
    INSERT INTO by_row SELECT 5000 + id, body FROM src WHERE id % 8 = 0 ORDER BY id;
    INSERT INTO by_load SELECT 5000 + id, body FROM src WHERE id % 8 = 0 ORDER BY id;
  END IF;
END $$;
-- The rows that differ between the two tables (0: the same rows, fingerprints, links).
CREATE FUNCTION differ() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FROM by_row r FULL JOIN by_load l USING (id)
          WHERE r IS NULL OR l IS NULL OR (r.body, r.fp, r.dup_of) IS DISTINCT FROM (l.body, l.fp, l.dup_of));
END $$;
-- Both tables made, then the rows of query: row by row into by_row, by the load into by_load.
CREATE FUNCTION compare(k int, policy text, query text,
                        OUT by_row bigint, OUT by_load bigint, OUT differ bigint, OUT kept bigint, OUT linked bigint)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM make_pair(k, policy);
  EXECUTE 'INSERT INTO by_row (id, body) SELECT id, body FROM (' || query || ') q';
  GET DIAGNOSTICS by_row = ROW_COUNT;
  by_load := simhash_dedupe_insert('by_load', query);
  differ := differ();
  kept := (SELECT count(*) FROM by_load);
  linked := (SELECT count(dup_of) FROM by_load);
END $$;

-- skip and link at k = 1, 3, 6: the same rows and links as row by row
SELECT k, policy, c.*
FROM (VALUES (1), (3), (6)) k(k), (VALUES ('skip'), ('link')) p(policy),
     LATERAL compare(k, policy, 'SELECT id, body FROM src ORDER BY id') c
ORDER BY policy, k;

-- the brute force: after skip at k = 3, no two rows within 3, and every text offered is
-- in the table or within 3 of a row in it
SELECT make_pair(3, 'skip');
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src ORDER BY id') AS inserted;
SELECT count(*) AS near_pairs_left FROM by_load a JOIN by_load b ON a.id < b.id AND hamming(a.fp, b.fp) <= 3;
SELECT count(*) AS dropped_without_reason FROM src s
WHERE simhash(s.body) IS NOT NULL
  AND NOT EXISTS (SELECT FROM by_load d WHERE hamming(d.fp, simhash(s.body)) <= 3);

-- The filter spares searches: the DEBUG1 summary of the load (a table with rows in it)
SELECT make_pair(3, 'skip');
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src ORDER BY id') AS inserted;
RESET client_min_messages;

-- A filter that fills up (work_mem 64kB: about 2,000 rows at k = 6): the rest of the rows
-- are searched as usual, same answer. 6,000 rows (the texts again with a suffix).
SET work_mem = '64kB';
SET client_min_messages = debug1;
SELECT * FROM compare(6, 'link', $$SELECT id, body FROM src UNION ALL SELECT id + 10000 * g, body || ' x' || g FROM src, generate_series(1, 3) g ORDER BY id$$);
RESET client_min_messages;
RESET work_mem;

-- reject: the first near duplicate in the load's order fails it, with the trigger's message
SELECT make_pair(3, 'reject');
INSERT INTO by_row SELECT id, body FROM src ORDER BY id;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src ORDER BY id');
SELECT count(*) AS rows_after_failed_load FROM by_load;
-- ... and a load without near duplicates goes in whole, by the filter alone
CREATE TABLE uniq AS SELECT DISTINCT ON (fp) id, body, fp FROM (SELECT id, body, simhash(body) AS fp FROM src) s
WHERE NOT EXISTS (SELECT FROM src o WHERE o.id < s.id AND hamming(simhash(o.body), s.fp) <= 3) ORDER BY fp, id;
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM uniq ORDER BY id') = (SELECT count(*) FROM uniq) AS all_inserted;
RESET client_min_messages;
-- ... a row near one of them, in a later load, is rejected (the filter is the load's own)
SELECT simhash_dedupe_insert('by_load', $$SELECT 9999 AS id, body FROM uniq ORDER BY id LIMIT 1$$);

-- A partitioned table: the partitions are searched before writing, rows route to either
CREATE TABLE parts (id bigint, lang text, body text, fp bigint, dup_of bigint, PRIMARY KEY (id, lang))
    PARTITION BY LIST (lang);
CREATE TABLE parts_a PARTITION OF parts FOR VALUES IN ('a');
CREATE TABLE parts_b PARTITION OF parts FOR VALUES IN ('b');
SELECT count(*) AS blocks FROM simhash_create_index('parts', 'fp', 3, 4);
CREATE TRIGGER dedupe BEFORE INSERT ON parts FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
INSERT INTO parts SELECT 5000 + id, 'b', body FROM src WHERE id % 8 = 0;
SELECT simhash_dedupe_insert('parts', $$SELECT id, CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END AS lang, body FROM src ORDER BY id$$) AS inserted;
SELECT count(*) AS near_pairs_left FROM parts a JOIN parts b ON (a.id, a.lang) < (b.id, b.lang) AND hamming(a.fp, b.fp) <= 3;

-- A user's statement trigger BEFORE INSERT that writes the table after the load searched it
-- (moves row 5008's text and fingerprint onto the text of row 3 of the load): the filter
-- stays off, and row 3 is skipped as row by row
CREATE FUNCTION stmt_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I SET body = b, fp = simhash(b) FROM (SELECT body AS b FROM src WHERE id = 3) s WHERE id = 5008', TG_TABLE_NAME);
  RETURN NULL;
END $$;
SELECT make_pair(3, 'skip');
CREATE TRIGGER touch BEFORE INSERT ON by_row FOR EACH STATEMENT EXECUTE FUNCTION stmt_touch();
CREATE TRIGGER touch BEFORE INSERT ON by_load FOR EACH STATEMENT EXECUTE FUNCTION stmt_touch();
INSERT INTO by_row (id, body) SELECT id, body FROM src WHERE id <= 3 ORDER BY id;
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src WHERE id <= 3 ORDER BY id') AS inserted;
RESET client_min_messages;
SELECT differ(), (SELECT count(*) FROM by_load WHERE id = 3) AS row_3_kept;
DROP FUNCTION stmt_touch() CASCADE;

DROP TABLE by_row, by_load, parts, uniq, src, fam, words CASCADE;
DROP FUNCTION compare(int, text, text);
DROP FUNCTION differ();
DROP FUNCTION make_pair(int, text);
