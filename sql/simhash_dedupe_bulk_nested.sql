-- A bulk load run inside another one: a BEFORE trigger of the user, on a row of the outer
-- load, calls simhash_dedupe_insert() on the same table. The inner load used to leave the
-- outer one's COPY without its data source (the backend crashed: SIGSEGV), and the outer
-- load's filter did not hear of the inner load's rows (a near duplicate of one of them,
-- later in the outer load, was let through unsearched). The answer must be the trigger's,
-- row for row: the same rows as one INSERT of the same rows in the same order.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

CREATE TABLE nest (id bigint PRIMARY KEY, body text, fp bigint);
SELECT count(*) AS indexes FROM simhash_create_index('nest', 'fp', 3, 4);
CREATE TRIGGER dedupe BEFORE INSERT ON nest FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
-- Fires before "dedupe" (triggers fire in name order): row 1 loads row 100.
CREATE FUNCTION nest_inner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id = 1 THEN
    PERFORM simhash_dedupe_insert('nest', $q$SELECT 100::bigint AS id,
      'the quick brown fox jumps over the lazy dog again and again on a sunny day'::text AS body$q$);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER a_inner BEFORE INSERT ON nest FOR EACH ROW EXECUTE FUNCTION nest_inner();

-- Row 2 is the text of row 100: not in the table when the outer load searched it.
CREATE TABLE nest_src (id bigint, body text);
INSERT INTO nest_src VALUES
  (1, 'an unrelated marker text about growing tomatoes in a small garden in summer'),
  (2, 'the quick brown fox jumps over the lazy dog again and again on a sunny day'),
  (3, 'a third text about something else entirely, the history of printing presses');

-- Without and with row-level security (which turns the load's plan off).
SELECT simhash_dedupe_insert('nest', 'SELECT id, body FROM nest_src ORDER BY id') AS loaded;
SELECT array_agg(id ORDER BY id) AS by_load FROM nest;
TRUNCATE nest;
INSERT INTO nest SELECT id, body FROM nest_src ORDER BY id;
SELECT array_agg(id ORDER BY id) AS by_row FROM nest;
TRUNCATE nest;
ALTER TABLE nest ENABLE ROW LEVEL SECURITY;
SELECT simhash_dedupe_insert('nest', 'SELECT id, body FROM nest_src ORDER BY id') AS loaded_rls;
SELECT array_agg(id ORDER BY id) AS by_load_rls FROM nest;

-- Two loads one after the other in one transaction: each sees the other's rows.
TRUNCATE nest;
ALTER TABLE nest DISABLE ROW LEVEL SECURITY;
DROP TRIGGER a_inner ON nest;
BEGIN;
SELECT simhash_dedupe_insert('nest', 'SELECT id, body FROM nest_src WHERE id = 2') AS first;
SELECT simhash_dedupe_insert('nest', $q$SELECT 200::bigint AS id, body FROM nest_src WHERE id = 2
                                       UNION ALL SELECT 3, body FROM nest_src WHERE id = 3$q$) AS second;
COMMIT;
SELECT array_agg(id ORDER BY id) AS two_loads FROM nest;

-- A BEFORE trigger of the user that fires after ours (name order) and changes the
-- fingerprint the row is stored with: the filter, which knew only the fingerprint our
-- trigger computed, let a later near duplicate of the stored one through unsearched.
-- The load now leaves its filter off and searches every row, as the trigger alone does.
CREATE FUNCTION nest_refp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id = 1 THEN
    NEW.fp := simhash((SELECT body FROM nest_src WHERE id = 2));
  END IF;
  RETURN NEW;
END $$;
TRUNCATE nest;
CREATE TRIGGER zz_refp BEFORE INSERT ON nest FOR EACH ROW EXECUTE FUNCTION nest_refp();
SELECT simhash_dedupe_insert('nest', 'SELECT id, body FROM nest_src ORDER BY id') AS loaded;
SELECT array_agg(id ORDER BY id) AS by_load FROM nest;
TRUNCATE nest;
INSERT INTO nest SELECT id, body FROM nest_src ORDER BY id;
SELECT array_agg(id ORDER BY id) AS by_row FROM nest;
-- The same with a partitioned table whose one partition has such a trigger of its own.
CREATE TABLE nest_p (id bigint, body text, fp bigint) PARTITION BY RANGE (id);
CREATE TABLE nest_p1 PARTITION OF nest_p FOR VALUES FROM (0) TO (1000);
CREATE TABLE nest_p2 PARTITION OF nest_p FOR VALUES FROM (1000) TO (2000);
SELECT count(*) AS indexes FROM simhash_create_index('nest_p', 'fp', 3, 4);
CREATE TRIGGER dedupe BEFORE INSERT ON nest_p FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
CREATE TRIGGER zz_refp BEFORE INSERT ON nest_p1 FOR EACH ROW EXECUTE FUNCTION nest_refp();
SELECT simhash_dedupe_insert('nest_p', 'SELECT CASE WHEN id = 1 THEN 1 ELSE id + 1000 END AS id, body FROM nest_src ORDER BY id') AS loaded_partitioned;
SELECT array_agg(id ORDER BY id) AS by_load_partitioned FROM nest_p;

-- A partition with a simhash_dedupe trigger of its own, at a larger distance, firing before
-- the table's: the filter, made for k = 3, cleared its rows for k = 6 too. And a partition
-- on which the table's trigger is disabled: its rows (given with their fingerprints) never
-- reached the filter. Loads under
-- the table lock (no key is checked then).
CREATE TABLE nest_w AS SELECT i, substr(md5(i::text), 1, 5) AS w FROM generate_series(0, 999) i;
CREATE TABLE nest_k AS SELECT v, (SELECT string_agg(CASE WHEN p < v THEN 'x' || p ELSE w END, ' ' ORDER BY p)
                                  FROM generate_series(0, 29) p JOIN nest_w ON nest_w.i = p * 7) AS body
                       FROM generate_series(0, 2) v;
SELECT b.v, hamming(simhash(a.body), simhash(b.body)) AS distance FROM nest_k a, nest_k b WHERE a.v = 0 AND b.v > 0 ORDER BY b.v;
TRUNCATE nest_p;
DROP TRIGGER zz_refp ON nest_p1;
SELECT count(*) AS indexes FROM simhash_create_index('nest_p', 'fp', 6, 7);
CREATE TRIGGER a_dedupe6 BEFORE INSERT ON nest_p1 FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=6', 'skip');
INSERT INTO nest_p SELECT 100, body FROM nest_k WHERE v = 0;
BEGIN;
LOCK TABLE nest_p IN SHARE ROW EXCLUSIVE MODE;
SELECT simhash_dedupe_insert('nest_p', 'SELECT 1::bigint AS id, body FROM nest_k WHERE v = 1') AS loaded_k6;
COMMIT;
SELECT array_agg(id ORDER BY id) AS by_load_k6 FROM nest_p;
DELETE FROM nest_p WHERE id <> 100;
INSERT INTO nest_p SELECT 1, body FROM nest_k WHERE v = 1;
SELECT array_agg(id ORDER BY id) AS by_row_k6 FROM nest_p;
DROP TRIGGER a_dedupe6 ON nest_p1;
TRUNCATE nest_p;
ALTER TABLE nest_p1 DISABLE TRIGGER dedupe;
BEGIN;
LOCK TABLE nest_p IN SHARE ROW EXCLUSIVE MODE;
SELECT simhash_dedupe_insert('nest_p', 'SELECT CASE WHEN v = 0 THEN 1 ELSE 1002 END AS id, body, simhash(body) AS fp FROM nest_k WHERE v <> 1 ORDER BY v') AS loaded_disabled;
COMMIT;
SELECT array_agg(id ORDER BY id) AS by_load_disabled FROM nest_p;
TRUNCATE nest_p;
INSERT INTO nest_p SELECT CASE WHEN v = 0 THEN 1 ELSE 1002 END, body, simhash(body) FROM nest_k WHERE v <> 1 ORDER BY v;
SELECT array_agg(id ORDER BY id) AS by_row_disabled FROM nest_p;

DROP TABLE nest, nest_src, nest_p, nest_w, nest_k;
DROP FUNCTION nest_inner(), nest_refp();
