-- Security round 4 (issue 32), attack on the round's changes (docs/security.md).
-- 1. simhash_jaccard / simhash_containment of bigint[] sets: the overlap now asks the
--    interrupt poll as it goes (two 1 GB arrays of values interleaved at random took 3.7 s
--    without a look for interrupts; the test of the poll itself is the core's
--    Poll.OverlapAsksAsItGoes, too large for a regression file). Here: the same answers and
--    errors through the changed C ABI, the large side on either argument.
-- 2. simhash_create_index_statements with names that need quoting (quotes, dots, upper
--    case, a schema named like a table), run by \gexec: the indexes are built on that
--    table and no other, and the layout recorded for it.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- == 1. Overlap of bigint[] sets ==
SELECT simhash_jaccard(ARRAY[1, 2, 3, 5]::bigint[], ARRAY[2, 3, 4]::bigint[]) AS j,
       simhash_containment(ARRAY[2, 3]::bigint[], ARRAY[1, 2, 3, 5]::bigint[]) AS c;
-- galloping: a small set against a large one, both orders; 2^17 values: two polls' worth
SELECT simhash_jaccard(a, b) = simhash_jaccard(b, a) AS symmetric,
       simhash_containment(b, a) AS contained,
       round(simhash_jaccard(a, b)::numeric, 6) AS j
FROM (SELECT array(SELECT i FROM generate_series(1::bigint, 131072) i) AS a,
             array(SELECT i * 1000 FROM generate_series(1::bigint, 100) i) AS b) s;
-- values interleaved (a third in both): the merge's count
SELECT round(simhash_jaccard(a, b)::numeric, 6) AS j, simhash_containment(a, b) AS c
FROM (SELECT array(SELECT i FROM generate_series(1::bigint, 300000) i WHERE i % 3 <> 1) AS a,
             array(SELECT i FROM generate_series(1::bigint, 300000) i WHERE i % 3 <> 0) AS b) s;
-- unsigned order: negative values come after the positive ones
SELECT simhash_jaccard(ARRAY[1, -2]::bigint[], ARRAY[1, -2]::bigint[]) AS unsigned_order;
-- refused as before: not ascending (late in a long set: past the first slice), repeated
SELECT simhash_jaccard(array(SELECT i FROM generate_series(1::bigint, 200000) i) || 5::bigint,
                       ARRAY[1]::bigint[]);
SELECT simhash_containment(ARRAY[1]::bigint[], ARRAY[1, 1]::bigint[]);
SELECT simhash_jaccard(ARRAY[]::bigint[], ARRAY[]::bigint[]) IS NULL AS undefined;
-- texts go through the same overlap
SELECT simhash_jaccard('the quick brown fox', 'the quick brown fox jumps') > 0.5 AS similar,
       'the quick brown fox' %~ 'the quick brown fox' AS op;

-- == 2. Printed statements with names that need quoting ==
CREATE SCHEMA "regress_r4 We""ird.S";
CREATE TABLE "regress_r4 We""ird.S"."T""a.b" (id int, "F""p" bigint);
INSERT INTO "regress_r4 We""ird.S"."T""a.b" SELECT i, simhash(md5(i::text)) FROM generate_series(1, 50) i;
-- a table of the same name in public, and one named like the schema and table joined
CREATE TABLE public."T""a.b" (id int, "F""p" bigint);
CREATE TABLE public."regress_r4 We""ird.S.T""a.b" (id int, "F""p" bigint);
SELECT * FROM simhash_create_index_statements('"regress_r4 We""ird.S"."T""a.b"', 'F"p', 3, 4) \gexec
SELECT c.relname, n.nspname
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE i.indrelid IN ('"regress_r4 We""ird.S"."T""a.b"'::regclass, 'public."T""a.b"'::regclass,
                     'public."regress_r4 We""ird.S.T""a.b"'::regclass)
ORDER BY i.indrelid::regclass::text, c.relname;
SELECT tbl, col, max_distance, blocks FROM simhash_layouts ORDER BY tbl::text;
-- the search uses them
SELECT count(*) FROM "regress_r4 We""ird.S"."T""a.b" t
WHERE simhash_near(t."F""p", simhash(md5('7')), 3);
-- a second run drops the first layout's indexes of that table only
SELECT * FROM simhash_create_index_statements('"regress_r4 We""ird.S"."T""a.b"', 'F"p', 3, 2) \gexec
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = '"regress_r4 We""ird.S"."T""a.b"'::regclass;
SELECT simhash_drop_index('"regress_r4 We""ird.S"."T""a.b"', 'F"p');
DROP SCHEMA "regress_r4 We""ird.S" CASCADE;
DROP TABLE public."T""a.b", public."regress_r4 We""ird.S.T""a.b";
SELECT count(*) AS layouts_left FROM simhash_layouts;
