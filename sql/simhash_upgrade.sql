-- The upgrade path: a database that installed 0.1 and ran ALTER EXTENSION simhash UPDATE
-- has exactly the objects of a fresh install, and what it stored under 0.1 is still valid.
\set VERBOSITY terse

-- Every object of the extension, one line each: functions with their flags, arguments,
-- defaults, support function, settings and comment; tables with their columns.
\set shape_query 'SELECT string_agg(line, E''\\n'' ORDER BY line) AS shape FROM (SELECT pg_describe_object(d.classid, d.objid, d.objsubid) || coalesce('' | '' || (SELECT concat_ws('' '', p.provolatile, p.proisstrict, p.proparallel, p.proleakproof, p.prosecdef, p.prorettype::regtype, pg_get_function_arguments(p.oid), p.prosupport, p.proconfig::text, md5(p.prosrc), obj_description(p.oid, ''pg_proc'')) FROM pg_proc p WHERE d.classid = ''pg_proc''::regclass AND p.oid = d.objid), '''') || coalesce('' | '' || (SELECT string_agg(a.attname || '' '' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN '' not null'' ELSE '''' END, '', '' ORDER BY a.attnum) FROM pg_attribute a WHERE d.classid = ''pg_class''::regclass AND a.attrelid = d.objid AND a.attnum > 0 AND NOT a.attisdropped), '''') AS line FROM pg_depend d WHERE d.refclassid = ''pg_extension''::regclass AND d.deptype = ''e'' AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = ''simhash'')) s'

CREATE DATABASE simhash_upgrade_fresh;
CREATE DATABASE simhash_upgrade_old;

\c simhash_upgrade_fresh
CREATE EXTENSION simhash;
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
:shape_query \gset fresh_

\c simhash_upgrade_old
CREATE EXTENSION simhash VERSION '0.1';
CREATE TABLE docs (body text, fp bigint GENERATED ALWAYS AS (simhash(body)) STORED);
CREATE INDEX docs_fp ON docs (simhash(body));
INSERT INTO docs (body) VALUES ('The quick brown fox jumps over the lazy dog'), ('中文文本没有空格');
ALTER EXTENSION simhash UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
:shape_query \gset old_

-- objects only one of the two installs has (none)
SELECT 'fresh only' AS side, line
FROM regexp_split_to_table(:'fresh_shape', E'\n') AS line
EXCEPT SELECT 'fresh only', line FROM regexp_split_to_table(:'old_shape', E'\n') AS line
UNION ALL
(SELECT 'updated only', line FROM regexp_split_to_table(:'old_shape', E'\n') AS line
 EXCEPT SELECT 'updated only', line FROM regexp_split_to_table(:'fresh_shape', E'\n') AS line)
ORDER BY 1, 2;
SELECT :'fresh_shape' = :'old_shape' AS same_objects;

-- fingerprints stored under 0.1 are those 0.2 computes
SELECT count(*) AS rows, count(*) FILTER (WHERE fp = simhash(body)) AS unchanged FROM docs;
SET enable_seqscan = off;
SELECT count(*) AS found_by_old_index FROM docs WHERE simhash(body) = simhash('the QUICK brown fox, jumps over the lazy dog!');
RESET enable_seqscan;

\c contrib_regression
DROP DATABASE simhash_upgrade_fresh;
DROP DATABASE simhash_upgrade_old;
