-- A trusted extension: a role that is not a superuser but may create objects in a
-- database (here its owner) installs simhash and uses every kind of entry point; another
-- role gains nothing through it. The extension's objects belong to the bootstrap
-- superuser, so the SECURITY DEFINER cleanup and the catalog writers run as a superuser:
-- none of them may let either role reach what it could not reach before.
\set VERBOSITY terse
SELECT current_user AS regress_superuser \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS simhash_trusted;
DROP ROLE IF EXISTS regress_simhash_owner;
DROP ROLE IF EXISTS regress_simhash_other;
RESET client_min_messages;
CREATE ROLE regress_simhash_owner LOGIN;
CREATE ROLE regress_simhash_other LOGIN;
CREATE DATABASE simhash_trusted OWNER regress_simhash_owner;

\c simhash_trusted regress_simhash_owner
SELECT rolsuper FROM pg_roles WHERE rolname = current_user;
CREATE EXTENSION simhash;
-- the extension is the installer's; its objects the bootstrap superuser's
SELECT e.extowner::regrole AS extension_owner,
       (SELECT count(DISTINCT p.proowner) FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
        WHERE d.refobjid = e.oid AND d.deptype = 'e') AS function_owners,
       (SELECT rolsuper FROM pg_roles r JOIN pg_class c ON c.relowner = r.oid
        WHERE c.relname = 'simhash_layouts') AS catalog_owner_is_superuser
FROM pg_extension e WHERE e.extname = 'simhash';

-- every kind of entry point works for the installer
CREATE TABLE docs (id integer PRIMARY KEY, body text,
                   fp bigint GENERATED ALWAYS AS (simhash(body)) STORED,
                   lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED);
INSERT INTO docs (id, body) VALUES
    (1, 'Permission is hereby granted, free of charge, to any person obtaining a copy of this software'),
    (2, 'PERMISSION IS HEREBY GRANTED, FREE OF CHARGE, TO ANY PERSON OBTAINING A COPY OF THIS SOFTWARE!'),
    (3, 'An unrelated sentence about the weather in the mountains during a long winter');
SELECT count(*) AS indexes FROM simhash_create_index('docs', 'fp', 3, blocks => 4);
SELECT tbl, col, max_distance, blocks FROM simhash_layouts;
CREATE INDEX docs_lsh ON docs USING gin (lsh) WITH (fastupdate = off);
SELECT * FROM simhash_pairs('SELECT id, fp FROM docs', 3);
SELECT id1, id2, similarity FROM simhash_similar_pairs('SELECT id, body FROM docs', 0.8);
SELECT id FROM docs WHERE lsh && simhash_lsh('Permission is hereby granted free of charge to any person obtaining a copy of this software.')
ORDER BY id;
CREATE TRIGGER docs_dedupe BEFORE INSERT ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
INSERT INTO docs (id, body) VALUES (4, 'permission is hereby granted free of charge to any person obtaining a copy of this software');
CREATE TABLE df AS SELECT * FROM simhash_df('SELECT body FROM docs');
SELECT count(*) AS with_tfidf FROM docs WHERE simhash_tfidf(body, 'df') IS NOT NULL;
-- but not the superuser's objects behind it: the installer may insert layout rows (a
-- restore of its own dump needs it), only for tables it owns, and not change or delete any
INSERT INTO simhash_layouts VALUES ('pg_class', 'relname', 3, 4, now());
INSERT INTO simhash_layouts VALUES ('docs', 'fp', 3, 4, now());
UPDATE simhash_layouts SET blocks = 16;
DELETE FROM simhash_layouts;
ALTER TABLE simhash_layouts ADD COLUMN x integer;
GRANT INSERT ON simhash_layouts TO regress_simhash_owner;
CREATE OR REPLACE FUNCTION simhash_layouts_cleanup() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN END $$;
ALTER FUNCTION simhash_layouts_cleanup() SECURITY INVOKER;
ALTER EVENT TRIGGER simhash_layouts_cleanup DISABLE;
SELECT simhash_layouts_cleanup();
-- The installer owns schema public (pg_database_owner): renaming it and planting a
-- look-alike under the old name must not steer the extension's functions, least of all
-- the event trigger, which runs as its superuser owner on every DROP.
ALTER SCHEMA public RENAME TO simhash_real;
CREATE SCHEMA public;
CREATE TABLE public.simhash_layouts (tbl regclass, col name, max_distance integer, blocks integer, created timestamptz);
CREATE FUNCTION public.escalate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE WARNING 'escalated: ran as %', current_user;
    ALTER ROLE regress_simhash_owner SUPERUSER;
    RETURN NULL;
END $$;
CREATE TRIGGER escalate BEFORE DELETE ON public.simhash_layouts
    FOR EACH STATEMENT EXECUTE FUNCTION public.escalate();
CREATE TABLE simhash_real.dropped (x integer);
DROP TABLE simhash_real.dropped;
SELECT rolsuper AS became_superuser FROM pg_roles WHERE rolname = 'regress_simhash_owner';
SELECT simhash_real.simhash_create_index('simhash_real.docs', 'fp', 3);
-- (simhash_similar_pairs names no object, in memory or past work_mem, where it keeps the
-- shingle sets in temporary files: it works either way)
SELECT * FROM simhash_real.simhash_similar_pairs('SELECT 1, ''x''', 0.8);
SET work_mem = '64kB';
SELECT * FROM simhash_real.simhash_similar_pairs('SELECT i, (SELECT string_agg(md5((i * 1000 + j)::text), '' '') FROM generate_series(1, 200) j) FROM generate_series(1, 20) i', 0.8);
RESET work_mem;
DROP SCHEMA public CASCADE;
ALTER SCHEMA simhash_real RENAME TO public;
SELECT count(*) AS layouts_intact FROM simhash_layouts;
GRANT USAGE, CREATE ON SCHEMA public TO regress_simhash_other;
GRANT SELECT ON docs TO regress_simhash_other;

-- another role: reads the catalog, records and forgets only its own tables' layouts
\c simhash_trusted regress_simhash_other
SELECT count(*) AS layouts_visible FROM simhash_layouts;
INSERT INTO simhash_layouts VALUES ('docs', 'fp', 3, 4, now());
SELECT simhash_layout_forget('docs', 'fp');
SELECT simhash_layout_record('docs', 'fp', 16, 16);
DO $$ BEGIN PERFORM simhash_drop_index('docs', 'fp');
EXCEPTION WHEN insufficient_privilege THEN RAISE NOTICE 'simhash_drop_index refused: %', SQLSTATE; END $$;
CREATE TABLE mine (id integer, fp bigint);
SELECT count(*) AS indexes FROM simhash_create_index('mine', 'fp', 2);
DROP TABLE mine;
SELECT tbl, col FROM simhash_layouts ORDER BY tbl::text;
-- the installer's layout is intact
\c simhash_trusted regress_simhash_owner
SELECT tbl, col, max_distance, blocks FROM simhash_layouts;
DROP TABLE docs, df;
SELECT count(*) AS layouts_left FROM simhash_layouts;
DROP EXTENSION simhash;

\c contrib_regression :regress_superuser
DROP DATABASE simhash_trusted;
DROP ROLE regress_simhash_owner;
DROP ROLE regress_simhash_other;
