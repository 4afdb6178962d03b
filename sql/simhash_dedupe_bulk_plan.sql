-- The load's plan (dedupe_bulk.c): with a similarity threshold, simhash_dedupe_insert()
-- finds the pairs among its rows with the all-pairs engine before writing, searches the
-- table once for each distinct text, and the trigger takes its answer from the plan
-- instead of searching whenever the plan knows it. The answer must be the trigger's, row
-- for row: each load is compared with the same rows inserted in one statement through the
-- trigger (INSERT ... SELECT in the same order), skip and link at 0.7, 0.8 and 0.9,
-- with identical copies, texts that differ only in case (identical shingle sets: ties for
-- link), NULL and character-less texts, into tables with rows already in them, a plan
-- past maintenance_work_mem, a partitioned table, reject at 0.8 and a caller who may not
-- read the rows; and checked against a brute force.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- 1,500 texts in families: an original of 40 words and copies with words replaced (near
-- duplicates at 0.7 to 0.9, some not), identical copies, copies in upper case, shuffled.
CREATE TABLE words AS SELECT i, substr(md5(i::text), 1, 3 + i % 6) AS w FROM generate_series(0, 999) i;
CREATE TABLE fam AS
SELECT f, v, (SELECT string_agg(CASE WHEN v > 0 AND p % 9 = (f + v) % 9 AND p / 9 < v
                                     THEN 'edit' || v || '_' || p ELSE w END, ' ' ORDER BY p)
              FROM generate_series(0, 39) p JOIN words ON words.i = (f * 37 + p * 101) % 1000) AS body
FROM generate_series(1, 250) f, generate_series(0, 4) v;
CREATE TABLE src AS
SELECT row_number() OVER (ORDER BY md5(f || '/' || v || '/' || c)) AS id,
       CASE WHEN c = 2 THEN upper(body) ELSE body END AS body
FROM fam, generate_series(0, 2) c
WHERE c = 0 OR (c = 1 AND (f + v) % 3 = 0) OR (c = 2 AND (f + v) % 5 = 0);
INSERT INTO src VALUES (5001, NULL), (5002, '...'), (5003, '...');
SELECT count(*) AS texts, count(DISTINCT body) AS distinct_texts FROM src;

-- One table loaded through the trigger row by row, one by simhash_dedupe_insert(); both
-- hold the same rows first (ids above 10000, near duplicates of loaded rows among them).
CREATE FUNCTION make_pair(t float8, policy text, preload bool DEFAULT true) RETURNS void
LANGUAGE plpgsql SET client_min_messages = warning AS $$
BEGIN
  DROP TABLE IF EXISTS by_row, by_load;
  CREATE TABLE by_row (id bigint PRIMARY KEY, body text, lsh bigint[], dup_of bigint);
  CREATE TABLE by_load (LIKE by_row INCLUDING ALL);
  CREATE INDEX ON by_row USING gin (lsh) WITH (fastupdate = off);
  CREATE INDEX ON by_load USING gin (lsh) WITH (fastupdate = off);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON by_row FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L%s)',
                 'body', 'lsh', 'similarity=' || t, policy, CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON by_load FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L%s)',
                 'body', 'lsh', 'similarity=' || t, policy, CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END);
  IF preload AND policy <> 'reject' THEN
    INSERT INTO by_row SELECT 10000 + id, body FROM src WHERE id % 10 = 0 ORDER BY id;
    INSERT INTO by_load SELECT 10000 + id, body FROM src WHERE id % 10 = 0 ORDER BY id;
  END IF;
END $$;
-- The rows that differ between the two tables (0: the same rows, keys, links).
CREATE FUNCTION differ() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FROM by_row r FULL JOIN by_load l USING (id)
          WHERE r IS NULL OR l IS NULL OR (r.body, r.lsh, r.dup_of) IS DISTINCT FROM (l.body, l.lsh, l.dup_of));
END $$;
CREATE FUNCTION compare(t float8, policy text, query text, preload bool DEFAULT true,
                        OUT by_row bigint, OUT by_load bigint, OUT differ bigint, OUT kept bigint, OUT linked bigint)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM make_pair(t, policy, preload);
  EXECUTE 'INSERT INTO by_row (id, body) SELECT id, body FROM (' || query || ') q';
  GET DIAGNOSTICS by_row = ROW_COUNT;
  by_load := simhash_dedupe_insert('by_load', query);
  differ := differ();
  kept := (SELECT count(*) FROM by_load);
  linked := (SELECT count(dup_of) FROM by_load);
END $$;

-- skip and link at 0.7, 0.8, 0.9, into a table with rows and into an empty one: the same
-- rows and links as row by row
SELECT t, policy, preload, c.*
FROM (VALUES (0.7), (0.8), (0.9)) t(t), (VALUES ('skip'), ('link')) p(policy),
     (VALUES (true), (false)) l(preload),
     LATERAL compare(t, policy, 'SELECT id, body FROM src ORDER BY id', preload) c
ORDER BY policy, t, preload;

-- the brute force: after skip at 0.8, no two rows at or above 0.8 that share a key, and
-- every text offered is in the table or near a row in it
SELECT make_pair(0.8, 'skip', false);
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src ORDER BY id') AS inserted;
SELECT count(*) AS near_pairs_left FROM by_load a JOIN by_load b ON a.id < b.id AND a.lsh && b.lsh
WHERE simhash_jaccard(a.body, b.body) >= 0.8;
SELECT count(*) AS dropped_without_reason FROM src s
WHERE s.body IS NOT NULL AND NOT EXISTS (SELECT FROM by_load d WHERE d.id = s.id)
  AND NOT EXISTS (SELECT FROM by_load d WHERE d.lsh && simhash_lsh(s.body) AND simhash_jaccard(d.body, s.body) >= 0.8);
-- ... and link: every row linked to a near original when it has a near row before it
SELECT make_pair(0.8, 'link', false);
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src ORDER BY id') AS inserted;
SELECT count(*) AS bad_links FROM by_load a JOIN by_load b ON b.id = a.dup_of
WHERE NOT (a.lsh && b.lsh AND simhash_jaccard(a.body, b.body) >= 0.8);
SELECT count(*) AS missed_links FROM by_load a
WHERE a.dup_of IS NULL AND EXISTS (SELECT FROM by_load b WHERE b.id < a.id AND a.lsh && b.lsh
                                   AND simhash_jaccard(a.body, b.body) >= 0.8);

-- The plan answers the trigger: the DEBUG1 summary of loads (skip, link; a table with rows)
SELECT make_pair(0.8, 'skip');
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src ORDER BY id') AS inserted;
RESET client_min_messages;
SELECT make_pair(0.8, 'link');
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src ORDER BY id') AS inserted;
RESET client_min_messages;

-- maintenance_work_mem 1MB: the engine's sets past it (in temporary files), the plan
-- within it; then a plan past it (15,000 rows: every row searched); the same answer as
-- row by row
SET maintenance_work_mem = '1MB';
SET client_min_messages = debug1;
SELECT * FROM compare(0.8, 'link', 'SELECT id, body FROM src ORDER BY id', false);
RESET client_min_messages;
SET client_min_messages = debug1;
SELECT * FROM compare(0.8, 'link', $$SELECT id, body FROM src UNION ALL SELECT id + 10000 * g, body || ' x' || g FROM src, generate_series(1, 7) g ORDER BY id$$, false);
RESET client_min_messages;
RESET maintenance_work_mem;

-- reject: the first near duplicate in the load's order fails it, with the trigger's message
SELECT make_pair(0.8, 'reject');
INSERT INTO by_row SELECT id, body FROM src ORDER BY id;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src ORDER BY id');
SELECT count(*) AS rows_after_failed_load FROM by_load;
-- ... a load without near duplicates goes in whole, answered by the plan
CREATE TABLE uniq AS SELECT id, body FROM src s
WHERE body IS NOT NULL AND NOT EXISTS (SELECT FROM src o WHERE o.id <> s.id AND o.body IS NOT NULL
      AND simhash_lsh(o.body) && simhash_lsh(s.body) AND simhash_jaccard(o.body, s.body) >= 0.8);
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM uniq ORDER BY id') = (SELECT count(*) FROM uniq) AS all_inserted;
RESET client_min_messages;
-- ... a row near one of them, in a later load, is rejected (the table is searched first)
SELECT simhash_dedupe_insert('by_load', $$SELECT 9999 AS id, body || ' x' AS body FROM uniq ORDER BY id LIMIT 1$$);

-- A partitioned table: rows route to either partition, links across them (compared with
-- the same table loaded row by row: a tie for link goes to the smallest key, in either)
CREATE TABLE parts (id bigint PRIMARY KEY, body text, lsh bigint[], dup_of bigint) PARTITION BY HASH (id);
CREATE TABLE parts_a PARTITION OF parts FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE parts_b PARTITION OF parts FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE INDEX ON parts USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON parts FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
CREATE TABLE parts_row (id bigint PRIMARY KEY, body text, lsh bigint[], dup_of bigint) PARTITION BY HASH (id);
CREATE TABLE parts_row_a PARTITION OF parts_row FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE parts_row_b PARTITION OF parts_row FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE INDEX ON parts_row USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON parts_row FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
INSERT INTO parts_row SELECT id, body FROM src ORDER BY id;
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('parts', 'SELECT id, body FROM src ORDER BY id') AS inserted;
RESET client_min_messages;
SELECT count(*) AS differ FROM parts p FULL JOIN parts_row r USING (id)
WHERE p IS NULL OR r IS NULL OR (p.body, p.dup_of) IS DISTINCT FROM (r.body, r.dup_of);

-- link by a caller who may not read the rows (no SELECT; UPDATE to lock the table): refused
-- as row by row is
CREATE ROLE regress_simhash_bulk_plan_writer;
SELECT make_pair(0.8, 'link', false);
GRANT INSERT, UPDATE ON by_load TO regress_simhash_bulk_plan_writer;
GRANT USAGE ON SCHEMA public TO regress_simhash_bulk_plan_writer;
GRANT SELECT ON src TO regress_simhash_bulk_plan_writer;
SET ROLE regress_simhash_bulk_plan_writer;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src ORDER BY id');
RESET ROLE;
SELECT count(*) AS rows_after_refused_load FROM by_load;
REVOKE ALL ON src, by_load FROM regress_simhash_bulk_plan_writer;
REVOKE USAGE ON SCHEMA public FROM regress_simhash_bulk_plan_writer;
DROP ROLE regress_simhash_bulk_plan_writer;

-- Long texts, stored out of line (TOAST writes under the load's command id): the plan
-- answers every row, the same links as row by row
SELECT * FROM compare(0.8, 'link', $$SELECT f * 10 + v AS id, (SELECT string_agg(CASE WHEN v > 0 AND j % 50 = v THEN 'x' ELSE md5(f || '/' || j) END, ' ') FROM generate_series(1, 200) j) AS body FROM generate_series(1, 8) f, generate_series(0, 2) v ORDER BY 1$$, false);
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('by_load', $$SELECT 1000 + f * 10 + v AS id, (SELECT string_agg(CASE WHEN v > 0 AND j % 50 = v THEN 'y' ELSE md5(f || '/' || j || 'b') END, ' ') FROM generate_series(1, 200) j) AS body FROM generate_series(1, 8) f, generate_series(0, 2) v ORDER BY 1$$) AS inserted;
RESET client_min_messages;
SELECT pg_relation_size(reltoastrelid) > 0 AS stored_out_of_line FROM pg_class WHERE oid = 'by_load'::regclass;

-- A user's trigger on INSERT may write the table while the load does (here: a row trigger
-- that fires before ours and moves row 1, text and keys, onto the text of row 3, which then
-- must be skipped): the plan stays off (every row searched), the same rows as row by row
CREATE TABLE hook_src (id int, body text);
INSERT INTO hook_src VALUES
 (1, 'Permission is hereby granted, free of charge, to any person obtaining a copy of this software.'),
 (2, 'This program is free software; you can redistribute it and/or modify it under the terms.'),
 (3, 'The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat by the door.');
CREATE FUNCTION hook_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id = 2 THEN
    EXECUTE format('UPDATE %I SET body = b, lsh = simhash_lsh(b) FROM (SELECT body AS b FROM hook_src WHERE id = 3) s WHERE id = 1', TG_TABLE_NAME);
  END IF;
  RETURN NEW;
END $$;
SELECT make_pair(0.8, 'skip', false);
CREATE TRIGGER a_touch BEFORE INSERT ON by_row FOR EACH ROW EXECUTE FUNCTION hook_touch();
CREATE TRIGGER a_touch BEFORE INSERT ON by_load FOR EACH ROW EXECUTE FUNCTION hook_touch();
INSERT INTO by_row SELECT id, body FROM hook_src ORDER BY id;
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM hook_src ORDER BY id') AS inserted;
RESET client_min_messages;
SELECT differ(), (SELECT array_agg(id ORDER BY id) FROM by_load) AS kept;

DROP TABLE words, fam, src, uniq, by_row, by_load, parts, parts_row, hook_src;
DROP FUNCTION hook_touch();
DROP FUNCTION make_pair(float8, text, bool), differ(), compare(float8, text, text, bool);
