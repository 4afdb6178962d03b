-- The simhash_dedupe() trigger and writers with few rights: what a writer learns about a
-- row it cannot read (column privileges here; row-level security in simhash_dedupe), and
-- which locks the trigger takes for it. The serialization failure, and whether such a
-- writer holds back the owner's writes: specs/simhash_dedupe_privileges.spec.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
DROP ROLE IF EXISTS regress_simhash_sec_writer;
DROP ROLE IF EXISTS regress_simhash_sec_reader;
RESET client_min_messages;
\set VERBOSITY default
CREATE ROLE regress_simhash_sec_writer;
CREATE ROLE regress_simhash_sec_reader;
\set gpl 'This program is free software; you can redistribute it and/or modify it under the terms of the GNU General Public License as published by the Free Software Foundation.'
-- hamming 2 from :gpl, simhash_jaccard 0.976
\set gpl_inc 'This program is free software; you can redistribute it and/or modify it under the terms of the GNU General Public License as published by the Free Software Foundation, Inc.'

-- 1. Column privileges. A distance comes from the fingerprint column, the fingerprint from
-- the text, a similarity from the text: a reject message names the near duplicate and
-- says how near it is only to a writer who may read its key, its text and its key column.
-- To others it says that a row within the limit exists, as a unique index would.
CREATE TABLE sec_cols (id integer PRIMARY KEY, body text, fp bigint, dup_of integer);
CREATE TRIGGER dedupe BEFORE INSERT ON sec_cols FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
SELECT count(*) FROM simhash_create_index('sec_cols', 'fp', 3, blocks => 4);
INSERT INTO sec_cols (id, body) VALUES (1, :'gpl');
GRANT INSERT ON sec_cols TO regress_simhash_sec_writer;
GRANT SELECT (id) ON sec_cols TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
INSERT INTO sec_cols (id, body) VALUES (2, :'gpl_inc');
RESET ROLE;
GRANT SELECT (fp) ON sec_cols TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
INSERT INTO sec_cols (id, body) VALUES (2, :'gpl_inc');
RESET ROLE;
REVOKE SELECT (fp) ON sec_cols FROM regress_simhash_sec_writer;
GRANT SELECT (body) ON sec_cols TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
INSERT INTO sec_cols (id, body) VALUES (2, :'gpl_inc');
RESET ROLE;
GRANT SELECT (fp) ON sec_cols TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
INSERT INTO sec_cols (id, body) VALUES (2, :'gpl_inc');
RESET ROLE;
-- link writes the near duplicate's key into the new row: with SELECT on the key alone it
-- would tell which row's hidden text is near the writer's, so it is refused (42501)
DROP TRIGGER dedupe ON sec_cols;
CREATE TRIGGER dedupe BEFORE INSERT ON sec_cols FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
REVOKE SELECT ON sec_cols FROM regress_simhash_sec_writer;
GRANT SELECT (id) ON sec_cols TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
INSERT INTO sec_cols (id, body) VALUES (2, :'gpl_inc');
RESET ROLE;
GRANT SELECT (id, body, fp) ON sec_cols TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
INSERT INTO sec_cols (id, body) VALUES (2, :'gpl_inc');
RESET ROLE;
SELECT id, dup_of FROM sec_cols ORDER BY id;

-- with a similarity threshold: the similarity only to a writer who may read the text and
-- the keys column
CREATE TABLE sec_similar (id integer PRIMARY KEY, body text, lsh bigint[]);
CREATE INDEX ON sec_similar USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT ON sec_similar FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'reject');
INSERT INTO sec_similar (id, body) VALUES (1, :'gpl');
GRANT INSERT ON sec_similar TO regress_simhash_sec_writer;
GRANT SELECT (id, lsh) ON sec_similar TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
INSERT INTO sec_similar (id, body) VALUES (2, :'gpl_inc');
RESET ROLE;
GRANT SELECT (body) ON sec_similar TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
INSERT INTO sec_similar (id, body) VALUES (2, :'gpl_inc');
RESET ROLE;

-- 2. A role that may only read the table cannot put the trigger on a view of its own (a
-- TEMP one) and hold the table's locks: the trigger checks INSERT on the table before it
-- takes any lock. (Before, 1,200 rows that skip inserted nothing and took SHARE ROW
-- EXCLUSIVE on the table, which held back every writer and VACUUM.)
CREATE TABLE sec_docs (id serial PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER dedupe BEFORE INSERT ON sec_docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
SELECT count(*) FROM simhash_create_index('sec_docs', 'fp', 3, blocks => 4);
INSERT INTO sec_docs (body) VALUES (:'gpl');
GRANT SELECT ON sec_docs TO regress_simhash_sec_reader;
SET ROLE regress_simhash_sec_reader;
BEGIN;
CREATE TEMP VIEW sec_in AS SELECT * FROM sec_docs;
CREATE TRIGGER dedupe INSTEAD OF INSERT ON sec_in FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'skip');
INSERT INTO sec_in (body) SELECT :'gpl_inc' FROM generate_series(1, 1200);
ROLLBACK;
RESET ROLE;

-- 3. A role that may insert but not lock the table (LOCK TABLE ... IN SHARE ROW EXCLUSIVE
-- MODE needs UPDATE, DELETE or TRUNCATE): a bulk load keeps to the lock keys. The budget
-- of lock keys is a quarter of the shared lock table; the first try for the table lock
-- comes at half of it (or 4,096 locks), so a load of 3/4 of the budget (4 keys a row at
-- k = 3) would take the table lock for a role allowed to.
SELECT current_setting('max_locks_per_transaction')::bigint *
       (current_setting('max_connections')::int + current_setting('autovacuum_max_workers')::int + 1 +
        current_setting('max_worker_processes')::int + current_setting('max_wal_senders')::int +
        current_setting('max_prepared_transactions')::int) / 4 AS budget \gset
CREATE TABLE sec_bulk (id integer PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER dedupe BEFORE INSERT ON sec_bulk FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
SELECT count(*) FROM simhash_create_index('sec_bulk', 'fp', 3, blocks => 4);
GRANT INSERT ON sec_bulk TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
BEGIN;
INSERT INTO sec_bulk (id, body, fp)
SELECT i, 'row ' || i, ('x' || md5(i::text))::bit(64)::bigint FROM generate_series(1, :budget * 3 / 16) i;
SELECT bool_or(mode = 'ShareRowExclusiveLock') AS table_locked,
       count(*) FILTER (WHERE mode = 'RowExclusiveLock') AS row_exclusive
FROM pg_locks
WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation = 'sec_bulk'::regclass;
-- past the budget: refused, with a hint, rather than a lock the role may not take
INSERT INTO sec_bulk (id, body, fp)
SELECT i, 'row ' || i, ('x' || md5(i::text))::bit(64)::bigint
FROM generate_series(:budget * 3 / 16 + 1, :budget / 4 + 1) i;
ROLLBACK;
RESET ROLE;
-- with UPDATE on the table (LOCK TABLE allows it), the same load takes the table lock
GRANT UPDATE ON sec_bulk TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
BEGIN;
INSERT INTO sec_bulk (id, body, fp)
SELECT i, 'row ' || i, ('x' || md5(i::text))::bit(64)::bigint FROM generate_series(1, :budget * 3 / 16) i;
SELECT bool_or(mode = 'ShareRowExclusiveLock') AS table_locked
FROM pg_locks
WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation = 'sec_bulk'::regclass;
ROLLBACK;
RESET ROLE;

-- Every role can read the keys of the locks held in pg_locks, even in other databases:
-- the trigger's lock keys are keyed with a secret of the database and the table
-- (SipHash-2-4), so they tell nothing of the row being written. The same text written to
-- two tables takes unrelated keys (unkeyed, they were the same numbers, a function of the
-- fingerprint alone), and no role but a superuser may read the secret.
CREATE TABLE sec_lock_a (id integer PRIMARY KEY, body text, fp bigint);
CREATE TABLE sec_lock_b (id integer PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER a_dedupe BEFORE INSERT ON sec_lock_a FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
CREATE TRIGGER b_dedupe BEFORE INSERT ON sec_lock_b FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
SELECT (SELECT count(*) FROM simhash_create_index('sec_lock_a', 'fp', 3)) +
       (SELECT count(*) FROM simhash_create_index('sec_lock_b', 'fp', 3)) AS indexes;
BEGIN;
INSERT INTO sec_lock_a VALUES (1, 'the merger with Globex closes on 3 March at 41 dollars a share', NULL);
INSERT INTO sec_lock_b VALUES (1, 'the merger with Globex closes on 3 March at 41 dollars a share', NULL);
SELECT count(*) FILTER (WHERE classid = 'sec_lock_a'::regclass::oid) AS keys_a,
       count(*) FILTER (WHERE classid = 'sec_lock_b'::regclass::oid) AS keys_b,
       count(DISTINCT objid) FILTER (WHERE classid = 'sec_lock_a'::regclass::oid AND objid IN
           (SELECT l.objid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 21320
              AND l.classid = 'sec_lock_b'::regclass::oid)) AS shared
FROM pg_locks
WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND objsubid = 21320;
ROLLBACK;
SELECT has_table_privilege('regress_simhash_sec_writer', 'simhash_lock_secret', 'SELECT') AS writer_reads_secret,
       (SELECT count(*) FROM simhash_lock_secret WHERE k0 <> 0 AND k1 <> 0 AND k0 <> k1) AS secret_rows;
DROP TABLE sec_lock_a, sec_lock_b;

-- 6. The event trigger that checks the arguments at CREATE TRIGGER: made by the install
-- script (a superuser's), fired only by CREATE TRIGGER, with the rights of the role that
-- creates the trigger, which needs no EXECUTE on its function (nobody may call it).
SELECT e.evtevent, e.evttags, e.evtenabled, r.rolsuper AS owner_is_superuser,
       p.oid::regprocedure AS function, p.prosecdef AS secdef
FROM pg_event_trigger e JOIN pg_roles r ON r.oid = e.evtowner JOIN pg_proc p ON p.oid = e.evtfoid
WHERE e.evtname = 'simhash_dedupe_check_trigger';
SELECT has_function_privilege('regress_simhash_sec_writer', 'simhash_dedupe_check_trigger()', 'EXECUTE') AS writer_may_call;
CREATE TABLE sec_own (id integer PRIMARY KEY, body text, fp bigint);
ALTER TABLE sec_own OWNER TO regress_simhash_sec_writer;
SET ROLE regress_simhash_sec_writer;
\set VERBOSITY terse
SELECT simhash_dedupe_check_trigger();
CREATE TRIGGER dedupe BEFORE INSERT ON sec_own FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=30', 'reject');
CREATE TRIGGER dedupe BEFORE INSERT ON sec_own FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'reject');
INSERT INTO sec_own (id, body) VALUES (1, :'gpl');
INSERT INTO sec_own (id, body) VALUES (2, :'gpl_inc');
\set VERBOSITY default
RESET ROLE;
DROP TABLE sec_own;

-- 7. A role that holds the table lock without the right to take it with LOCK TABLE: with
-- REFERENCES, a foreign key to the table takes SHARE ROW EXCLUSIVE on it; with TRIGGER,
-- CREATE TRIGGER on it does. The trigger then takes no lock keys (no other writer can run,
-- so none is needed, and no budget spent), but makes no table filter: the making reads
-- every row, and its DEBUG1 line told a writer without SELECT how many rows the table
-- holds (343, hidden from it). Made for a role that LOCK TABLE lets take the lock, or that
-- may read the rows (SELECT, without row-level security hiding any). Each case on a fresh
-- table of 343 rows, with the writer's privileges given and row-level security on or off
-- (its policies let the writer insert, and read only its own rows).
CREATE FUNCTION sec_fk_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION pg_temp.sec_fk_make(privileges text, rls boolean, threshold boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql SET client_min_messages = warning AS $$
BEGIN
    DROP TABLE IF EXISTS sec_fk, sec_fk_ref;
    CREATE TABLE sec_fk (id integer PRIMARY KEY, body text, fp bigint, lsh bigint[]);
    IF threshold THEN
        CREATE TRIGGER dedupe BEFORE INSERT ON sec_fk FOR EACH ROW
            EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'skip');
        CREATE INDEX ON sec_fk USING gin (lsh) WITH (fastupdate = off);
    ELSE
        CREATE TRIGGER dedupe BEFORE INSERT ON sec_fk FOR EACH ROW
            EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'skip');
        PERFORM simhash_create_index('sec_fk', 'fp', 3, blocks => 4);
    END IF;
    INSERT INTO sec_fk (id, body) SELECT i, 'hidden row ' || md5(i::text) || ' ' || md5((i * 7)::text)
    FROM generate_series(1, 343) i;
    CREATE TABLE sec_fk_ref (ref integer);
    ALTER TABLE sec_fk_ref OWNER TO regress_simhash_sec_writer;
    EXECUTE format('GRANT %s ON sec_fk TO regress_simhash_sec_writer', privileges);
    CREATE POLICY sec_fk_insert ON sec_fk FOR INSERT TO regress_simhash_sec_writer WITH CHECK (true);
    CREATE POLICY sec_fk_select ON sec_fk FOR SELECT TO regress_simhash_sec_writer USING (id > 1000);
    IF rls THEN
        ALTER TABLE sec_fk ENABLE ROW LEVEL SECURITY;
    END IF;
END $$;
-- a long statement of the writer's, with DEBUG1 shown; then the locks it held
CREATE FUNCTION pg_temp.sec_fk_load() RETURNS TABLE (kept bigint, table_locked boolean, lock_keys bigint)
LANGUAGE plpgsql AS $$
BEGIN
    SET LOCAL client_min_messages = debug1;
    INSERT INTO sec_fk (id, body)
    SELECT 1000 + i, 'new row ' || md5((-i)::text) || ' ' || md5((i * 11)::text) FROM generate_series(1, 600) i;
    SET LOCAL client_min_messages = notice;
    RETURN QUERY
    SELECT (SELECT count(*) FROM sec_fk WHERE id > 1000),
           (SELECT bool_or(mode = 'ShareRowExclusiveLock') FROM pg_locks
            WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation = 'sec_fk'::regclass),
           (SELECT count(*) FROM pg_locks
            WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND objsubid = 21320);
END $$;
-- REFERENCES (and SELECT on the key, for the count of its own rows): no filter
SELECT pg_temp.sec_fk_make('INSERT, REFERENCES, SELECT (id)', true);
SET ROLE regress_simhash_sec_writer;
BEGIN;
ALTER TABLE sec_fk_ref ADD FOREIGN KEY (ref) REFERENCES sec_fk (id);
SELECT * FROM pg_temp.sec_fk_load();
ROLLBACK;
RESET ROLE;
-- the same with a similarity threshold: no table index
SELECT pg_temp.sec_fk_make('INSERT, REFERENCES, SELECT (id)', true, threshold => true);
SET ROLE regress_simhash_sec_writer;
BEGIN;
ALTER TABLE sec_fk_ref ADD FOREIGN KEY (ref) REFERENCES sec_fk (id);
SELECT * FROM pg_temp.sec_fk_load();
ROLLBACK;
RESET ROLE;
-- TRIGGER: no filter
SELECT pg_temp.sec_fk_make('INSERT, TRIGGER, SELECT (id)', true);
SET ROLE regress_simhash_sec_writer;
BEGIN;
CREATE TRIGGER sec_fk_noop AFTER DELETE ON sec_fk FOR EACH STATEMENT EXECUTE FUNCTION sec_fk_noop();
SELECT * FROM pg_temp.sec_fk_load();
ROLLBACK;
RESET ROLE;
-- SELECT on the table, but row-level security hides the 343 rows: no filter
SELECT pg_temp.sec_fk_make('INSERT, REFERENCES, SELECT', true);
SET ROLE regress_simhash_sec_writer;
BEGIN;
ALTER TABLE sec_fk_ref ADD FOREIGN KEY (ref) REFERENCES sec_fk (id);
SELECT * FROM pg_temp.sec_fk_load();
ROLLBACK;
RESET ROLE;
-- SELECT without row-level security: the role may count the rows anyway, the filter is made
SELECT pg_temp.sec_fk_make('INSERT, REFERENCES, SELECT', false);
SET ROLE regress_simhash_sec_writer;
BEGIN;
ALTER TABLE sec_fk_ref ADD FOREIGN KEY (ref) REFERENCES sec_fk (id);
SELECT * FROM pg_temp.sec_fk_load();
ROLLBACK;
RESET ROLE;
-- UPDATE (LOCK TABLE allows the lock), without SELECT: the filter is made (see
-- docs/security.md: such a role may take the table lock, and so the filter, anyway)
SELECT pg_temp.sec_fk_make('INSERT, UPDATE, SELECT (id)', true);
SET ROLE regress_simhash_sec_writer;
BEGIN;
LOCK TABLE sec_fk IN SHARE ROW EXCLUSIVE MODE;
SELECT * FROM pg_temp.sec_fk_load();
ROLLBACK;
RESET ROLE;
SELECT pg_temp.sec_fk_make('INSERT, UPDATE, SELECT (id)', true, threshold => true);
SET ROLE regress_simhash_sec_writer;
BEGIN;
LOCK TABLE sec_fk IN SHARE ROW EXCLUSIVE MODE;
SELECT * FROM pg_temp.sec_fk_load();
ROLLBACK;
RESET ROLE;
DROP TABLE sec_fk, sec_fk_ref;
DROP FUNCTION sec_fk_noop();

-- A threshold without a keys column (simhash_ops on the text): a writer with SELECT on the
-- key and text columns only may read the near duplicate's key (there is no keys column to
-- ask about): 23505 naming it, not an error about column 0
CREATE TABLE sec_ops (id bigserial PRIMARY KEY, body text);
CREATE INDEX ON sec_ops USING gin (body simhash_ops) WITH (fastupdate = off);
CREATE TRIGGER d BEFORE INSERT ON sec_ops FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'similarity=0.8', 'reject');
GRANT INSERT ON sec_ops TO regress_simhash_sec_writer;
GRANT SELECT (id, body) ON sec_ops TO regress_simhash_sec_writer;
GRANT USAGE ON SEQUENCE sec_ops_id_seq TO regress_simhash_sec_writer;
INSERT INTO sec_ops (body) VALUES ('the quick brown fox jumps over the lazy dog near the river bank today');
SET ROLE regress_simhash_sec_writer;
\set VERBOSITY default
INSERT INTO sec_ops (body) VALUES ('the quick brown fox jumps over the lazy dog near the river bank today');
\set VERBOSITY terse
RESET ROLE;
DROP TABLE sec_ops;

DROP TABLE sec_cols, sec_similar, sec_docs, sec_bulk;
DROP ROLE regress_simhash_sec_writer;
DROP ROLE regress_simhash_sec_reader;
