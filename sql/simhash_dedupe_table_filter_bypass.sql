-- The table filter (dedupe_table_filter.c) against rows that reach the table within the
-- statement without passing the simhash_dedupe trigger and without moving the command id:
-- session_replication_role set to replica for some rows by a function of the statement
-- (set_config() runs no SQL). Such a row, given its fingerprint, is in the table and its
-- index when the next rows come, so the trigger's search finds it; the filter, which never
-- heard of it, must not answer "no near duplicate" for it: between two rows the trigger
-- sees, the targets' count of inserts may grow only by the row it let through last.
-- Each load is compared with the same rows inserted one statement each (no filter).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

CREATE FUNCTION bypass_txt(i int) RETURNS text LANGUAGE sql IMMUTABLE AS
  $$ SELECT string_agg(md5(i::text || '/' || j), ' ') FROM generate_series(1, 20) j $$;
-- the rows: 1 .. 1250 distinct texts; row 1201 inserted with session_replication_role =
-- replica (so the trigger does not fire) and its fingerprint given; row 1202 sets it back;
-- row 1203 is an exact copy of row 1201's text, which skip must drop
CREATE VIEW bypass_rows AS
SELECT i AS id,
       CASE WHEN i = 1201 AND set_config('session_replication_role', 'replica', true) IS NOT NULL THEN bypass_txt(777777)
            WHEN i = 1202 AND set_config('session_replication_role', 'origin', true) IS NOT NULL THEN bypass_txt(888888)
            WHEN i = 1203 THEN bypass_txt(777777)
            ELSE bypass_txt(i) END AS body,
       CASE WHEN i = 1201 THEN simhash(bypass_txt(777777)) END AS fp
FROM generate_series(1, 1250) i;
CREATE FUNCTION bypass_make(tbl text, partitioned bool) RETURNS void LANGUAGE plpgsql
SET client_min_messages = warning AS $$
BEGIN
  EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
  IF partitioned THEN
    EXECUTE format('CREATE TABLE %I (id bigint, body text, fp bigint, PRIMARY KEY (id)) PARTITION BY RANGE (id)', tbl);
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (MINVALUE) TO (600)', tbl || '_low', tbl);
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (600) TO (MAXVALUE)', tbl || '_high', tbl);
  ELSE
    EXECUTE format('CREATE TABLE %I (id bigint PRIMARY KEY, body text, fp bigint)', tbl);
  END IF;
  PERFORM simhash_create_index(tbl, 'fp', 3, 4);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON %I FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L)',
                 tbl, 'body', 'fp', 'k=3', 'skip');
  EXECUTE format('INSERT INTO %I (id, body) SELECT -i, bypass_txt(-i) FROM generate_series(1, 300) i', tbl);
END $$;
-- the same rows, one INSERT statement each: every row searched by the trigger
CREATE FUNCTION bypass_rowwise(tbl text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE r record; n bigint := 0; m bigint;
BEGIN
  FOR r IN SELECT id, body, fp FROM bypass_rows LOOP
    EXECUTE format('INSERT INTO %I (id, body, fp) VALUES ($1, $2, $3)', tbl) USING r.id, r.body, r.fp;
    GET DIAGNOSTICS m = ROW_COUNT;
    n := n + m;
  END LOOP;
  RETURN n;
END $$;
CREATE FUNCTION bypass_differ(a text, b text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(*) FROM %I x FULL JOIN %I y USING (id)
                  WHERE x IS NULL OR y IS NULL OR (x.body, x.fp) IS DISTINCT FROM (y.body, y.fp)', a, b) INTO n;
  RETURN n;
END $$;

-- a table: the filter is made, then dropped at the row after the one inserted past the
-- trigger (DEBUG1), and row 1203 is dropped as the search drops it
SELECT bypass_make('bp_stmt', false), bypass_make('bp_rows', false);
BEGIN;
LOCK TABLE bp_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO bp_stmt (id, body, fp) SELECT id, body, fp FROM bypass_rows;
COMMIT;
SHOW session_replication_role;
SELECT bypass_rowwise('bp_rows') AS inserted, bypass_differ('bp_stmt', 'bp_rows');
SELECT id FROM bp_stmt WHERE body = bypass_txt(777777) ORDER BY id;
SELECT count(*) AS near_pairs_left FROM bp_stmt a JOIN bp_stmt b ON a.id < b.id AND hamming(a.fp, b.fp) <= 3;

-- partitioned: the row past the trigger goes to a partition whose index the filter read
SELECT bypass_make('bp_stmt', true), bypass_make('bp_rows', true);
BEGIN;
LOCK TABLE bp_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO bp_stmt (id, body, fp) SELECT id, body, fp FROM bypass_rows;
COMMIT;
SELECT bypass_rowwise('bp_rows') AS inserted, bypass_differ('bp_stmt', 'bp_rows');
SELECT id FROM bp_stmt WHERE body = bypass_txt(777777) ORDER BY id;

-- rows the trigger lets through without a fingerprint (NULL text), rows it drops (skip)
-- and rows ON CONFLICT DO NOTHING drops after the trigger keep the filter (no DEBUG1 drop)
SELECT bypass_make('bp_stmt', false);
BEGIN;
LOCK TABLE bp_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO bp_stmt (id, body)
SELECT i, CASE WHEN i % 10 = 0 THEN NULL WHEN i % 10 = 1 THEN bypass_txt(-1) ELSE bypass_txt(i) END
FROM generate_series(1, 1100) i UNION ALL SELECT i, bypass_txt(i + 5000) FROM generate_series(1, 50) i
ON CONFLICT (id) DO NOTHING;
COMMIT;
SELECT count(*) AS kept, count(*) FILTER (WHERE body IS NULL) AS null_texts FROM bp_stmt WHERE id > 0;

-- A partition no row goes to, and none of whose rows is a candidate (its index read
-- alone), has no table statistics in a new session until it is counted: the filter starts
-- its count when it is made (before, no filter at all for such a table). The answer stays
-- the search's (compared with one statement a row).
SELECT bypass_make('bp_stmt', true), bypass_make('bp_rows', true);
INSERT INTO bp_stmt_high (id, body) SELECT 600 + i, bypass_txt(600 + i) FROM generate_series(1, 50) i;
INSERT INTO bp_rows_high (id, body) SELECT 600 + i, bypass_txt(600 + i) FROM generate_series(1, 50) i;
\c
\set VERBOSITY terse
BEGIN;
LOCK TABLE bp_stmt IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO bp_stmt (id, body) SELECT i, CASE WHEN i % 7 = 0 THEN bypass_txt(i - 3) ELSE bypass_txt(i) END
FROM generate_series(1, 599) i;
COMMIT;
CREATE FUNCTION bypass_rowwise_low(tbl text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint := 0; m bigint;
BEGIN
  FOR i IN 1 .. 599 LOOP
    EXECUTE format('INSERT INTO %I (id, body) VALUES ($1, $2)', tbl)
      USING i, CASE WHEN i % 7 = 0 THEN bypass_txt(i - 3) ELSE bypass_txt(i) END;
    GET DIAGNOSTICS m = ROW_COUNT;
    n := n + m;
  END LOOP;
  RETURN n;
END $$;
SELECT bypass_rowwise_low('bp_rows') AS inserted, bypass_differ('bp_stmt', 'bp_rows');
DROP FUNCTION bypass_rowwise_low(text);

DROP TABLE bp_stmt, bp_rows;
DROP FUNCTION bypass_make(text, bool);
DROP FUNCTION bypass_rowwise(text);
DROP FUNCTION bypass_differ(text, text);
DROP VIEW bypass_rows;
DROP FUNCTION bypass_txt(int);
