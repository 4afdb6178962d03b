-- The simhash_dedupe() trigger: arguments, policies, statements of every kind, partitions,
-- bulk loads, what messages reveal. Concurrency is tested by the isolation specs.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

CREATE TABLE docs (id bigint PRIMARY KEY, body text, fp bigint, dup_of bigint, n integer);
SELECT count(*) FROM simhash_create_index('docs', 'fp', 6);

-- bad arguments are reported when the trigger is created (by the event trigger
-- simhash_dedupe_check_trigger), with the SQLSTATE the first row written would get; the
-- state of the table (the layout serving k, the partitions) is checked at the first row.
-- try() says where each error came from; an accepted trigger's row is deleted again.
CREATE FUNCTION pg_temp.try(tbl text, args text, ins text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP TRIGGER IF EXISTS t ON %I', tbl);
    BEGIN
        EXECUTE format('CREATE TRIGGER t BEFORE INSERT OR UPDATE ON %I FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%s)', tbl, args);
    EXCEPTION WHEN OTHERS THEN
        RETURN 'at CREATE TRIGGER ' || SQLSTATE || ': ' || SQLERRM;
    END;
    EXECUTE ins;
    EXECUTE format('DELETE FROM %I', tbl);
    RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
    RETURN 'at INSERT ' || SQLSTATE || ': ' || SQLERRM;
END $$;
SET client_min_messages = warning;
SELECT args, pg_temp.try('docs', args, $$INSERT INTO docs (id, body) VALUES (1, 'x')$$) AS result
FROM unnest(ARRAY[
    $$'body', 'fp', '3'$$,
    $$'body', 'fp', '3', 'reject', 'dup_of'$$,
    $$'nope', 'fp', '3', 'reject'$$,
    $$'body', 'nope', '3', 'reject'$$,
    $$'n', 'fp', '3', 'reject'$$,
    $$'body', 'n', '3', 'reject'$$,
    $$'body', 'fp', 'three', 'reject'$$,
    $$'body', 'fp', '-1', 'reject'$$,
    $$'body', 'fp', '17', 'reject'$$,
    $$'body', 'fp', '7', 'reject'$$,
    $$'body', 'fp', '3', 'delete'$$,
    $$'body', 'fp', '3', 'link'$$,
    $$'body', 'fp', '3', 'link', 'nope'$$,
    $$'body', 'fp', '3', 'link', 'n'$$,
    $$'body', 'fp', '3', 'link', 'fp'$$,
    $$'body', 'fp', '3', 'link', 'id'$$,
    $$'body', 'fp', '3', 'reject'$$,
    -- the kind of limit written out: k=N, a distance
    $$'body', 'fp', 'k=3', 'reject'$$,
    $$'body', 'fp', 'k=3', 'link', 'dup_of'$$,
    $$'body', 'fp', 'k=0', 'skip'$$,
    $$'body', 'fp', 'k=17', 'reject'$$,
    $$'body', 'fp', 'k=7', 'reject'$$,
    $$'body', 'fp', 'k=', 'reject'$$,
    $$'body', 'fp', 'k=+3', 'reject'$$,
    $$'body', 'fp', 'k= 3', 'reject'$$,
    $$'body', 'fp', 'k=3.0', 'reject'$$,
    $$'body', 'fp', 'K=3', 'reject'$$,
    $$'body', 'fp', 'distance=3', 'reject'$$,
    $$'body', 'fp', 'similarity=0.8', 'reject'$$,
    $$'body', 'fp', 'k=3', 'link'$$]) AS args;
RESET client_min_messages;
TRUNCATE docs;
-- the kind of trigger, at CREATE TRIGGER too
CREATE TRIGGER wrong AFTER INSERT ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
CREATE TRIGGER wrong BEFORE INSERT ON docs FOR EACH STATEMENT EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
CREATE TRIGGER wrong BEFORE INSERT OR DELETE ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
CREATE TRIGGER wrong BEFORE DELETE ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'docs'::regclass;
-- CREATE OR REPLACE TRIGGER is checked too, and a failed replacement keeps the old trigger
CREATE TRIGGER t BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'reject');
CREATE OR REPLACE TRIGGER t BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=33', 'reject');
SELECT tgname, encode(tgargs, 'escape') AS args FROM pg_trigger WHERE tgrelid = 'docs'::regclass;
DROP TRIGGER t ON docs;
-- other functions' triggers are left alone
CREATE FUNCTION pg_temp.noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER other AFTER DELETE ON docs FOR EACH ROW EXECUTE FUNCTION pg_temp.noop('nope', 'k=99');
DROP TRIGGER other ON docs;
SELECT simhash_dedupe();

-- Texts: two licence sentences and their near duplicates (case, punctuation, one word).
CREATE TABLE texts (name text PRIMARY KEY, body text);
INSERT INTO texts VALUES
  ('mit', 'Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files, to deal in the Software without restriction.'),
  ('mit-case', 'PERMISSION IS HEREBY GRANTED, FREE OF CHARGE, TO ANY PERSON OBTAINING A COPY OF THIS SOFTWARE AND ASSOCIATED DOCUMENTATION FILES, TO DEAL IN THE SOFTWARE WITHOUT RESTRICTION.'),
  ('mit-punct', 'Permission is hereby granted free of charge to any person obtaining a copy of this software and associated documentation files to deal in the Software without restriction'),
  ('gpl', 'This program is free software; you can redistribute it and/or modify it under the terms of the GNU General Public License as published by the Free Software Foundation.'),
  ('gpl-case', 'this program is free software you can redistribute it and or modify it under the terms of the gnu general public license as published by the free software foundation'),
  ('bsd', 'Redistribution and use in source and binary forms, with or without modification, are permitted provided that the following conditions are met.'),
  ('zh', '自由软件基金会发布了新版本的通用公共许可证，允许用户自由地复制、修改和分发软件。'),
  ('zh-punct', '自由软件基金会发布了新版本的通用公共许可证 允许用户自由地复制 修改和分发软件'),
  ('empty', '   '),
  ('empty2', '...');

-- reject: SQLSTATE 23505 naming the existing row and the distance
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
INSERT INTO docs (id, body) SELECT 1, body FROM texts WHERE name = 'mit';
INSERT INTO docs (id, body) SELECT 2, body FROM texts WHERE name = 'gpl';
INSERT INTO docs (id, body) SELECT 3, body FROM texts WHERE name = 'mit-case';
INSERT INTO docs (id, body) SELECT 3, body FROM texts WHERE name = 'gpl-case';
INSERT INTO docs (id, body) SELECT 4, body FROM texts WHERE name = 'zh';
INSERT INTO docs (id, body) SELECT 5, body FROM texts WHERE name = 'zh-punct';
\set VERBOSITY default
INSERT INTO docs (id, body) SELECT 6, body FROM texts WHERE name = 'mit-punct';
\set VERBOSITY terse
-- texts without tokens have no fingerprint and are never duplicates of each other
INSERT INTO docs (id, body) SELECT 6, body FROM texts WHERE name = 'empty';
INSERT INTO docs (id, body) SELECT 7, body FROM texts WHERE name = 'empty2';
INSERT INTO docs (id, body) VALUES (8, NULL);
-- a fingerprint given explicitly is kept and checked
INSERT INTO docs (id, body, fp) VALUES (9, 'anything at all', (SELECT fp FROM docs WHERE id = 2) # 5);
INSERT INTO docs (id, body, fp) VALUES (9, 'anything at all', 12345);
SELECT id, fp = simhash(body) AS fp_is_simhash, fp IS NULL AS no_fp FROM docs ORDER BY id;

-- a statement whose own rows are near duplicates of each other (INSERT ... SELECT, COPY)
INSERT INTO docs (id, body) VALUES (10, 'the first of two'), (11, 'THE FIRST OF TWO!');
INSERT INTO docs (id, body) SELECT 10, body FROM texts WHERE name = 'bsd';
COPY docs (id, body) FROM stdin;
12	Unrelated text about the weather in the mountains during a long and cold winter.
13	unrelated TEXT about the weather in the mountains, during a long and cold winter!
\.
SELECT count(*) FROM docs WHERE id >= 10;

-- UPDATE: a changed text gets a new fingerprint and is checked; the row itself does not count
UPDATE docs SET body = upper(body) WHERE id = 1;
UPDATE docs SET body = (SELECT body FROM texts WHERE name = 'gpl-case') WHERE id = 1;
UPDATE docs SET body = body || ' And one more sentence that changes it enough to be different.' WHERE id = 1;
SELECT id, fp = simhash(body) AS fp_is_simhash FROM docs WHERE id = 1;
UPDATE docs SET body = NULL WHERE id = 10;
SELECT fp IS NULL AS cleared FROM docs WHERE id = 10;

-- skip: the near duplicate is dropped; the row count shows it
DROP TRIGGER dedupe ON docs;
TRUNCATE docs;
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'skip');
WITH inserted AS (
    INSERT INTO docs (id, body) SELECT row_number() OVER (ORDER BY name), body FROM texts RETURNING 1)
SELECT count(*) AS inserted, (SELECT count(*) FROM texts) AS offered FROM inserted;
SELECT t.name FROM docs d JOIN texts t ON t.body = d.body ORDER BY d.id;
COPY docs (id, body) FROM stdin;
20	Unrelated text about the weather in the mountains during a long and cold winter.
21	unrelated TEXT about the weather in the mountains, during a long and cold winter!
22	A third text, about something else: the price of bread in small villages.
\.
SELECT id FROM docs WHERE id >= 20 ORDER BY id;
UPDATE docs SET body = (SELECT body FROM texts WHERE name = 'gpl-case') WHERE body = (SELECT body FROM texts WHERE name = 'bsd');
SELECT count(*) AS bsd_kept FROM docs WHERE body = (SELECT body FROM texts WHERE name = 'bsd');

-- link: the row is kept and points at the original (originals first, then the nearest)
DROP TRIGGER dedupe ON docs;
TRUNCATE docs;
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
INSERT INTO docs (id, body) SELECT row_number() OVER (ORDER BY name), body FROM texts ORDER BY name;
SELECT d.id, t.name, o.name AS duplicate_of FROM docs d JOIN texts t ON t.body = d.body
LEFT JOIN docs od ON od.id = d.dup_of LEFT JOIN texts o ON o.body = od.body ORDER BY d.id;
-- a text that stops being a near duplicate is unlinked
UPDATE docs SET body = 'Something else entirely, nothing like any licence text in this table.' WHERE dup_of IS NOT NULL AND id = (SELECT min(id) FROM docs WHERE dup_of IS NOT NULL);
SELECT count(*) FILTER (WHERE dup_of IS NOT NULL) AS linked FROM docs;

-- the fingerprint may also be a generated column: the trigger computes the same value
CREATE TABLE generated (id integer PRIMARY KEY, body text, fp bigint GENERATED ALWAYS AS (simhash(body)) STORED);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON generated FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
SELECT count(*) FROM simhash_create_index('generated', 'fp', 3);
INSERT INTO generated (id, body) SELECT 1, body FROM texts WHERE name = 'gpl';
INSERT INTO generated (id, body) SELECT 2, body FROM texts WHERE name = 'gpl-case';
UPDATE generated SET body = 'Something else entirely, nothing like any licence text in this table.';
SELECT id, fp = simhash(body) AS fp_is_simhash FROM generated;
DROP TABLE generated;
-- ... but only by simhash(text column): the trigger could not compute another expression
CREATE TABLE generated (id integer PRIMARY KEY, body text,
                        fp bigint GENERATED ALWAYS AS (simhash(body, 'word', 2)) STORED);
CREATE TRIGGER dedupe BEFORE INSERT ON generated FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
DROP TABLE generated;

-- a table with the trigger gets a layout of k + 1 blocks: one lookup per block and row
CREATE TABLE triggered (id integer PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER dedupe BEFORE INSERT ON triggered FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '5', 'reject');
SELECT count(*) AS blocks FROM simhash_create_index('triggered', 'fp', 5);
-- at most 16 blocks (k = 16), at least 2 (k = 0)
DROP TRIGGER dedupe ON triggered;
CREATE TRIGGER dedupe BEFORE INSERT ON triggered FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '16', 'reject');
SELECT count(*) AS blocks FROM simhash_create_index('triggered', 'fp', 16);
SELECT sum(probes) AS lookups FROM simhash_search_plan('triggered', 'fp', 16);
INSERT INTO triggered (id, body) VALUES (1, 'A layout of sixteen blocks of four bits each serves the trigger at distance sixteen.');
DROP TRIGGER dedupe ON triggered;
CREATE TRIGGER dedupe BEFORE INSERT ON triggered FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '0', 'reject');
SELECT count(*) AS blocks FROM simhash_create_index('triggered', 'fp', 0);
DROP TABLE triggered;

-- without block indexes the trigger still works, and says so once per session
DROP TRIGGER dedupe ON docs;
CREATE TABLE plain (id integer PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER dedupe BEFORE INSERT ON plain FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
INSERT INTO plain (id, body) SELECT 1, body FROM texts WHERE name = 'mit';
INSERT INTO plain (id, body) SELECT 2, body FROM texts WHERE name = 'gpl';
INSERT INTO plain (id, body) SELECT 3, body FROM texts WHERE name = 'mit-case';
DROP TABLE plain;

-- across the partitions of a partitioned table
CREATE TABLE parts (id integer PRIMARY KEY, body text, fp bigint) PARTITION BY RANGE (id);
CREATE TABLE parts_low PARTITION OF parts FOR VALUES FROM (0) TO (100);
CREATE TABLE parts_high PARTITION OF parts FOR VALUES FROM (100) TO (200);
SELECT count(*) FROM simhash_create_index('parts', 'fp', 3);
CREATE TRIGGER dedupe BEFORE INSERT ON parts FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
INSERT INTO parts (id, body) SELECT 1, body FROM texts WHERE name = 'gpl';
INSERT INTO parts (id, body) SELECT 150, body FROM texts WHERE name = 'gpl-case';
INSERT INTO parts_high (id, body) SELECT 151, body FROM texts WHERE name = 'gpl-case';
INSERT INTO parts (id, body) SELECT 152, body FROM texts WHERE name = 'bsd';
SELECT id FROM parts ORDER BY id;
DROP TABLE parts;
-- skip and an UPDATE that moves a row between partitions: a moved row that is a near
-- duplicate keeps its old version (it used to be deleted, its insert dropped)
CREATE TABLE parts (id integer PRIMARY KEY, body text, fp bigint) PARTITION BY RANGE (id);
CREATE TABLE parts_low PARTITION OF parts FOR VALUES FROM (0) TO (100);
CREATE TABLE parts_high PARTITION OF parts FOR VALUES FROM (100) TO (200);
SELECT count(*) FROM simhash_create_index('parts', 'fp', 3);
INSERT INTO parts (id, body, fp) SELECT i, body, simhash(body)
FROM (VALUES (1, 'gpl'), (2, 'gpl-case'), (3, 'bsd')) v (i, n) JOIN texts ON name = n;
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE ON parts FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'skip');
UPDATE parts SET id = 102 WHERE id = 2;
UPDATE parts SET id = 103 WHERE id = 3;
SELECT tableoid::regclass AS partition, id FROM parts ORDER BY id;
DROP TABLE parts;
-- a foreign partition cannot be searched: a clear error, not a crash or a duplicate let in
CREATE FOREIGN DATA WRAPPER simhash_test_fdw;
CREATE SERVER simhash_test_server FOREIGN DATA WRAPPER simhash_test_fdw;
CREATE TABLE parts (id integer, body text, fp bigint) PARTITION BY RANGE (id);
CREATE TABLE parts_low PARTITION OF parts FOR VALUES FROM (0) TO (100);
CREATE FOREIGN TABLE parts_remote PARTITION OF parts FOR VALUES FROM (100) TO (200)
    SERVER simhash_test_server;
-- (a partitioned table's arguments are checked at CREATE TRIGGER, its partitions at the first row)
CREATE TRIGGER bad BEFORE INSERT ON parts FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'nope', '3', 'reject');
CREATE TRIGGER dedupe BEFORE INSERT ON parts FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
INSERT INTO parts (id, body) SELECT 1, body FROM texts WHERE name = 'mit';
DROP TABLE parts;
DROP SERVER simhash_test_server;
DROP FOREIGN DATA WRAPPER simhash_test_fdw;

-- a key that is not a single column, or no key at all
\set VERBOSITY default
CREATE TABLE pairs (a integer, b integer, body text, fp bigint, PRIMARY KEY (a, b));
CREATE TRIGGER dedupe BEFORE INSERT ON pairs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
INSERT INTO pairs SELECT 1, 2, body FROM texts WHERE name = 'bsd';
INSERT INTO pairs SELECT 1, 3, upper(body) FROM texts WHERE name = 'bsd';
CREATE TABLE nokey (body text, fp bigint);
CREATE TRIGGER dedupe BEFORE INSERT ON nokey FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
INSERT INTO nokey SELECT body FROM texts WHERE name = 'bsd';
INSERT INTO nokey SELECT upper(body) FROM texts WHERE name = 'bsd';
DROP TABLE pairs, nokey;
\set VERBOSITY terse

-- what a reject message reveals: the key and the distance only to callers who may read
-- the row; to others, that a row within the limit exists (as a unique index would)
\set VERBOSITY default
CREATE TABLE secret (id integer PRIMARY KEY, body text, fp bigint, owner name DEFAULT current_user);
CREATE TRIGGER dedupe BEFORE INSERT ON secret FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
INSERT INTO secret (id, body) SELECT 1, body FROM texts WHERE name = 'gpl';
CREATE ROLE regress_simhash_writer;
GRANT INSERT ON secret TO regress_simhash_writer;
SET ROLE regress_simhash_writer;
INSERT INTO secret (id, body) SELECT 2, 'this program is free software you can redistribute it and or modify it under the terms of the gnu general public license as published by the free software foundation';
RESET ROLE;
GRANT SELECT ON secret TO regress_simhash_writer;
SET ROLE regress_simhash_writer;
INSERT INTO secret (id, body) SELECT 2, 'this program is free software you can redistribute it and or modify it under the terms of the gnu general public license as published by the free software foundation';
RESET ROLE;
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON secret USING (owner = current_user);
SET ROLE regress_simhash_writer;
INSERT INTO secret (id, body) SELECT 2, 'this program is free software you can redistribute it and or modify it under the terms of the gnu general public license as published by the free software foundation';
RESET ROLE;
-- link would write the hidden row's key into the writer's row: refused (42501); under
-- row-level security every key counts as hidden (the trigger does not evaluate policies),
-- without it a writer with SELECT gets the link
DROP TRIGGER dedupe ON secret;
ALTER TABLE secret ADD COLUMN dup_of integer;
CREATE TRIGGER dedupe BEFORE INSERT ON secret FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
SET ROLE regress_simhash_writer;
INSERT INTO secret (id, body) SELECT 2, 'this program is free software you can redistribute it and or modify it under the terms of the gnu general public license as published by the free software foundation';
INSERT INTO secret (id, body) VALUES (3, 'a text of the writer''s own, about nothing in particular at all');
INSERT INTO secret (id, body) VALUES (4, 'A TEXT OF THE WRITER''S OWN, about nothing in particular at all!');
RESET ROLE;
ALTER TABLE secret DISABLE ROW LEVEL SECURITY;
SET ROLE regress_simhash_writer;
INSERT INTO secret (id, body) VALUES (4, 'A TEXT OF THE WRITER''S OWN, about nothing in particular at all!');
SELECT id, dup_of FROM secret ORDER BY id;
RESET ROLE;
DROP TABLE secret;
-- column grants on the key, the text and the fingerprint are enough (what the link tells
-- comes from them), on a partitioned table too (granted on the parent, where the writer
-- writes, not on the partition that holds the row); sql/simhash_dedupe_security.sql
-- checks that the key alone is not
CREATE TABLE pkeyed (id integer PRIMARY KEY, body text, fp bigint, dup_of integer) PARTITION BY RANGE (id);
CREATE TABLE pkeyed_a PARTITION OF pkeyed FOR VALUES FROM (0) TO (1000);
CREATE TRIGGER dedupe BEFORE INSERT ON pkeyed FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
INSERT INTO pkeyed (id, body) SELECT 1, body FROM texts WHERE name = 'gpl';
GRANT INSERT ON pkeyed TO regress_simhash_writer;
GRANT SELECT (id, body, fp) ON pkeyed TO regress_simhash_writer;
SET ROLE regress_simhash_writer;
INSERT INTO pkeyed (id, body) VALUES (2, 'this program is free software you can redistribute it and or modify it under the terms of the gnu general public license as published by the free software foundation');
RESET ROLE;
SELECT id, dup_of FROM pkeyed ORDER BY id;
DROP TABLE pkeyed;
DROP ROLE regress_simhash_writer;
\set VERBOSITY terse

-- A bulk load in one transaction: past 4096 advisory locks (fewer on a small lock table:
-- 976 with the default settings) the trigger takes the table lock instead (nobody else is
-- writing), and stops taking advisory locks.
TRUNCATE docs;
CREATE TRIGGER dedupe BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'skip');
BEGIN;
INSERT INTO docs (id, body) SELECT i, 'document number ' || i || ' of the bulk load, with words ' || md5(i::text) FROM generate_series(1, 3000) i;
SELECT count(*) FILTER (WHERE locktype = 'advisory' AND objsubid = 21320) BETWEEN 500 AND 4096 AS some_advisory_locks,
       bool_or(relation = 'docs'::regclass AND mode = 'ShareRowExclusiveLock') AS table_locked
FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
-- near duplicates of one another in a long batch: only the first of each family stays
INSERT INTO docs (id, body)
SELECT 10000 + i, CASE WHEN i % 2 = 0 THEN upper(t.body) ELSE t.body END
FROM generate_series(1, 200) i, texts t WHERE t.name = 'mit';
SELECT count(*) AS rows, count(*) FILTER (WHERE id > 10000) AS mit_copies_kept FROM docs;
-- brute force: no two rows within 3 bits
SELECT count(*) AS near_pairs FROM docs a JOIN docs b ON a.id < b.id AND hamming(a.fp, b.fp) <= 3;


-- With a similarity threshold instead of a distance: the key column (bigint[]) holds
-- simhash_lsh(body), candidates are the rows sharing a key (through a GIN index) and a row
-- is a near duplicate when its simhash_jaccard reaches the threshold. Rows offered one by
-- one in id order; afterwards, by brute force over every pair (no keys involved): no two
-- kept rows are near duplicates, and every skipped row is a near duplicate of a kept row
-- before it.
CREATE TABLE sim_offered (id integer PRIMARY KEY, body text);
INSERT INTO sim_offered
SELECT row_number() OVER (ORDER BY t.name, v), CASE v
         WHEN 0 THEN t.body
         WHEN 1 THEN upper(t.body)
         WHEN 2 THEN regexp_replace(t.body, '^(\S+\s+){2}', '')
         WHEN 3 THEN t.body || ' With one more sentence added at the end of it.'
         ELSE regexp_replace(t.body, '(\S+\s+){6}$', '')
       END
FROM texts t, generate_series(0, 4) v;
CREATE TABLE sim_kept (id integer PRIMARY KEY, body text, lsh bigint[], dup_of integer);
CREATE INDEX sim_kept_lsh ON sim_kept USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER sim_dedupe BEFORE INSERT OR UPDATE OF body ON sim_kept FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'skip');
INSERT INTO sim_kept (id, body) SELECT id, body FROM sim_offered ORDER BY id;
SELECT (SELECT count(*) FROM sim_offered) AS offered, count(*) AS kept,
       count(*) FILTER (WHERE lsh IS DISTINCT FROM simhash_lsh(body)) AS wrong_keys
FROM sim_kept;
SELECT count(*) AS near_pairs_kept
FROM sim_kept a JOIN sim_kept b ON a.id < b.id
WHERE simhash_jaccard(a.body, b.body) >= 0.8;
SELECT count(*) AS skipped,
       count(*) FILTER (WHERE NOT EXISTS (
           SELECT FROM sim_kept k WHERE k.id < o.id
             AND simhash_jaccard(k.body, o.body) >= 0.8)) AS skipped_wrongly
FROM sim_offered o WHERE o.id NOT IN (SELECT id FROM sim_kept);
-- the same without the GIN index: every row reads the table (a NOTICE says so), same answer
DROP INDEX sim_kept_lsh;
CREATE TABLE sim_kept2 (LIKE sim_kept);
CREATE TRIGGER sim_dedupe BEFORE INSERT ON sim_kept2 FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'skip');
INSERT INTO sim_kept2 (id, body) SELECT id, body FROM sim_offered ORDER BY id;
SELECT (SELECT array_agg(id ORDER BY id) FROM sim_kept) = (SELECT array_agg(id ORDER BY id) FROM sim_kept2) AS same_rows_kept;
DROP TABLE sim_kept2;
CREATE INDEX sim_kept_lsh ON sim_kept USING gin (lsh) WITH (fastupdate = off);
-- a GIN index that collects new entries in its pending list (fastupdate, the default) makes
-- every row read the list: a NOTICE says how to turn it off
CREATE TABLE sim_pending (id integer PRIMARY KEY, body text, lsh bigint[]);
CREATE INDEX sim_pending_lsh ON sim_pending USING gin (lsh);
CREATE TRIGGER sim_dedupe BEFORE INSERT ON sim_pending FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'skip');
\set VERBOSITY default
INSERT INTO sim_pending (id, body) SELECT id, body FROM sim_offered ORDER BY id;
\set VERBOSITY terse
SELECT count(*) AS kept FROM sim_pending;
DROP TABLE sim_pending;
-- reject names the most similar row; link links to it
DROP TRIGGER sim_dedupe ON sim_kept;
CREATE TRIGGER sim_dedupe BEFORE INSERT OR UPDATE OF body ON sim_kept FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'reject');
\set VERBOSITY default
INSERT INTO sim_kept (id, body) SELECT 1000, upper(body) FROM sim_kept WHERE id = 1;
\set VERBOSITY terse
DROP TRIGGER sim_dedupe ON sim_kept;
CREATE TRIGGER sim_dedupe BEFORE INSERT OR UPDATE OF body ON sim_kept FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.9', 'link', 'dup_of');
INSERT INTO sim_kept (id, body)
SELECT 2000 + row_number() OVER (ORDER BY id), body || '!' FROM (SELECT * FROM sim_kept WHERE cardinality(lsh) > 0 ORDER BY id LIMIT 3) k;
INSERT INTO sim_kept (id, body) VALUES (2004, 'An unrelated sentence about the weather in the mountains during a long winter');
SELECT k.id, k.dup_of, o.id AS original FROM sim_kept k
LEFT JOIN (SELECT id, row_number() OVER (ORDER BY id) AS n FROM sim_kept WHERE id < 2000 AND cardinality(lsh) > 0) o ON k.id = 2000 + o.n
WHERE k.id BETWEEN 2001 AND 2003 ORDER BY k.id;
-- an update that makes a row similar to another is linked too
UPDATE sim_kept SET body = (SELECT body FROM sim_kept WHERE id < 2000 ORDER BY id LIMIT 1 OFFSET 5) WHERE id = 2004;
SELECT dup_of = (SELECT id FROM sim_kept WHERE id < 2000 ORDER BY id LIMIT 1 OFFSET 5) AS linked FROM sim_kept WHERE id = 2004;
-- an update that leaves the text as it is keeps the link (no search, nothing can be new)
UPDATE sim_kept SET body = body WHERE id BETWEEN 2001 AND 2004;
SELECT count(*) FILTER (WHERE dup_of IS NOT NULL) AS still_linked FROM sim_kept WHERE id BETWEEN 2001 AND 2004;
-- an update never closes a cycle of links: it links only to originals
CREATE TABLE chain (id integer PRIMARY KEY, body text, fp bigint, dup_of integer);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE ON chain FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
INSERT INTO chain (id, body) SELECT 1, body FROM texts WHERE name = 'gpl';
INSERT INTO chain (id, body) SELECT 2, body FROM texts WHERE name = 'gpl-case';
INSERT INTO chain (id, body) SELECT 3, body FROM texts WHERE name = 'bsd';
-- 1, an original that 2 links to, becomes a copy of 2: it may not link to 2 (a cycle)
UPDATE chain SET body = (SELECT body FROM chain WHERE id = 2) WHERE id = 1;
-- 3 becomes a copy of 2 too: it links to 1, the only original near it
UPDATE chain SET body = (SELECT body FROM chain WHERE id = 2) WHERE id = 3;
SELECT id, dup_of FROM chain ORDER BY id;
DROP TABLE chain;
-- bad thresholds, wrong column types, and generated key columns
CREATE TABLE sim_bad (id integer PRIMARY KEY, body text, fp bigint, lsh bigint[],
                      gfp bigint GENERATED ALWAYS AS (simhash(body)) STORED,
                      glsh bigint[] GENERATED ALWAYS AS (simhash_lsh(upper(body))) STORED,
                      good bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED);
-- (the threshold is written in plain decimals; 0.7 is the lowest served)
SET client_min_messages = warning;
SELECT args, pg_temp.try('sim_bad', args, $$INSERT INTO sim_bad (id, body) VALUES (1, 'x')$$) AS result
FROM unnest(ARRAY[
    $$'body', 'lsh', '0.5', 'skip'$$,
    $$'body', 'lsh', '1.5', 'skip'$$,
    $$'body', 'lsh', '0.x', 'skip'$$,
    $$'body', 'fp', '0.8', 'skip'$$,
    $$'body', 'lsh', '3', 'skip'$$,
    $$'body', 'glsh', '0.8', 'skip'$$,
    $$'body', 'lsh', ' 0.9', 'skip'$$,
    $$'body', 'lsh', '0x.e', 'skip'$$,
    $$'body', 'lsh', '0.69', 'skip'$$,
    $$'body', 'lsh', '0.7', 'skip'$$,
    -- the kind of limit written out: similarity=T, a threshold (a whole 1 too)
    $$'body', 'lsh', 'similarity=0.8', 'skip'$$,
    $$'body', 'lsh', 'similarity=.85', 'reject'$$,
    $$'body', 'lsh', 'similarity=1', 'skip'$$,
    $$'body', 'lsh', 'similarity=1.0', 'skip'$$,
    $$'body', 'lsh', 'similarity=0.69', 'skip'$$,
    $$'body', 'lsh', 'similarity=3', 'skip'$$,
    $$'body', 'lsh', 'similarity=', 'skip'$$,
    $$'body', 'lsh', 'similarity=0.8.1', 'skip'$$,
    $$'body', 'lsh', 'similarity =0.8', 'skip'$$,
    $$'body', 'lsh', 'k=0.8', 'skip'$$,
    $$'body', 'lsh', 'k=3', 'skip'$$,
    $$'body', 'fp', 'similarity=0.8', 'skip'$$,
    $$'body', 'glsh', 'similarity=0.8', 'skip'$$]) AS args;
RESET client_min_messages;
CREATE TRIGGER b1 BEFORE INSERT ON sim_bad FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'good', '0.8', 'skip');
INSERT INTO sim_bad (id, body) VALUES (1, 'The quick brown fox jumps over the lazy dog near the river bank');
INSERT INTO sim_bad (id, body) VALUES (2, 'The quick brown fox jumps over the lazy dog near the river bank!');
SELECT id, good = simhash_lsh(body) AS good_keys FROM sim_bad ORDER BY id;
DELETE FROM sim_bad;
-- 0.7 is the lowest threshold served
DROP TRIGGER b1 ON sim_bad;
CREATE TRIGGER b1 BEFORE INSERT ON sim_bad FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.7', 'skip');
INSERT INTO sim_bad (id, body) VALUES (1, 'The quick brown fox jumps over the lazy dog near the river bank');
INSERT INTO sim_bad (id, body) VALUES (2, 'The quick brown fox jumps over a lazy dog near the river');
SELECT id FROM sim_bad ORDER BY id;
DELETE FROM sim_bad;
-- with a threshold the keys are always the text's own: given ones are replaced, a row
-- without text has none (and is no duplicate), a text without characters an empty array
DROP TRIGGER b1 ON sim_bad;
CREATE TRIGGER b1 BEFORE INSERT OR UPDATE ON sim_bad FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'reject');
INSERT INTO sim_bad (id, body) VALUES (1, 'The quick brown fox jumps over the lazy dog near the river bank');
INSERT INTO sim_bad (id, body, lsh) VALUES (2, 'The quick brown fox jumps over the lazy dog near the river bank', '{1,2,3}');
INSERT INTO sim_bad (id, body, lsh) SELECT 3, NULL, lsh FROM sim_bad WHERE id = 1;
INSERT INTO sim_bad (id, body, lsh) VALUES (4, NULL, '{5}'), (5, '...', '{6}'), (6, '!!!', NULL);
UPDATE sim_bad SET lsh = (SELECT lsh FROM sim_bad WHERE id = 1) WHERE id = 4;
SELECT id, body IS NULL AS no_text, lsh FROM sim_bad WHERE id > 1 ORDER BY id;
DROP TABLE sim_bad, sim_kept, sim_offered;

-- a char(n) text column: a key column generated as simhash(body) or simhash_lsh(body) is
-- what the trigger computes (PostgreSQL casts the column to text for the call)
CREATE TABLE chars (id integer PRIMARY KEY, body char(200),
                    fp bigint GENERATED ALWAYS AS (simhash(body)) STORED,
                    lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED);
CREATE INDEX ON chars USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON chars FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
INSERT INTO chars (id, body) SELECT 1, body FROM texts WHERE name = 'gpl';
INSERT INTO chars (id, body) SELECT 2, body FROM texts WHERE name = 'gpl-case';
DROP TRIGGER dedupe ON chars;
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON chars FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'reject');
INSERT INTO chars (id, body) SELECT 2, body FROM texts WHERE name = 'gpl-case';
INSERT INTO chars (id, body) SELECT 3, body FROM texts WHERE name = 'bsd';
SELECT id, fp = simhash(body) AS fp_is_simhash, lsh = simhash_lsh(body) AS lsh_is_simhash_lsh
FROM chars ORDER BY id;
DROP TABLE chars;

-- link: the key is stored as it is, so a link column must take every key: the key's type
-- with its modifier or none (varchar(3) would hold 15 characters, numeric(10,2) 3 decimals)
CREATE TABLE narrow (k varchar(40) PRIMARY KEY, body text, fp bigint, dup_of varchar(3));
CREATE TRIGGER dedupe BEFORE INSERT ON narrow FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
ALTER TABLE narrow ALTER COLUMN dup_of TYPE varchar(40);
CREATE TRIGGER dedupe BEFORE INSERT ON narrow FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
INSERT INTO narrow (k, body) SELECT 'a-long-key-0001', body FROM texts WHERE name = 'mit';
INSERT INTO narrow (k, body) SELECT 'b', body FROM texts WHERE name = 'mit-case';
ALTER TABLE narrow ALTER COLUMN dup_of TYPE varchar;
INSERT INTO narrow (k, body) SELECT 'c', body FROM texts WHERE name = 'mit-punct';
SELECT k, dup_of FROM narrow ORDER BY k;
DROP TABLE narrow;
CREATE TABLE narrow (k numeric PRIMARY KEY, body text, fp bigint, dup_of numeric(10, 2));
CREATE TRIGGER dedupe BEFORE INSERT ON narrow FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
DROP TABLE narrow;

DROP TABLE docs, texts;

-- The hints' SQL names a table in another schema, with odd names, so that it can be run
-- as it is.
\set VERBOSITY default
CREATE SCHEMA "Dedupe S";
CREATE TABLE "Dedupe S"."Odd Table" (id int PRIMARY KEY, body text, "F P" bigint);
CREATE TRIGGER odd_skip BEFORE INSERT ON "Dedupe S"."Odd Table" FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'F P', '3', 'skip');
INSERT INTO "Dedupe S"."Odd Table" VALUES (1, 'a text in a table with an odd name');
SELECT count(*) FROM simhash_create_index('"Dedupe S"."Odd Table"', 'F P', 1);
INSERT INTO "Dedupe S"."Odd Table" VALUES (2, 'another text in a table with an odd name');
SELECT count(*) FROM simhash_create_index('"Dedupe S"."Odd Table"', 'F P', 3);
INSERT INTO "Dedupe S"."Odd Table" VALUES (2, 'another text in a table with an odd name');
DROP SCHEMA "Dedupe S" CASCADE;
\set VERBOSITY terse

-- link, exact ties: of two originals equally near (the same text, written before the
-- trigger; the larger key first in the table, so first met), the smaller key wins, with
-- a distance and with a threshold, as through a view and from the statement memo.
CREATE TABLE ties (id bigint PRIMARY KEY, body text, fp bigint, lsh bigint[], dup_of bigint);
INSERT INTO ties (id, body, fp, lsh)
SELECT i, b, simhash(b), simhash_lsh(b)
FROM (VALUES (20), (10)) v(i), (VALUES ('The same licence text, word for word, in two rows of the table.')) t(b);
SELECT count(*) > 0 AS layout FROM simhash_create_index('ties', 'fp', 3);
CREATE INDEX ON ties USING gin (lsh);
CREATE TRIGGER t BEFORE INSERT ON ties FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'link', 'dup_of');
INSERT INTO ties (id, body) VALUES (30, 'The same licence text, word for word, in two rows of the table.');
DROP TRIGGER t ON ties;
CREATE TRIGGER t BEFORE INSERT ON ties FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
INSERT INTO ties (id, body) VALUES (40, 'The same licence text, word for word, in two rows of the table.');
SELECT id, dup_of FROM ties ORDER BY ctid;
DROP TABLE ties;
