-- The load's plan (dedupe_bulk.c) knows the table as it was before the load, plus the
-- rows the trigger saw it write. SQL that writes the table while the rows are written
-- (a user's trigger that deletes or updates rows, a BEFORE STATEMENT trigger, an AFTER
-- trigger between the INSERTs of a table with row-level security) and rows written past
-- the dedupe trigger (a WHEN condition) must turn it off, so that every row gets the
-- answer of the trigger's own search: each load is compared with the same rows inserted
-- through the trigger. (Any other trigger on INSERT keeps the plan off from the start, so
-- cases 1 to 4 show no plan; case 6, a default that writes, shows the write check.)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

CREATE TABLE src (id bigint, url text, trusted bool, body text);
INSERT INTO src VALUES
  (1, 'u', true, 'the quick brown fox jumps over the lazy dog again and again today'),
  (2, 'u', false, 'the quick brown fox jumps over the lazy dog again and again today'),
  (3, 'v', false, 'a completely different sentence about cats asleep in the warm sun'),
  (4, 'w', false, 'the quick brown fox jumps over the lazy dog again and again today');

-- Two tables with the same trigger and rows: by_row written by INSERT ... SELECT, by_load
-- by simhash_dedupe_insert() with the same query.
CREATE FUNCTION make_pair(policy text, extra text DEFAULT '') RETURNS void
LANGUAGE plpgsql SET client_min_messages = warning AS $$
BEGIN
  DROP TABLE IF EXISTS by_row, by_load;
  CREATE TABLE by_row (id bigint PRIMARY KEY, url text, trusted bool, body text, lsh bigint[], dup_of bigint);
  CREATE TABLE by_load (LIKE by_row INCLUDING ALL);
  CREATE INDEX ON by_row USING gin (lsh) WITH (fastupdate = off);
  CREATE INDEX ON by_load USING gin (lsh) WITH (fastupdate = off);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE ON by_row FOR EACH ROW %s EXECUTE FUNCTION simhash_dedupe(''body'', ''lsh'', ''similarity=0.8'', %L%s)',
                 extra, policy, CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE ON by_load FOR EACH ROW %s EXECUTE FUNCTION simhash_dedupe(''body'', ''lsh'', ''similarity=0.8'', %L%s)',
                 extra, policy, CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END);
END $$;
CREATE FUNCTION load(query text) RETURNS TABLE (by_row text, by_load text)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'INSERT INTO by_row (' || (SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)
                                      FROM pg_attribute WHERE attrelid = 'pg_temp.q'::regclass AND attnum > 0)
          || ') ' || query;
  PERFORM simhash_dedupe_insert('by_load', query);
  RETURN QUERY SELECT (SELECT string_agg(id || coalesce('->' || dup_of, ''), ' ' ORDER BY id) FROM by_row),
                      (SELECT string_agg(id || coalesce('->' || dup_of, ''), ' ' ORDER BY id) FROM by_load);
END $$;

-- 1. A BEFORE INSERT trigger that fires before ours and deletes the older version of a
-- url: row 2 deletes row 1, so row 2 has no near duplicate left (the plan answered skip:
-- both rows lost; link: a link to the deleted row 1).
CREATE FUNCTION replace_old() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DELETE FROM %I WHERE url = $1', TG_TABLE_NAME) USING NEW.url;
  RETURN NEW;
END $$;
CREATE TEMP TABLE q AS SELECT id, url, body FROM src LIMIT 0;
SELECT make_pair('skip');
CREATE TRIGGER a_replace BEFORE INSERT ON by_row FOR EACH ROW EXECUTE FUNCTION replace_old();
CREATE TRIGGER a_replace BEFORE INSERT ON by_load FOR EACH ROW EXECUTE FUNCTION replace_old();
SET client_min_messages = debug1;
SELECT * FROM load('SELECT id, url, body FROM src ORDER BY id');
RESET client_min_messages;
SELECT make_pair('link');
CREATE TRIGGER a_replace BEFORE INSERT ON by_row FOR EACH ROW EXECUTE FUNCTION replace_old();
CREATE TRIGGER a_replace BEFORE INSERT ON by_load FOR EACH ROW EXECUTE FUNCTION replace_old();
SELECT * FROM load('SELECT id, url, body FROM src ORDER BY id');

-- 2. A BEFORE INSERT statement trigger that updates a row of the table (checked by the
-- trigger) into a near duplicate of a row of the load, after the plan searched the table.
CREATE FUNCTION refresh() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I SET body = (SELECT body FROM src WHERE id = 3) WHERE id = 100', TG_TABLE_NAME);
  RETURN NULL;
END $$;
SELECT make_pair('skip');
INSERT INTO by_row (id, url, body) VALUES (100, 'x', 'an older text about nothing in particular at all, really');
INSERT INTO by_load (id, url, body) VALUES (100, 'x', 'an older text about nothing in particular at all, really');
CREATE TRIGGER refresh BEFORE INSERT ON by_row FOR EACH STATEMENT EXECUTE FUNCTION refresh();
CREATE TRIGGER refresh BEFORE INSERT ON by_load FOR EACH STATEMENT EXECUTE FUNCTION refresh();
SET client_min_messages = debug1;
SELECT * FROM load('SELECT id, url, body FROM src WHERE id = 3');
RESET client_min_messages;

-- 3. The dedupe trigger with a WHEN condition: trusted rows are written past it (with
-- their keys given), and the trigger's search of the next row finds them.
DROP TABLE q;
CREATE TEMP TABLE q AS SELECT id, trusted, body, NULL::bigint[] AS lsh FROM src LIMIT 0;
SELECT make_pair('skip', 'WHEN (NOT NEW.trusted)');
SET client_min_messages = debug1;
SELECT * FROM load('SELECT id, trusted, body, simhash_lsh(body) AS lsh FROM src ORDER BY id');
RESET client_min_messages;
-- with a Hamming distance, the load's filter likewise
CREATE TABLE h_row (id bigint PRIMARY KEY, trusted bool, body text, fp bigint);
CREATE TABLE h_load (LIKE h_row INCLUDING ALL);
SELECT count(*) > 0 AS indexed FROM (SELECT simhash_create_index('h_row', 'fp', 3)) i;
SELECT count(*) > 0 AS indexed FROM (SELECT simhash_create_index('h_load', 'fp', 3)) i;
CREATE TRIGGER dedupe BEFORE INSERT ON h_row FOR EACH ROW WHEN (NOT NEW.trusted)
  EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
CREATE TRIGGER dedupe BEFORE INSERT ON h_load FOR EACH ROW WHEN (NOT NEW.trusted)
  EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
INSERT INTO h_row SELECT id, trusted, body, simhash(body) FROM src ORDER BY id;
SELECT simhash_dedupe_insert('h_load', 'SELECT id, trusted, body, simhash(body) AS fp FROM src ORDER BY id');
SELECT (SELECT string_agg(id::text, ' ' ORDER BY id) FROM h_row) AS by_row,
       (SELECT string_agg(id::text, ' ' ORDER BY id) FROM h_load) AS by_load;
DROP TABLE h_row, h_load;

-- 4. Row-level security (no plan): an AFTER trigger that deletes the older rows of a url.
-- The owner (not a superuser, with FORCE ROW LEVEL SECURITY) loads; by_row gets the rows
-- by INSERT ... SELECT, which the load is (its AFTER triggers run at the statement's end).
CREATE ROLE regress_simhash_plan_writer;
GRANT CREATE, USAGE ON SCHEMA public TO regress_simhash_plan_writer;
GRANT SELECT ON src TO regress_simhash_plan_writer;
CREATE FUNCTION drop_older() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DELETE FROM %I WHERE url = $1 AND id < $2', TG_TABLE_NAME) USING NEW.url, NEW.id;
  RETURN NULL;
END $$;
SET ROLE regress_simhash_plan_writer;
CREATE TABLE r_row (id bigint PRIMARY KEY, url text, body text, lsh bigint[]);
CREATE TABLE r_load (LIKE r_row INCLUDING ALL);
CREATE INDEX ON r_row USING gin (lsh) WITH (fastupdate = off);
CREATE INDEX ON r_load USING gin (lsh) WITH (fastupdate = off);
ALTER TABLE r_load ENABLE ROW LEVEL SECURITY;
ALTER TABLE r_load FORCE ROW LEVEL SECURITY;
CREATE POLICY everything ON r_load USING (true);
CREATE TRIGGER z_drop_older AFTER INSERT ON r_row FOR EACH ROW EXECUTE FUNCTION drop_older();
CREATE TRIGGER z_drop_older AFTER INSERT ON r_load FOR EACH ROW EXECUTE FUNCTION drop_older();
CREATE TRIGGER dedupe BEFORE INSERT ON r_row FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
CREATE TRIGGER dedupe BEFORE INSERT ON r_load FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
INSERT INTO r_row (id, url, body)
SELECT id, CASE WHEN id = 3 THEN 'u' ELSE url END AS url, body FROM src WHERE id <> 2 ORDER BY id;
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('r_load', 'SELECT id, CASE WHEN id = 3 THEN ''u'' ELSE url END AS url, body FROM src WHERE id <> 2 ORDER BY id');
RESET client_min_messages;
SELECT (SELECT string_agg(id::text, ' ' ORDER BY id) FROM r_row) AS by_row,
       (SELECT string_agg(id::text, ' ' ORDER BY id) FROM r_load) AS by_load;
-- the first INSERT's row dropped by a trigger firing before ours (so ours does not run),
-- then an AFTER statement trigger that updates a row into a near duplicate of row 2 (the
-- same text as row 1, so the plan takes row 2 for row 1)
TRUNCATE r_row, r_load;
DROP TRIGGER z_drop_older ON r_row;
DROP TRIGGER z_drop_older ON r_load;
CREATE FUNCTION drop_first() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RETURN CASE WHEN NEW.id = 1 THEN NULL ELSE NEW END;
END $$;
CREATE FUNCTION refresh_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I SET body = (SELECT body FROM src WHERE id = 2) WHERE id = 100 AND url = ''x''', TG_TABLE_NAME);
  RETURN NULL;
END $$;
CREATE TRIGGER a_drop_first BEFORE INSERT ON r_row FOR EACH ROW EXECUTE FUNCTION drop_first();
CREATE TRIGGER a_drop_first BEFORE INSERT ON r_load FOR EACH ROW EXECUTE FUNCTION drop_first();
CREATE TRIGGER refresh AFTER INSERT ON r_row FOR EACH STATEMENT EXECUTE FUNCTION refresh_once();
CREATE TRIGGER refresh AFTER INSERT ON r_load FOR EACH STATEMENT EXECUTE FUNCTION refresh_once();
CREATE TRIGGER dedupe_update BEFORE UPDATE ON r_row FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
CREATE TRIGGER dedupe_update BEFORE UPDATE ON r_load FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
INSERT INTO r_row (id, url, body) VALUES (100, 'y', 'an older text about nothing in particular at all, really');
INSERT INTO r_load (id, url, body) VALUES (100, 'y', 'an older text about nothing in particular at all, really');
UPDATE r_row SET url = 'x';
INSERT INTO r_row (id, url, body) SELECT id, url, body FROM src WHERE id IN (1, 2) ORDER BY id;
UPDATE r_load SET url = 'x';
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('r_load', 'SELECT id, url, body FROM src WHERE id IN (1, 2) ORDER BY id');
RESET client_min_messages;
SELECT (SELECT string_agg(id::text, ' ' ORDER BY id) FROM r_row) AS by_row,
       (SELECT string_agg(id::text, ' ' ORDER BY id) FROM r_load) AS by_load;
DROP TABLE r_row, r_load;
DROP FUNCTION drop_first(), refresh_once();
RESET ROLE;

-- 5. Nothing runs SQL during the load: the plan answers every row (no needless search).
DROP TABLE q;
CREATE TEMP TABLE q AS SELECT id, url, body FROM src LIMIT 0;
SELECT make_pair('link');
SET client_min_messages = debug1;
SELECT * FROM load('SELECT id, url, body FROM src ORDER BY id');
RESET client_min_messages;

-- 6. No other trigger (the plan is made), but a column default whose function deletes the
-- older version of a row: row 2's default deletes row 1, so row 2 has no near duplicate
-- left; the plan sees the write (the command id moved) and the rest is searched.
CREATE FUNCTION del_first(tbl text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DELETE FROM %I WHERE id = 1 AND EXISTS (SELECT FROM %I WHERE id = 1)', tbl, tbl);
  RETURN 'n';
END $$;
SELECT make_pair('skip');
ALTER TABLE by_row ADD COLUMN note text DEFAULT del_first('by_row');
ALTER TABLE by_load ADD COLUMN note text DEFAULT del_first('by_load');
SET client_min_messages = debug1;
SELECT * FROM load('SELECT id, url, body FROM src ORDER BY id');
RESET client_min_messages;

-- 7. The same with an UPDATE made by the first row's default, before anything else was
-- written under the command id the plan expects (a trigger on INSERT only, so the UPDATE
-- runs no search that would move it): row 100 takes row 3's text and keys, so row 3 is
-- skipped. (Row 100 is written before the default exists: ADD COLUMN runs it for the rows
-- there.)
CREATE FUNCTION upd_100(tbl text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I SET body = b, lsh = simhash_lsh(b) FROM (SELECT body AS b FROM src WHERE id = 3) s WHERE id = 100 AND body <> b', tbl);
  RETURN 'n';
END $$;
SELECT make_pair('skip');
DROP TRIGGER dedupe ON by_row;
DROP TRIGGER dedupe ON by_load;
CREATE TRIGGER dedupe BEFORE INSERT ON by_row FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
CREATE TRIGGER dedupe BEFORE INSERT ON by_load FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
ALTER TABLE by_row ADD COLUMN note text DEFAULT upd_100('by_row');
ALTER TABLE by_load ADD COLUMN note text DEFAULT upd_100('by_load');
INSERT INTO by_row (id, url, body, note) VALUES (100, 'x', 'an older text about nothing in particular at all, really', '');
INSERT INTO by_load (id, url, body, note) VALUES (100, 'x', 'an older text about nothing in particular at all, really', '');
SELECT * FROM load('SELECT id, url, body FROM src WHERE id = 3');

DROP TABLE by_row, by_load, src;
DROP FUNCTION make_pair(text, text), load(text), replace_old(), refresh(), drop_older(), del_first(text), upd_100(text);
REVOKE ALL ON SCHEMA public FROM regress_simhash_plan_writer;
DROP ROLE regress_simhash_plan_writer;
