-- Attack review of the table index (issue 23, see docs/security.md): cases where the
-- table index (dedupe_table_filter.c) answered a row otherwise than the trigger's own
-- search (sections 1 to 3 and 7 at 2b07ed9, fixed by the audit merged since; 5 and 6 here),
-- and writes it must not miss (4). Each statement is compared with the same rows searched:
-- inserted alone (rolled back), one by one, or under REPEATABLE READ (never an index).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- 700 texts no other is near: enough searches for the statement to make its index
CREATE TABLE fresh_rows AS
SELECT i AS id, md5(i::text) || ' ' || md5((i * 7)::text) || ' ' || md5((i * 13)::text) AS body
FROM generate_series(10, 700) i;

-- 1. A stored set that is not its text's ('sets=sets'; the trigger fires on UPDATE OF body
-- only, so an UPDATE of the sets column alone keeps what it writes). At 2b07ed9 the search
-- called a byte-identical text 1.0 before it read the stored set, and the index compared
-- the sets (an exact copy let through by the statement, dropped alone); now the stored set
-- decides in both.
CREATE TABLE ix_sets (id bigint PRIMARY KEY, body text, lsh bigint[], sets bytea);
CREATE INDEX ON ix_sets USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON ix_sets FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=sets');
INSERT INTO ix_sets (id, body) VALUES
  (1, 'the quick brown fox jumps over the lazy dog again and again'),
  (2, 'a licence text that is copied into many packages word for word'),
  (3, 'pack my box with five dozen liquor jugs and then some more jugs');
UPDATE ix_sets SET sets = '\x01'::bytea WHERE id = 1;                       -- empty
UPDATE ix_sets SET sets = (SELECT sets FROM ix_sets WHERE id = 3) WHERE id = 2;  -- another's
-- alone: the stored sets decide (empty, another text's): both copies kept
BEGIN;
INSERT INTO ix_sets (id, body) SELECT id + 1000, body FROM ix_sets WHERE id IN (1, 2);
SELECT count(*) AS alone_kept FROM ix_sets WHERE id > 1000;
ROLLBACK;
-- the statement: the index is made, and answers as alone
BEGIN;
LOCK TABLE ix_sets IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO ix_sets (id, body)
SELECT id, body FROM fresh_rows
UNION ALL SELECT id + 1000, body FROM ix_sets WHERE id IN (1, 2) ORDER BY 1;
COMMIT;
SELECT count(*) AS statement_kept FROM ix_sets WHERE id > 1000;
SELECT count(*) AS fresh_kept FROM ix_sets WHERE id BETWEEN 10 AND 700;

-- 2. link, two originals with the same text (rows there before the trigger, the larger key
-- first in the heap): the search once stopped at the first original at similarity 1 it met
-- (TID order) where the index picked the smallest key (the audit); now both pick it.
CREATE TABLE ix_link (id bigint PRIMARY KEY, body text, lsh bigint[], dup_of bigint);
CREATE INDEX ON ix_link USING gin (lsh) WITH (fastupdate = off);
INSERT INTO ix_link (id, body, lsh)
SELECT id, 'the quick brown fox jumps over the lazy dog again and again',
       simhash_lsh('the quick brown fox jumps over the lazy dog again and again')
FROM (VALUES (5), (3)) v (id);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON ix_link FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
BEGIN;
INSERT INTO ix_link (id, body) VALUES (2, 'the quick brown fox jumps over the lazy dog again and again');
SELECT dup_of AS alone_link FROM ix_link WHERE id = 2;
ROLLBACK;
BEGIN;
LOCK TABLE ix_link IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO ix_link (id, body)
SELECT id, body FROM fresh_rows
UNION ALL SELECT 2, 'the quick brown fox jumps over the lazy dog again and again' ORDER BY 1 DESC;
COMMIT;
SELECT dup_of AS statement_link FROM ix_link WHERE id = 2;
SELECT count(*) AS linked FROM ix_link WHERE dup_of IS NOT NULL;

-- 3. Both at once, in a table left in a careless state: rows loaded by another trigger,
-- then links cleared, stored sets swapped between rows, emptied or set to NULL; the texts
-- offered include exact copies of rows there. One statement (the index) against the same
-- rows inserted one by one, skip and link at 0.8 (at 2b07ed9: 4 and 4 rows differed).
CREATE TABLE cw AS SELECT i, substr(md5(i::text), 1, 3 + i % 6) AS w FROM generate_series(0, 299) i;
CREATE TABLE cfam AS
SELECT f, v, (SELECT string_agg(CASE WHEN v > 0 AND p % 5 = (f + v) % 5 AND p / 5 < v
                                     THEN 'e' || v || '_' || p ELSE w END, ' ' ORDER BY p)
              FROM generate_series(0, 19) p JOIN cw ON cw.i = abs(hashint4(f * 100 + p + 3)) % 300) AS body
FROM generate_series(1, 150) f, generate_series(0, 4) v;
CREATE TABLE csrc AS
SELECT (row_number() OVER (ORDER BY md5(body || n)))::int AS id, body
FROM (SELECT body, 1 AS n FROM cfam UNION ALL SELECT body, 2 FROM cfam WHERE (f + v) % 5 = 0) s;
CREATE FUNCTION careless_table(t text, policy text) RETURNS void LANGUAGE plpgsql
SET client_min_messages = warning AS $$
BEGIN
  EXECUTE format('DROP TABLE IF EXISTS %I', t);
  EXECUTE format('CREATE TABLE %I (id int PRIMARY KEY, body text, lsh bigint[], dup_of int, sets bytea)', t);
  EXECUTE format('CREATE INDEX ON %I USING gin (lsh) WITH (fastupdate = off)', t);
  EXECUTE format('CREATE TRIGGER loader BEFORE INSERT ON %I FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(''body'', ''lsh'', ''similarity=0.99'', ''link'', ''dup_of'', ''sets=sets'')', t);
  EXECUTE format('INSERT INTO %I (id, body) SELECT 10000 + id, body FROM csrc WHERE id %% 6 = 0 ORDER BY id DESC', t);
  EXECUTE format('DROP TRIGGER loader ON %I', t);
  EXECUTE format('UPDATE %I SET dup_of = NULL WHERE id %% 3 = 0', t);
  EXECUTE format('UPDATE %I a SET sets = b.sets FROM %I b WHERE a.id %% 11 = 0 AND b.id = (SELECT min(id) FROM %I WHERE id > a.id)', t, t, t);
  EXECUTE format('UPDATE %I SET sets = ''\x01'' WHERE id %% 17 = 1', t);
  EXECUTE format('UPDATE %I SET sets = NULL WHERE id %% 13 = 2', t);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON %I FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(''body'', ''lsh'', ''similarity=0.8'', %L, %s ''sets=sets'')',
                 t, policy, CASE WHEN policy = 'link' THEN '''dup_of'',' ELSE '' END);
END $$;
CREATE FUNCTION one_by_one() RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN SELECT id, body FROM csrc WHERE id % 6 <> 0 ORDER BY id LOOP
    INSERT INTO c_func (id, body) VALUES (r.id, r.body);
  END LOOP;
END $$;
CREATE FUNCTION c_differ(OUT rows bigint, OUT linked bigint, OUT differ bigint) LANGUAGE plpgsql AS $$
BEGIN
  rows := (SELECT count(*) FROM c_stmt);
  linked := (SELECT count(dup_of) FROM c_stmt);
  differ := (SELECT count(*) FROM c_stmt s FULL JOIN c_func f USING (id)
             WHERE s IS NULL OR f IS NULL
                OR (s.body, s.lsh, s.dup_of, s.sets) IS DISTINCT FROM (f.body, f.lsh, f.dup_of, f.sets));
END $$;
SELECT careless_table('c_stmt', 'skip'), careless_table('c_func', 'skip');
BEGIN;
LOCK TABLE c_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO c_stmt (id, body) SELECT id, body FROM csrc WHERE id % 6 <> 0 ORDER BY id;
COMMIT;
SELECT one_by_one();
SELECT * FROM c_differ();
SELECT careless_table('c_stmt', 'link'), careless_table('c_func', 'link');
BEGIN;
LOCK TABLE c_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO c_stmt (id, body) SELECT id, body FROM csrc WHERE id % 6 <> 0 ORDER BY id;
COMMIT;
SELECT one_by_one();
SELECT * FROM c_differ();

-- 4. Held (passed before and after): writes within the statement that the index must not
-- miss. Row 4999's text, or a rolled-back row's, is offered again as row 3000, which skip
-- must keep: ON CONFLICT DO UPDATE that rewrites row 4999, MERGE that deletes it, and a
-- function whose exception block inserts a row and rolls it back.
CREATE FUNCTION held_setup() RETURNS void LANGUAGE plpgsql SET client_min_messages = warning AS $$
BEGIN
  DROP TABLE IF EXISTS held;
  CREATE TABLE held (id bigint PRIMARY KEY, body text, lsh bigint[]);
  CREATE INDEX ON held USING gin (lsh) WITH (fastupdate = off);
  CREATE TRIGGER dedupe BEFORE INSERT ON held FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
  INSERT INTO held (id, body) VALUES (4999, 'the quick brown fox jumps over the lazy dog again and again');
END $$;
SELECT held_setup();
BEGIN;
LOCK TABLE held IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO held (id, body) SELECT * FROM (SELECT id, body FROM fresh_rows ORDER BY id) a
  UNION ALL VALUES (4999, 'x'), (3000, 'the quick brown fox jumps over the lazy dog again and again')
ON CONFLICT (id) DO UPDATE SET body = 'something else: ' || md5(excluded.body);
COMMIT;
SELECT count(*) AS row_3000_kept FROM held WHERE id = 3000;
SELECT held_setup();
BEGIN;
LOCK TABLE held IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
MERGE INTO held USING (SELECT * FROM (SELECT id, body, 1 AS o FROM fresh_rows
                       UNION ALL VALUES (4999, 'x', 2),
                       (3000, 'the quick brown fox jumps over the lazy dog again and again', 3)) s
                       ORDER BY o, id) s ON held.id = s.id
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED THEN INSERT (id, body) VALUES (s.id, s.body);
COMMIT;
SELECT count(*) AS row_3000_kept FROM held WHERE id = 3000;
SELECT held_setup();
CREATE FUNCTION insert_undone(i bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  IF i = 600 THEN
    BEGIN
      INSERT INTO held (id, body) VALUES (5555, 'pack my box with five dozen liquor jugs and then some more jugs');
      RAISE EXCEPTION 'undo';
    EXCEPTION WHEN raise_exception THEN NULL;
    END;
  END IF;
  RETURN i;
END $$;
BEGIN;
LOCK TABLE held IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO held (id, body) SELECT insert_undone(id), body FROM (SELECT id, body FROM fresh_rows ORDER BY id) a
  UNION ALL VALUES (3000, 'pack my box with five dozen liquor jugs and then some more jugs');
COMMIT;
SELECT count(*) AS row_3000_kept FROM held WHERE id = 3000;
DROP TABLE held;
DROP FUNCTION held_setup();
DROP FUNCTION insert_undone(bigint);

-- 5. A partitioned table whose partitions number the sets column differently (one
-- attached with another column order): the state was keyed by the sets column's number
-- in the partition the row went to, so it started again whenever rows changed partition
-- and no index was ever made (every row searched: a cost, not a wrong answer). Now by name.
CREATE TABLE ix_parts (id int PRIMARY KEY, body text, lsh bigint[], sets bytea) PARTITION BY HASH (id);
CREATE TABLE ix_parts_0 PARTITION OF ix_parts FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE ix_parts_1 (sets bytea, body text, id int NOT NULL, lsh bigint[]);
ALTER TABLE ix_parts ATTACH PARTITION ix_parts_1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE INDEX ON ix_parts USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON ix_parts FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=sets');
INSERT INTO ix_parts (id, body) VALUES (4999, 'the quick brown fox jumps over the lazy dog again and again');
BEGIN;
LOCK TABLE ix_parts IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO ix_parts (id, body) SELECT * FROM (SELECT id, body FROM fresh_rows ORDER BY id) a
  UNION ALL VALUES (3000, 'the quick brown fox jumps over the lazy dog again and again');
COMMIT;
SELECT count(*) AS rows, count(*) FILTER (WHERE id = 3000) AS row_3000_kept FROM ix_parts;
DROP TABLE ix_parts;

-- 6. Each partition with its own trigger of the same name, naming another link column:
-- which rows are originals depends on the partition a row goes to, and the index, shared
-- by the statement's rows, answered rows of one partition by the other's link column
-- (rows 3003 to 3005 linked to 1 where the search links them to 3000 and 3003). Now no
-- index then. The reference: the same statement under REPEATABLE READ (never an index).
CREATE TABLE ix_plink (id int PRIMARY KEY, body text, lsh bigint[], dup_a int, dup_b int) PARTITION BY HASH (id);
CREATE TABLE ix_plink_0 PARTITION OF ix_plink FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE ix_plink_1 PARTITION OF ix_plink FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE INDEX ON ix_plink USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON ix_plink_0 FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_a');
CREATE TRIGGER dedupe BEFORE INSERT ON ix_plink_1 FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_b');
INSERT INTO ix_plink (id, body, lsh, dup_a, dup_b)
SELECT id, b, simhash_lsh(b), da, db FROM (VALUES
  (1, 'the quick brown fox jumps over the lazy dog again and again today', 7, NULL),
  (2, 'the quick brown fox jumps over the lazy dog again and again and again', NULL, 7)) v (id, b, da, db);
CREATE TABLE plink_ref AS SELECT 0 AS id, 0 AS dup_a, 0 AS dup_b LIMIT 0;
BEGIN ISOLATION LEVEL REPEATABLE READ;
LOCK TABLE ix_plink IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO ix_plink (id, body) SELECT * FROM (SELECT id, body FROM fresh_rows ORDER BY id) a
  UNION ALL SELECT g, 'the quick brown fox jumps over the lazy dog again and again' FROM generate_series(3000, 3005) g;
INSERT INTO plink_ref SELECT id, dup_a, dup_b FROM ix_plink WHERE id >= 3000;
COMMIT;
DELETE FROM ix_plink WHERE id >= 10;
BEGIN;
LOCK TABLE ix_plink IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO ix_plink (id, body) SELECT * FROM (SELECT id, body FROM fresh_rows ORDER BY id) a
  UNION ALL SELECT g, 'the quick brown fox jumps over the lazy dog again and again' FROM generate_series(3000, 3005) g;
COMMIT;
SELECT r.id, r.dup_a, r.dup_b, (p.dup_a, p.dup_b) IS NOT DISTINCT FROM (r.dup_a, r.dup_b) AS same_as_searched
FROM plink_ref r JOIN ix_plink p USING (id) ORDER BY r.id;
DROP TABLE ix_plink, plink_ref;

-- 7. Section 1 with long texts, compressed in the row or stored out of line (the index
-- reads their stored sets, not the texts): the statement answers as alone.
CREATE TABLE ix_long (id bigint PRIMARY KEY, body text, lsh bigint[], sets bytea);
CREATE INDEX ON ix_long USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON ix_long FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=sets');
INSERT INTO ix_long (id, body) VALUES (1, repeat('the quick brown fox jumps over the lazy dog ', 200)),
  (2, (SELECT string_agg(md5(i::text), ' ') FROM generate_series(1, 400) i));
ALTER TABLE ix_long ALTER COLUMN body SET STORAGE EXTERNAL;
INSERT INTO ix_long (id, body) VALUES (3, (SELECT string_agg(md5((i * 3)::text), ' ') FROM generate_series(1, 300) i));
SELECT id, pg_column_size(body) < length(body) AS compressed, length(body) FROM ix_long ORDER BY id;
UPDATE ix_long SET sets = '\x01'::bytea;
BEGIN;
INSERT INTO ix_long (id, body) SELECT id + 1000, body FROM ix_long WHERE id <= 3;
SELECT count(*) AS alone_kept FROM ix_long WHERE id > 1000;
ROLLBACK;
BEGIN;
LOCK TABLE ix_long IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO ix_long (id, body)
SELECT id, body FROM fresh_rows UNION ALL SELECT id + 1000, body FROM ix_long WHERE id <= 3 ORDER BY 1;
COMMIT;
SELECT count(*) AS statement_kept FROM ix_long WHERE id > 1000;
DROP TABLE ix_long;

DROP TABLE ix_sets, ix_link, fresh_rows, c_stmt, c_func, csrc, cfam, cw;
DROP FUNCTION careless_table(text, text);
DROP FUNCTION one_by_one();
DROP FUNCTION c_differ();
