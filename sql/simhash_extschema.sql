-- The extension in a schema of its own, on which other roles have no USAGE (a new schema
-- grants none to PUBLIC): their DDL and DML that do not use the extension must not need it,
-- nor must DML on a table whose owner put the dedupe trigger on it. The event trigger that
-- checks every CREATE TRIGGER looked simhash_dedupe up by the schema's name, which checks
-- USAGE as the role creating the trigger: every other role's CREATE TRIGGER failed with
-- "permission denied for schema ext", whatever function and table it named (and so did
-- their pg_restore). Once with the extension installed by a superuser, once by the
-- database's owner (a trusted install, into a schema that owner made).
\set VERBOSITY terse
SELECT current_user AS regress_superuser, current_database() AS regress_db \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS simhash_extschema;
DROP ROLE IF EXISTS regress_simhash_es_owner;
DROP ROLE IF EXISTS regress_simhash_es_other;
RESET client_min_messages;
CREATE ROLE regress_simhash_es_owner LOGIN;
CREATE ROLE regress_simhash_es_other LOGIN;
CREATE DATABASE simhash_extschema OWNER regress_simhash_es_owner;

-- 1. Installed by a superuser into a new schema ext. The database's owner is given USAGE
-- on it, the other role nothing.
\c simhash_extschema :regress_superuser
GRANT CREATE ON SCHEMA public TO regress_simhash_es_other;
CREATE SCHEMA ext;
CREATE EXTENSION simhash SCHEMA ext;
GRANT USAGE ON SCHEMA ext TO regress_simhash_es_owner;
SELECT has_schema_privilege('regress_simhash_es_other', 'ext', 'USAGE') AS other_uses_ext;

-- the other role's own trigger, with its own function, on its own table
\c simhash_extschema regress_simhash_es_other
CREATE TABLE notes (id integer PRIMARY KEY, body text);
CREATE FUNCTION notes_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.body := coalesce(NEW.body, 'stamped'); RETURN NEW; END $$;
CREATE TRIGGER notes_stamp BEFORE INSERT ON notes FOR EACH ROW EXECUTE FUNCTION notes_stamp();
CREATE TRIGGER notes_stamp_2 AFTER UPDATE ON notes FOR EACH STATEMENT EXECUTE FUNCTION notes_stamp();
INSERT INTO notes (id) VALUES (1);
SELECT * FROM notes;
-- naming the extension's function needs USAGE, as for any function of the schema: that
-- error is PostgreSQL's, before the event trigger runs
CREATE TRIGGER notes_dedupe BEFORE INSERT ON notes FOR EACH ROW
    EXECUTE FUNCTION ext.simhash_dedupe('body', 'fp', 'k=3', 'reject');

-- The owner's table with the dedupe trigger (checked at CREATE TRIGGER as always), block
-- indexes, and a view that searches through them, for the other role to write and read.
\c simhash_extschema regress_simhash_es_owner
CREATE TABLE docs (id integer PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER docs_dedupe BEFORE INSERT ON docs FOR EACH ROW
    EXECUTE FUNCTION ext.simhash_dedupe('body', 'fp', 'k=30', 'reject');
CREATE TRIGGER docs_dedupe BEFORE INSERT ON docs FOR EACH ROW
    EXECUTE FUNCTION ext.simhash_dedupe('body', 'fp', 'k=3', 'reject');
SELECT count(*) AS indexes FROM ext.simhash_create_index('docs', 'fp', 3, blocks => 4);
INSERT INTO docs (id, body) VALUES
    (1, 'Permission is hereby granted, free of charge, to any person obtaining a copy of this software');
CREATE VIEW docs_near AS
SELECT id FROM docs WHERE ext.simhash_near(fp, ext.simhash('permission is hereby granted free of charge to any person obtaining a copy of this software'), 3);
GRANT INSERT ON docs TO regress_simhash_es_other;
GRANT SELECT ON docs_near TO regress_simhash_es_other;

-- The other role writes through the trigger (which finds the extension's functions by
-- OID) and reads through the view (whose search the planner rewrites into index lookups),
-- neither needing USAGE on ext.
\c simhash_extschema regress_simhash_es_other
INSERT INTO docs (id, body) VALUES (2, 'An unrelated sentence about the weather in the mountains during a long winter');
INSERT INTO docs (id, body) VALUES (3, 'PERMISSION IS HEREBY GRANTED, FREE OF CHARGE, TO ANY PERSON OBTAINING A COPY OF THIS SOFTWARE!');
SELECT * FROM docs_near;
-- and drops its table (the cleanup event trigger runs as its owner)
CREATE TABLE scratch (x integer);
DROP TABLE scratch;

-- 2. Installed by the database's owner (trusted) into a schema it made.
\c simhash_extschema regress_simhash_es_owner
DROP VIEW docs_near;
DROP TABLE docs;
\c simhash_extschema :regress_superuser
DROP EXTENSION simhash;
\c simhash_extschema regress_simhash_es_owner
CREATE SCHEMA ext2;
CREATE EXTENSION simhash SCHEMA ext2;
SELECT has_schema_privilege('regress_simhash_es_other', 'ext2', 'USAGE') AS other_uses_ext2,
       (SELECT rolsuper FROM pg_roles r JOIN pg_event_trigger e ON e.evtowner = r.oid
        WHERE e.evtname = 'simhash_dedupe_check_trigger') AS event_trigger_owner_is_superuser;
\c simhash_extschema regress_simhash_es_other
CREATE TRIGGER notes_stamp_3 BEFORE UPDATE ON notes FOR EACH ROW EXECUTE FUNCTION notes_stamp();
SELECT tgname FROM pg_trigger WHERE tgrelid = 'notes'::regclass ORDER BY tgname;

-- The extension's owner may drop it with CASCADE, and with it every object of any role
-- that uses its functions (standard PostgreSQL; docs/security.md says so): here the other
-- role's generated column.
\c simhash_extschema regress_simhash_es_owner
GRANT USAGE ON SCHEMA ext2 TO regress_simhash_es_other;
\c simhash_extschema regress_simhash_es_other
ALTER TABLE notes ADD COLUMN fp bigint GENERATED ALWAYS AS (ext2.simhash(body)) STORED;
\c simhash_extschema regress_simhash_es_owner
DROP EXTENSION simhash;
DROP EXTENSION simhash CASCADE;
SELECT attname FROM pg_attribute WHERE attrelid = 'notes'::regclass AND attnum > 0 AND NOT attisdropped
ORDER BY attnum;

\c :regress_db :regress_superuser
DROP DATABASE simhash_extschema;
DROP ROLE regress_simhash_es_owner;
DROP ROLE regress_simhash_es_other;
