-- simhash_dedupe_insert(t, q) must decide every row as INSERT INTO t SELECT ... FROM (q)
-- through the trigger would. The load's plan (a threshold) notices SQL run between two
-- rows by the command id, and its filter (a distance) trusted that nothing but the trigger
-- writes the table: a write made under the INSERT's own command id (a cursor over an
-- UPDATE ... RETURNING opened before the load and fetched while the rows are written, by
-- a default, a cast or a check), or an UPDATE the trigger does not fire for, went unseen,
-- and a near duplicate of the updated row was let in unsearched. Each load is compared
-- with the same rows by INSERT ... SELECT.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
DROP ROLE IF EXISTS regress_simhash_attack_writer;
RESET client_min_messages;
\set VERBOSITY terse

CREATE TABLE src (id bigint, body text);
INSERT INTO src VALUES
  (1, 'the quick brown fox jumps over the lazy dog again and again today'),
  (3, 'a completely different sentence about cats asleep in the warm sun');

-- 1. Threshold (the load's plan), skip: a default fetches a cursor over an UPDATE that
-- gives row 100 the text of row 3, under the INSERT's command id.
CREATE TABLE by_row (id bigint PRIMARY KEY, body text, lsh bigint[], note text);
CREATE TABLE by_load (LIKE by_row INCLUDING ALL);
CREATE INDEX ON by_row USING gin (lsh) WITH (fastupdate = off);
CREATE INDEX ON by_load USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON by_row FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
CREATE TRIGGER dedupe BEFORE INSERT ON by_load FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
INSERT INTO by_row (id, body, note) VALUES (100, 'an older text about nothing in particular at all, really', '');
INSERT INTO by_load (id, body, note) VALUES (100, 'an older text about nothing in particular at all, really', '');
CREATE FUNCTION open_update(tbl text, fp_column text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c refcursor := 'upd_' || tbl;
BEGIN
  OPEN c FOR EXECUTE format('UPDATE %I SET body = b, %I = %s FROM (SELECT body AS b FROM src WHERE id = 3) s WHERE id = 100 RETURNING 1',
                            tbl, fp_column, CASE fp_column WHEN 'lsh' THEN 'simhash_lsh(b)' ELSE 'simhash(b)' END);
END $$;
CREATE FUNCTION fetch_update(tbl text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c refcursor := 'upd_' || tbl; x int;
BEGIN
  FETCH c INTO x;
  RETURN coalesce('updated ' || x, 'n');
END $$;
ALTER TABLE by_row ALTER note SET DEFAULT fetch_update('by_row');
ALTER TABLE by_load ALTER note SET DEFAULT fetch_update('by_load');
BEGIN;
SELECT open_update('by_row', 'lsh'), open_update('by_load', 'lsh');
INSERT INTO by_row (id, body) SELECT id, body FROM src ORDER BY id;
SET LOCAL client_min_messages = debug1;
SELECT simhash_dedupe_insert('by_load', 'SELECT id, body FROM src ORDER BY id') AS inserted;
COMMIT;
SELECT (SELECT string_agg(id || ' ' || note, ', ' ORDER BY id) FROM by_row) AS by_row,
       (SELECT string_agg(id || ' ' || note, ', ' ORDER BY id) FROM by_load) AS by_load;

-- 2. The same by a role that may insert and update, through a cast of its own type that
-- the INSERT runs for every row; the trigger fires on UPDATE too and rejects near
-- duplicates: INSERT ... SELECT rejects row 3, the load must too. (This one held before:
-- the trigger's search of the UPDATE moves the command id.)
DROP TABLE by_row, by_load;
CREATE TABLE docs (id bigint PRIMARY KEY, body text, lsh bigint[], note text);
CREATE INDEX ON docs USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE ON docs FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'reject');
INSERT INTO docs (id, body) VALUES (100, 'an older text about nothing in particular at all, really');
CREATE ROLE regress_simhash_attack_writer;
GRANT SELECT, INSERT, UPDATE ON docs TO regress_simhash_attack_writer;
GRANT SELECT ON src TO regress_simhash_attack_writer;
SET ROLE regress_simhash_attack_writer;
CREATE TYPE pg_temp.note_t AS (v text);
CREATE FUNCTION pg_temp.note_text(n pg_temp.note_t) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c refcursor := 'upd_docs'; x int;
BEGIN
  FETCH c INTO x;
  RETURN n.v;
END $$;
CREATE CAST (pg_temp.note_t AS text) WITH FUNCTION pg_temp.note_text(pg_temp.note_t) AS ASSIGNMENT;
-- row 3 after row 1: the cursor is fetched for row 1, before row 3 is written
BEGIN;
DO $$
DECLARE c refcursor := 'upd_docs';
BEGIN
  OPEN c FOR EXECUTE 'UPDATE docs SET body = b, lsh = simhash_lsh(b) FROM (SELECT body AS b FROM src WHERE id = 3) s WHERE id = 100 RETURNING 1';
END $$;
INSERT INTO docs (id, body, note) SELECT id, body, ROW('x')::pg_temp.note_t FROM src ORDER BY id;
ROLLBACK;
BEGIN;
DO $$
DECLARE c refcursor := 'upd_docs';
BEGIN
  OPEN c FOR EXECUTE 'UPDATE docs SET body = b, lsh = simhash_lsh(b) FROM (SELECT body AS b FROM src WHERE id = 3) s WHERE id = 100 RETURNING 1';
END $$;
SELECT simhash_dedupe_insert('docs', 'SELECT id, body, ROW(''x'')::pg_temp.note_t AS note FROM src ORDER BY id') AS inserted;
ROLLBACK;
DROP CAST (pg_temp.note_t AS text);
DROP FUNCTION pg_temp.note_text(pg_temp.note_t);
DROP TYPE pg_temp.note_t;
RESET ROLE;
SELECT id, left(body, 20) AS body FROM docs ORDER BY id;

-- 3. Distance (the load's filter), a trigger on INSERT only: a default's UPDATE gives row
-- 100 the text of row 3; the trigger does not fire for it, its search sees it.
CREATE FUNCTION update_100(tbl text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I SET body = b, fp = simhash(b) FROM (SELECT body AS b FROM src WHERE id = 3) s WHERE id = 100 AND body <> b', tbl);
  RETURN 'n';
END $$;
CREATE TABLE h_row (id bigint PRIMARY KEY, body text, fp bigint, note text);
CREATE TABLE h_load (LIKE h_row INCLUDING ALL);
SELECT count(*) > 0 AS indexed FROM simhash_create_index('h_row', 'fp', 3);
SELECT count(*) > 0 AS indexed FROM simhash_create_index('h_load', 'fp', 3);
CREATE TRIGGER dedupe BEFORE INSERT ON h_row FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
CREATE TRIGGER dedupe BEFORE INSERT ON h_load FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
INSERT INTO h_row VALUES (100, 'an older text about nothing in particular at all, really', NULL, '');
INSERT INTO h_load VALUES (100, 'an older text about nothing in particular at all, really', NULL, '');
ALTER TABLE h_row ALTER note SET DEFAULT update_100('h_row');
ALTER TABLE h_load ALTER note SET DEFAULT update_100('h_load');
INSERT INTO h_row (id, body) SELECT id, body FROM src ORDER BY id;
SELECT simhash_dedupe_insert('h_load', 'SELECT id, body FROM src ORDER BY id') AS inserted;
SELECT (SELECT string_agg(id::text, ' ' ORDER BY id) FROM h_row) AS by_row,
       (SELECT string_agg(id::text, ' ' ORDER BY id) FROM h_load) AS by_load;
-- the same with the cursor's UPDATE
TRUNCATE h_row, h_load;
ALTER TABLE h_row ALTER note SET DEFAULT fetch_update('h_row');
ALTER TABLE h_load ALTER note SET DEFAULT fetch_update('h_load');
INSERT INTO h_row VALUES (100, 'an older text about nothing in particular at all, really', NULL, '');
INSERT INTO h_load VALUES (100, 'an older text about nothing in particular at all, really', NULL, '');
BEGIN;
SELECT open_update('h_row', 'fp'), open_update('h_load', 'fp');
INSERT INTO h_row (id, body) SELECT id, body FROM src ORDER BY id;
SELECT simhash_dedupe_insert('h_load', 'SELECT id, body FROM src ORDER BY id') AS inserted;
COMMIT;
SELECT (SELECT string_agg(id::text, ' ' ORDER BY id) FROM h_row) AS by_row,
       (SELECT string_agg(id::text, ' ' ORDER BY id) FROM h_load) AS by_load;

-- 4. Threshold, link: a check of row 2 (searched: the table has a near duplicate of it, so
-- the rows of the command id before are visible) fetches a cursor over a DELETE of row 1;
-- row 3, row 1's text, was linked by the plan to the deleted row 1, where INSERT ...
-- SELECT makes it an original.
INSERT INTO src VALUES (2, 'a completely different sentence about cats asleep in the warm sun!'),
                       (4, 'the quick brown fox jumps over the lazy dog again and again today');
CREATE FUNCTION open_delete(tbl text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE c refcursor := 'del_' || tbl;
BEGIN
  OPEN c FOR EXECUTE format('DELETE FROM %I WHERE id = 1 RETURNING 1', tbl);
END $$;
CREATE FUNCTION fetch_at_2(tbl text, id bigint) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE c refcursor := 'del_' || tbl; x int;
BEGIN
  IF id = 2 THEN
    FETCH c INTO x;
  END IF;
  RETURN true;
END $$;
CREATE TABLE l_row (id bigint PRIMARY KEY, body text, lsh bigint[], dup_of bigint);
CREATE TABLE l_load (LIKE l_row INCLUDING ALL);
CREATE INDEX ON l_row USING gin (lsh) WITH (fastupdate = off);
CREATE INDEX ON l_load USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON l_row FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
CREATE TRIGGER dedupe BEFORE INSERT ON l_load FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
INSERT INTO l_row (id, body) SELECT 100, body FROM src WHERE id = 3;
INSERT INTO l_load (id, body) SELECT 100, body FROM src WHERE id = 3;
ALTER TABLE l_row ADD CHECK (fetch_at_2('l_row', id));
ALTER TABLE l_load ADD CHECK (fetch_at_2('l_load', id));
BEGIN;
SELECT open_delete('l_row'), open_delete('l_load');
INSERT INTO l_row (id, body) SELECT id, body FROM src WHERE id IN (1, 2, 4) ORDER BY id;
SET LOCAL client_min_messages = debug1;
SELECT simhash_dedupe_insert('l_load', 'SELECT id, body FROM src WHERE id IN (1, 2, 4) ORDER BY id') AS inserted;
COMMIT;
SELECT (SELECT string_agg(id || coalesce('->' || dup_of, ''), ' ' ORDER BY id) FROM l_row) AS by_row,
       (SELECT string_agg(id || coalesce('->' || dup_of, ''), ' ' ORDER BY id) FROM l_load) AS by_load;

-- The memo's state does not outlive its load (review of the statement memo, issue 33): a
-- load refused before its INSERT (past the lock budget: INSERT only, so no table lock),
-- caught by a savepoint, three times; and loads with no memo of their own (a threshold under
-- row-level security) whose INSERT made the state of a memo of the table. Before, each left
-- its memory context (and its C++ index) until the end of the transaction.
CREATE TABLE m_src AS
  SELECT i AS id, 'text ' || i || ' ' || md5(i::text) || ' ' || md5((i * 7)::text) || ' ' || md5((i * 11)::text) AS body
  FROM generate_series(1, 1200) i;
CREATE TABLE m_fail (id bigint PRIMARY KEY, body text, fp bigint);
SELECT count(*) > 0 AS indexed FROM simhash_create_index('m_fail', 'fp', 3, blocks => 4);
CREATE TRIGGER dedupe BEFORE INSERT ON m_fail FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
CREATE TABLE m_rls (id bigint PRIMARY KEY, body text, lsh bigint[]);
CREATE INDEX ON m_rls USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON m_rls FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
ALTER TABLE m_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY p ON m_rls USING (true) WITH CHECK (true);
INSERT INTO m_rls (id, body) SELECT id, body FROM m_src WHERE id <= 300;
GRANT INSERT ON m_fail TO regress_simhash_attack_writer;
GRANT SELECT, INSERT, UPDATE ON m_rls TO regress_simhash_attack_writer;
GRANT SELECT ON m_src TO regress_simhash_attack_writer;
BEGIN;
SET LOCAL ROLE regress_simhash_attack_writer;
DO $$
BEGIN
  FOR i IN 1 .. 3 LOOP
    BEGIN
      PERFORM simhash_dedupe_insert('m_fail', 'SELECT id, body FROM m_src');
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE 'load refused: %', SQLSTATE;
    END;
  END LOOP;
END $$;
SELECT simhash_dedupe_insert('m_rls', format('SELECT id + %s AS id, %L || body AS body FROM m_src', 10000 * g, 'load ' || g || ' ')) > 0 AS loaded
FROM generate_series(1, 3) g;
RESET ROLE;
SELECT count(*) AS memos_left FROM pg_backend_memory_contexts WHERE name = 'simhash statement memo';
ROLLBACK;

DROP TABLE h_row, h_load, l_row, l_load, docs, src, m_src, m_fail, m_rls;
DROP FUNCTION open_update(text, text), fetch_update(text), update_100(text), open_delete(text), fetch_at_2(text, bigint);
DROP ROLE regress_simhash_attack_writer;
