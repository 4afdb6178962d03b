-- simhash_dedupe_insert(t, q) is INSERT INTO t SELECT ... FROM (q) through the trigger:
-- the same values whatever the session's settings (no text round trip), the same rules,
-- identity, defaults, domain checks (run once), row-level security. Each case loads one
-- query into twin tables, by simhash_dedupe_insert() and by INSERT ... SELECT, and compares
-- them row for row (each row's text under fixed settings: float8 to the last digit,
-- timestamptz in UTC, interval in the postgres style).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
DROP ROLE IF EXISTS regress_simhash_values_writer;
RESET client_min_messages;
\set VERBOSITY terse
CREATE ROLE regress_simhash_values_writer;

-- A composite, a domain whose check says when it runs, and a base type whose output is
-- not its input (int4's input, oid's output: -1 prints as 4294967295, which int4's input
-- refuses).
CREATE TYPE pair AS (x float8, at timestamptz);
CREATE FUNCTION checked(v integer) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'domain check of %', v;
    RETURN v > 0;
END $$;
CREATE DOMAIN positive AS integer CHECK (checked(VALUE));
CREATE TYPE lossy;
SET client_min_messages = warning;
CREATE FUNCTION lossy_in(cstring) RETURNS lossy LANGUAGE internal IMMUTABLE STRICT AS 'int4in';
CREATE FUNCTION lossy_out(lossy) RETURNS cstring LANGUAGE internal IMMUTABLE STRICT AS 'oidout';
RESET client_min_messages;
CREATE TYPE lossy (INPUT = lossy_in, OUTPUT = lossy_out, LIKE = integer);
CREATE FUNCTION lossy_of(integer) RETURNS lossy LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT $1::text::lossy $$;

CREATE TABLE vals_bulk (
    id integer PRIMARY KEY,
    body text,
    fp bigint,
    f8 float8, f4 real, pi float8, num numeric, ts timestamptz, iv interval, b bytea,
    j jsonb, arr float8[], comp pair, dom positive, l lossy,
    filled text DEFAULT 'the default',
    always bigint GENERATED ALWAYS AS IDENTITY
);
CREATE TABLE vals_ins (LIKE vals_bulk INCLUDING ALL);
CREATE TRIGGER dedupe BEFORE INSERT ON vals_bulk FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
CREATE TRIGGER dedupe BEFORE INSERT ON vals_ins FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
SELECT count(*) AS blocks FROM simhash_create_index('vals_bulk', 'fp', 3);
SELECT count(*) AS blocks FROM simhash_create_index('vals_ins', 'fp', 3);
-- rules fire for every row, as for INSERT
CREATE TABLE rule_log (tbl text, body text);
CREATE RULE log_bulk AS ON INSERT TO vals_bulk DO ALSO INSERT INTO rule_log VALUES ('bulk', new.body);
CREATE RULE log_ins AS ON INSERT TO vals_ins DO ALSO INSERT INTO rule_log VALUES ('ins', new.body);

-- The rows: licence paragraphs (row 3 a near duplicate of row 1, skipped by the trigger)
-- and values whose text form under the settings below is not the value.
\set cols 'id, body, f8, f4, pi, num, ts, iv, b, j, arr, comp, dom'
\set q 'SELECT n AS id, body, (0.1::float8 + 0.2::float8) * n AS f8, (1.0000001::real * n::real) AS f4, pi() * n AS pi, (1::numeric / 3) * n AS num, timestamptz ''2024-01-01 10:00:00+05:30'' + n * interval ''1 hour 0.000001 s'' AS ts, interval ''1 year -1 month -1 day +2 hours 0.5 s'' * n AS iv, decode(md5(n::text), ''hex'') AS b, jsonb_build_object(''x'', 0.1::float8 + 0.2::float8, ''n'', n) AS j, ARRAY[(0.1::float8 + 0.2::float8) * n, pi()] AS arr, ROW((0.1::float8 + 0.2::float8) * n, timestamptz ''2024-06-01 10:00:00+05:30'')::pair AS comp, n::positive AS dom FROM (VALUES (1, ''Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files.''), (2, ''This program is free software; you can redistribute it and/or modify it under the terms of the GNU General Public License.''), (3, ''PERMISSION IS HEREBY GRANTED, FREE OF CHARGE, TO ANY PERSON OBTAINING A COPY OF THIS SOFTWARE AND ASSOCIATED DOCUMENTATION FILES.''), (4, NULL)) v(n, body)'

-- Compares the twins: the rows that differ, by their text under fixed settings.
CREATE FUNCTION twins_differ(bulk regclass, ins regclass) RETURNS TABLE (side text, r text)
LANGUAGE plpgsql
SET extra_float_digits = 1 SET TimeZone = 'UTC' SET DateStyle = 'ISO' SET IntervalStyle = 'postgres'
SET bytea_output = 'hex'
AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        '(SELECT ''only bulk'', t::text FROM %1$s t EXCEPT SELECT ''only bulk'', t::text FROM %2$s t)
         UNION ALL
         (SELECT ''only insert'', t::text FROM %2$s t EXCEPT SELECT ''only insert'', t::text FROM %1$s t)
         ORDER BY 1, 2', bulk, ins);
END $$;

-- 1. Settings that make a value's text another value: float8 and real to 0 extra digits,
-- a time zone whose abbreviation (IST) reads back as another zone's, intervals in the SQL
-- standard's style, bytea in the escape format.
SET extra_float_digits = 0;
SET TimeZone = 'Asia/Kolkata';
SET DateStyle = 'Postgres';
SET IntervalStyle = 'sql_standard';
SET bytea_output = 'escape';
SELECT simhash_dedupe_insert('vals_bulk', :'q') AS inserted;
INSERT INTO vals_ins (:cols) SELECT * FROM (:q) s;
RESET ALL;
SELECT * FROM twins_differ('vals_bulk', 'vals_ins');
SELECT id, f8 = (0.1::float8 + 0.2::float8) * id AS f8_exact, f4 = 1.0000001::real * id::real AS f4_exact,
       ts = timestamptz '2024-01-01 10:00:00+05:30' + id * interval '1 hour 0.000001 s' AS ts_exact,
       iv = interval '1 year -1 month -1 day +2 hours 0.5 s' * id AS iv_exact, filled, always
FROM vals_bulk ORDER BY id;
SELECT tbl, count(*) AS rule_rows FROM rule_log GROUP BY tbl ORDER BY tbl;
-- a value whose text its type's input refuses
SELECT simhash_dedupe_insert('vals_bulk', 'SELECT 5 AS id, ''a lossy value'' AS body, lossy_of(-5) AS l') AS inserted;
INSERT INTO vals_ins (id, body, l) SELECT 5, 'a lossy value', lossy_of(-5);
SELECT * FROM twins_differ('vals_bulk', 'vals_ins');
SELECT l::text FROM vals_bulk WHERE id = 5;

-- 2. float8 to 14 digits fewer: pi() * n prints as 3, 6, ...
TRUNCATE vals_bulk, vals_ins, rule_log RESTART IDENTITY;
SET extra_float_digits = -14;
SELECT simhash_dedupe_insert('vals_bulk', :'q') AS inserted;
INSERT INTO vals_ins (:cols) SELECT * FROM (:q) s;
RESET ALL;
SELECT * FROM twins_differ('vals_bulk', 'vals_ins');
SELECT id, pi = pi() * id AS pi_exact FROM vals_bulk ORDER BY id;

-- 3. An identity column GENERATED ALWAYS takes no value from the query (428C9), as INSERT;
-- OVERRIDING is not for this function either.
SELECT simhash_dedupe_insert('vals_bulk', 'SELECT 9 AS id, ''x'' AS body, -5::bigint AS always') AS inserted;
INSERT INTO vals_ins (id, body, always) SELECT 9, 'x', -5;
SELECT count(*) AS rows_with_always_given FROM vals_bulk WHERE always < 0;

-- 4. A domain's check fails as for INSERT (23514), and nothing is written
SELECT simhash_dedupe_insert('vals_bulk', 'SELECT 10 AS id, ''y'' AS body, (-1)::positive AS dom') AS inserted;
SELECT simhash_dedupe_insert('vals_bulk', 'SELECT 10 AS id, ''y'' AS body, -1 AS dom') AS inserted;
INSERT INTO vals_ins (id, body, dom) SELECT 10, 'y', -1;
SELECT count(*) AS rows_10 FROM vals_bulk WHERE id = 10;

-- 5. A rule that does the insert instead: the rows go where INSERT sends them
CREATE TABLE elsewhere (id integer, body text);
CREATE TABLE instead_bulk (LIKE vals_bulk INCLUDING ALL);
CREATE TRIGGER dedupe BEFORE INSERT ON instead_bulk FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
CREATE RULE instead AS ON INSERT TO instead_bulk WHERE new.id > 2
    DO INSTEAD INSERT INTO elsewhere VALUES (new.id, new.body);
SELECT simhash_dedupe_insert('instead_bulk', :'q') AS inserted;
SELECT id FROM instead_bulk ORDER BY id;
SELECT id FROM elsewhere ORDER BY id;

-- 6. Row-level security: the policies of INSERT, for the same values (a role that is
-- subject to them; the WITH CHECK refuses the whole load as it refuses the INSERT).
TRUNCATE vals_bulk, vals_ins, rule_log RESTART IDENTITY;
ALTER TABLE vals_bulk ENABLE ROW LEVEL SECURITY;
ALTER TABLE vals_ins ENABLE ROW LEVEL SECURITY;
CREATE POLICY see ON vals_bulk FOR SELECT USING (true);
CREATE POLICY see ON vals_ins FOR SELECT USING (true);
CREATE POLICY ins ON vals_bulk FOR INSERT WITH CHECK (id <> 99);
CREATE POLICY ins ON vals_ins FOR INSERT WITH CHECK (id <> 99);
GRANT SELECT, INSERT ON vals_bulk, vals_ins, rule_log TO regress_simhash_values_writer;
GRANT USAGE ON TYPE lossy TO regress_simhash_values_writer;
SET ROLE regress_simhash_values_writer;
SET extra_float_digits = 0;
SET TimeZone = 'Asia/Kolkata';
SET DateStyle = 'Postgres';
SELECT simhash_dedupe_insert('vals_bulk', :'q') AS inserted;
INSERT INTO vals_ins (:cols) SELECT * FROM (:q) s;
SELECT simhash_dedupe_insert('vals_bulk', 'SELECT 99 AS id, ''z'' AS body') AS inserted;
INSERT INTO vals_ins (id, body) SELECT 99, 'z';
RESET ROLE;
RESET ALL;
SELECT * FROM twins_differ('vals_bulk', 'vals_ins');
SELECT tbl, count(*) AS rule_rows FROM rule_log GROUP BY tbl ORDER BY tbl;

-- 7. With a similarity threshold (the load's plan answers rows before they are written):
-- the same values and rows too.
CREATE TABLE sim_bulk (LIKE vals_bulk INCLUDING ALL, lsh bigint[]);
CREATE TABLE sim_ins (LIKE sim_bulk INCLUDING ALL);
CREATE INDEX ON sim_bulk USING gin (lsh) WITH (fastupdate = off);
CREATE INDEX ON sim_ins USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON sim_bulk FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
CREATE TRIGGER dedupe BEFORE INSERT ON sim_ins FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
SET extra_float_digits = 0;
SET TimeZone = 'Asia/Kolkata';
SET DateStyle = 'Postgres';
SET client_min_messages = debug1;
SELECT simhash_dedupe_insert('sim_bulk', :'q') AS inserted;
RESET client_min_messages;
INSERT INTO sim_ins (:cols) SELECT * FROM (:q) s;
RESET ALL;
SELECT * FROM twins_differ('sim_bulk', 'sim_ins');
SELECT id FROM sim_bulk ORDER BY id;

DROP TABLE vals_bulk, vals_ins, instead_bulk, elsewhere, rule_log, sim_bulk, sim_ins;
DROP FUNCTION twins_differ(regclass, regclass);
DROP TYPE lossy CASCADE;
DROP DOMAIN positive;
DROP FUNCTION checked(integer);
DROP TYPE pair;
DROP ROLE regress_simhash_values_writer;
