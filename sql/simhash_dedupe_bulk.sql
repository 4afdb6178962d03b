-- simhash_dedupe_insert(): the bulk load that takes all the lock keys of its rows at once
-- (the deadlock it avoids: specs/simhash_dedupe_bulk_deadlock.spec; many loads at once:
-- test/stress/dedupe_stress.sh --mode bulk). Here: the policies, the keys it takes (the
-- very keys the trigger takes row by row), the table lock for a large load, errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
DROP ROLE IF EXISTS regress_simhash_bulk_writer;
RESET client_min_messages;
\set VERBOSITY terse
CREATE ROLE regress_simhash_bulk_writer;

-- Texts: licence paragraphs and their near duplicates (case, punctuation), and unrelated
-- rows (md5 words).
CREATE TABLE src (n integer PRIMARY KEY, body text);
INSERT INTO src VALUES
  (1, 'Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files, to deal in the Software without restriction.'),
  (2, 'This program is free software; you can redistribute it and/or modify it under the terms of the GNU General Public License as published by the Free Software Foundation.'),
  (3, 'PERMISSION IS HEREBY GRANTED, FREE OF CHARGE, TO ANY PERSON OBTAINING A COPY OF THIS SOFTWARE AND ASSOCIATED DOCUMENTATION FILES, TO DEAL IN THE SOFTWARE WITHOUT RESTRICTION.'),
  (4, 'Redistribution and use in source and binary forms, with or without modification, are permitted provided that the following conditions are met.'),
  (5, 'this program is free software you can redistribute it and or modify it under the terms of the gnu general public license as published by the free software foundation'),
  (6, NULL),
  (7, '...');
INSERT INTO src SELECT 100 + i, 'unrelated ' || md5(i::text) || ' ' || md5((i + 1000)::text) || ' words'
FROM generate_series(1, 300) i;

-- skip, with a distance: near duplicates within the load (3 of 1, 5 of 2) and of rows in
-- the table (4) are dropped; NULL and token-less texts go in unchecked
CREATE TABLE docs (id integer PRIMARY KEY, body text, fp bigint, dup_of integer);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body, fp ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
SELECT count(*) AS blocks FROM simhash_create_index('docs', 'fp', 3);
INSERT INTO docs (id, body) SELECT 40, upper(body) FROM src WHERE n = 4;
SELECT simhash_dedupe_insert('docs', 'SELECT n AS id, body FROM src WHERE n < 100 ORDER BY n') AS inserted;
SELECT id, fp = simhash(body) AS fp_is_simhash FROM docs ORDER BY id;
-- a given fingerprint is kept and checked, as by INSERT
SELECT simhash_dedupe_insert('docs', $$SELECT 8 AS id, 'anything' AS body, fp FROM docs WHERE id = 1$$) AS inserted;
SELECT simhash_dedupe_insert('docs', $$SELECT 8 AS id, 'anything' AS body, 12345::bigint AS fp$$) AS inserted;
SELECT id, fp FROM docs WHERE id = 8;

-- The lock budget of a transaction (dedupe_locks.c: a quarter of the shared lock table);
-- the trigger first tries for the table lock at half of it (or 4,096 locks). Rows with
-- random fingerprints, given explicitly: 4 distinct lock keys each at k = 3.
SELECT current_setting('max_locks_per_transaction')::bigint *
       (current_setting('max_connections')::int + current_setting('autovacuum_max_workers')::int + 1 +
        current_setting('max_worker_processes')::int + current_setting('max_wal_senders')::int +
        current_setting('max_prepared_transactions')::int) / 4 AS budget \gset
CREATE TABLE rnd AS SELECT 1000 + i AS id, 'row ' || i AS body, ('x' || md5(i::text))::bit(64)::bigint AS fp
FROM generate_series(1, :budget / 4 + :budget / 64) i;
-- The keys it takes are the keys the trigger takes row by row (the same set in pg_locks),
-- held until the end of the transaction.
BEGIN;
SELECT simhash_dedupe_insert('docs', 'SELECT n AS id, body FROM src WHERE n BETWEEN 101 AND 150') AS inserted;
SELECT simhash_dedupe_insert('docs', format('SELECT id, body, fp FROM rnd WHERE id <= %s', 1000 + :budget / 32)) = :budget / 32 AS all_inserted;
SELECT count(*) AS n_bulk, array_agg(objid ORDER BY objid)::text AS keys_bulk FROM pg_locks
WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND objsubid = 21320 AND classid = 'docs'::regclass::oid \gset
ROLLBACK;
BEGIN;
INSERT INTO docs (id, body) SELECT n, body FROM src WHERE n BETWEEN 101 AND 150;
INSERT INTO docs (id, body, fp) SELECT id, body, fp FROM rnd WHERE id <= 1000 + :budget / 32;
SELECT array_agg(objid ORDER BY objid)::text AS keys_rows FROM pg_locks
WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND objsubid = 21320 AND classid = 'docs'::regclass::oid \gset
ROLLBACK;
SELECT :n_bulk > :budget / 8 AS many_keys, :'keys_bulk' = :'keys_rows' AS same_keys;
-- A load with as many keys as the trigger's first try for the table lock (3/4 of the
-- budget here) takes SHARE ROW EXCLUSIVE on the table instead, at once, before any row.
BEGIN;
SELECT simhash_dedupe_insert('docs', format('SELECT id, body, fp FROM rnd WHERE id <= %s', 1000 + :budget * 3 / 16)) = :budget * 3 / 16 AS all_inserted;
SELECT (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'
          AND objsubid = 21320) AS advisory_keys,
       (SELECT string_agg(mode, ', ') FROM pg_locks WHERE pid = pg_backend_pid()
          AND locktype = 'relation' AND relation = 'docs'::regclass AND mode LIKE 'Share%') AS table_lock;
ROLLBACK;
-- ... but for a role that may only insert (LOCK TABLE would refuse it): the keys, within
-- the budget; past it, refused (53400) before any row is written
GRANT SELECT ON src, rnd TO regress_simhash_bulk_writer;
GRANT INSERT ON docs TO regress_simhash_bulk_writer;
BEGIN;
SET LOCAL ROLE regress_simhash_bulk_writer;
SELECT simhash_dedupe_insert('docs', format('SELECT id, body, fp FROM rnd WHERE id <= %s', 1000 + :budget * 3 / 16)) = :budget * 3 / 16 AS all_inserted;
SELECT count(*) > :budget / 2 AS many_advisory_keys, count(*) <= :budget AS within_budget
FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND objsubid = 21320;
ROLLBACK;
BEGIN;
SET LOCAL ROLE regress_simhash_bulk_writer;
SELECT simhash_dedupe_insert('docs', 'SELECT id, body, fp FROM rnd') AS inserted;
ROLLBACK;
-- a role without INSERT is refused before any lock is taken
REVOKE INSERT ON docs FROM regress_simhash_bulk_writer;
BEGIN;
SET LOCAL ROLE regress_simhash_bulk_writer;
SELECT simhash_dedupe_insert('docs', 'SELECT n AS id, body FROM src WHERE n > 100') AS inserted;
ROLLBACK;
REVOKE SELECT ON src, rnd FROM regress_simhash_bulk_writer;

-- reject: the first near duplicate fails the whole load (23505), as the statement would
DROP TRIGGER dedupe ON docs;
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body, fp ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'reject');
TRUNCATE docs;
SELECT simhash_dedupe_insert('docs', 'SELECT n AS id, body FROM src WHERE n IN (1, 2, 4)') AS inserted;
SELECT simhash_dedupe_insert('docs', 'SELECT n AS id, body FROM src WHERE n IN (3, 150)') AS inserted;
SELECT count(*) FROM docs;

-- link, with a similarity threshold, into a partitioned table: near duplicates in other
-- partitions are found; each is linked to its original
CREATE TABLE parts (id integer PRIMARY KEY, body text, lsh bigint[], dup_of integer) PARTITION BY RANGE (id);
CREATE TABLE parts_low PARTITION OF parts FOR VALUES FROM (0) TO (3);
CREATE TABLE parts_high PARTITION OF parts FOR VALUES FROM (3) TO (1000);
CREATE INDEX ON parts USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON parts FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
SELECT simhash_dedupe_insert('parts', 'SELECT n AS id, body FROM src WHERE n < 100 OR n > 295 ORDER BY n') AS inserted;
SELECT tableoid::regclass AS part, id, dup_of, lsh = simhash_lsh(body) AS keys_ok FROM parts ORDER BY id;
-- a small load (lock keys, not the table lock): the partitions' triggers find them held
SELECT simhash_dedupe_insert('parts', 'SELECT 500 + n AS id, body FROM src WHERE n IN (1, 4)') AS inserted;
SELECT id, dup_of FROM parts WHERE id > 400 ORDER BY id;

-- The rows pass as the query's values, whatever the client's encoding: tabs, newlines,
-- backslashes, \N, non-ASCII text and NULLs come through as they are (the values of other
-- types and settings: simhash_dedupe_insert_values).
TRUNCATE docs;
SET client_encoding = 'LATIN1';
SELECT simhash_dedupe_insert('docs', $$SELECT * FROM (VALUES
    (1, E'tab\there, newline\nthere, backslash \\ and \\N, carriage\rreturn'),
    (2, convert_from('\x636166c3a920c3a0206cc3a0206dc3aa6d65'::bytea, 'UTF8')),
    (3, NULL), (4, E'\\N')) v (id, body)$$) AS inserted;
RESET client_encoding;
SELECT id, body IS NULL AS is_null, md5(body), convert_to(body, 'UTF8') FROM docs ORDER BY id;
SELECT md5(E'tab\there, newline\nthere, backslash \\ and \\N, carriage\rreturn') AS expected_md5;

-- Row-level security: the rows go in one INSERT, whose policies hold.
CREATE TABLE guarded (id integer PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER dedupe BEFORE INSERT ON guarded FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
ALTER TABLE guarded ENABLE ROW LEVEL SECURITY;
CREATE POLICY small ON guarded FOR ALL TO PUBLIC USING (true) WITH CHECK (id < 100);
GRANT SELECT, INSERT ON guarded TO regress_simhash_bulk_writer;
GRANT SELECT ON src TO regress_simhash_bulk_writer;
SET ROLE regress_simhash_bulk_writer;
SELECT simhash_dedupe_insert('guarded', 'SELECT n AS id, body FROM src WHERE n IN (1, 2, 3)') AS inserted;
SELECT simhash_dedupe_insert('guarded', 'SELECT n AS id, body FROM src WHERE n = 150') AS inserted;
RESET ROLE;
SELECT id FROM guarded ORDER BY id;
REVOKE SELECT ON src FROM regress_simhash_bulk_writer;
DROP TABLE guarded;

-- Candidates' shingle sets are kept for the statement (read once, not once per new row):
-- one statement that links families of near duplicates (link verifies every candidate)
-- links each row as row-by-row statements do, each with its own cache.
CREATE TABLE fam (n integer, body text);
INSERT INTO fam
SELECT 10 * b + v,
       CASE v % 3 WHEN 0 THEN body WHEN 1 THEN upper(body) ELSE regexp_replace(body, '[[:punct:]]', '', 'g') END
         || repeat(' and more', v / 3)
FROM src, generate_series(0, 8) v CROSS JOIN LATERAL (SELECT n AS b) x
WHERE n IN (1, 2, 4);
CREATE TABLE one_stmt (id integer PRIMARY KEY, body text, lsh bigint[], dup_of integer);
CREATE TABLE per_row (id integer PRIMARY KEY, body text, lsh bigint[], dup_of integer);
CREATE INDEX ON one_stmt USING gin (lsh) WITH (fastupdate = off);
CREATE INDEX ON per_row USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON one_stmt FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
CREATE TRIGGER dedupe BEFORE INSERT ON per_row FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
INSERT INTO one_stmt (id, body) SELECT n, body FROM fam ORDER BY n;
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT n, body FROM fam ORDER BY n LOOP
        EXECUTE 'INSERT INTO per_row (id, body) VALUES ($1, $2)' USING r.n, r.body;
    END LOOP;
END $$;
SELECT count(*) AS rows, count(dup_of) AS linked,
       (SELECT count(*) FROM one_stmt o JOIN per_row p USING (id) WHERE o.dup_of IS NOT DISTINCT FROM p.dup_of) AS same_links
FROM one_stmt;
DROP TABLE fam, one_stmt, per_row;

-- errors, each before any row is written
SELECT simhash_dedupe_insert('src', 'SELECT 1 AS n');
CREATE VIEW docs_v AS SELECT * FROM docs;
SELECT simhash_dedupe_insert('docs_v', 'SELECT 1 AS id');
SELECT simhash_dedupe_insert('docs', 'SELECT 1 AS nope, ''x'' AS body');
SELECT simhash_dedupe_insert('docs', 'SELECT 1 AS id');
SELECT simhash_dedupe_insert('docs', 'SELECT 1 AS id, ''x''::varchar AS body');
SELECT simhash_dedupe_insert('docs', 'SELECT 1 AS id, ''x'' AS body, 1 AS fp');
SELECT simhash_dedupe_insert('docs', 'SELECT 1 AS id, ''x'' AS body, ''y'' AS body');
SELECT simhash_dedupe_insert('docs', 'INSERT INTO src VALUES (999, ''x'') RETURNING n AS id, body');
SELECT simhash_dedupe_insert('docs', 'SELECT 1 AS id, ''x'' AS body; SELECT 2 AS id, ''y'' AS body');
SELECT simhash_dedupe_insert('docs', 'SELEC 1');
CREATE TRIGGER dedupe2 BEFORE INSERT ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
SELECT simhash_dedupe_insert('docs', 'SELECT 1 AS id, ''x'' AS body');
DROP TRIGGER dedupe2 ON docs;
-- a default that changes the keys the trigger sees is caught, not a silent lock miss
ALTER TABLE docs ALTER COLUMN fp SET DEFAULT 42;
SELECT simhash_dedupe_insert('docs', 'SELECT 1000 AS id, ''some text of a few words'' AS body');
ALTER TABLE docs ALTER COLUMN fp DROP DEFAULT;
SELECT simhash_dedupe_insert('docs', 'SELECT 1 AS id, body FROM src WHERE false') AS nothing;
SELECT simhash_dedupe_insert(NULL, 'SELECT 1') IS NULL AS strict;
SELECT count(*) FROM src WHERE n = 999;

-- A load past work_mem: its rows are read back from the tuplestore's temporary file, each
-- into memory that must outlive COPY's per-row context (it was freed under the slot, and
-- the backend crashed at 300,000 rows). Rows of 9.6 kB (chunks of their own), 64 kB.
CREATE TABLE big (id integer PRIMARY KEY, body text, fp bigint, dup_of integer);
SELECT count(*) AS indexes FROM simhash_create_index('big', 'fp', 3, 4);
CREATE TRIGGER dedupe BEFORE INSERT ON big FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'link', 'dup_of');
SET work_mem = '64kB';
SELECT simhash_dedupe_insert('big', $q$SELECT i AS id, repeat(md5(i::text) || ' ', 290) || md5((i % 50)::text) AS body
                                    FROM generate_series(1, 200) i$q$) AS loaded;
RESET work_mem;
SELECT count(*) AS rows, count(dup_of) AS linked,
       count(*) FILTER (WHERE body IS DISTINCT FROM repeat(md5(id::text) || ' ', 290) || md5((id % 50)::text)) AS altered
FROM big;
DROP TABLE big;

-- A query with a data-modifying WITH is allowed and runs once, before any key is taken:
-- moving rows out of a staging table (docs/dedupe.md, "The query"): only row 1 is kept (3 is
-- 1 in capitals, 11 and 13 copies of 1 and 3), and staging ends empty
CREATE TABLE staging (n integer, body text);
INSERT INTO staging SELECT n, body FROM src WHERE n IN (1, 3);
INSERT INTO staging SELECT 10 + n, body FROM src WHERE n IN (1, 3);
CREATE TABLE moved (id integer PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER dedupe BEFORE INSERT ON moved FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
SELECT count(*) AS blocks FROM simhash_create_index('moved', 'fp', 3);
SELECT simhash_dedupe_insert('moved', 'WITH m AS (DELETE FROM staging RETURNING n, body) SELECT n AS id, body FROM m ORDER BY n') AS inserted;
SELECT id FROM moved ORDER BY id;
SELECT count(*) AS left_in_staging FROM staging;
DROP TABLE staging, moved;

DROP VIEW docs_v;
DROP TABLE docs, parts, src, rnd;
DROP ROLE regress_simhash_bulk_writer;
