-- Near-duplicate search: block keys, simhash_near(), layouts, index use proven by EXPLAIN,
-- nearest neighbours, the skew report, and the indexed answer checked against brute force
-- for every layout.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- block keys: block i of b holds bits [64 i / b, 64 (i + 1) / b)
SELECT simhash_block(x'0123456789ABCDEF'::bigint, 2, 0) = x'89ABCDEF'::int AS low32,
       simhash_block(x'0123456789ABCDEF'::bigint, 2, 1) = x'01234567'::int AS high32,
       to_hex(simhash_block(-1, 3, 0)) AS ones21,
       to_hex(simhash_block(-1, 3, 2)) AS ones22,
       to_hex(simhash_block(x'0123456789ABCDEF'::bigint, 4, 3)) AS top16,
       simhash_block(x'0123456789ABCDEF'::bigint, 16, 15) AS top4;
SELECT simhash_block(1, 1, 0);
SELECT simhash_block(1, 17, 0);
SELECT simhash_block(1, 4, 4);
SELECT simhash_block(1, 4, -1);

-- probes: every value within the radius of the query's block, each once
WITH p AS (SELECT unnest(simhash_block_probes(x'00000000000A5A5A'::bigint, 3, 0, 2)) AS v)
SELECT count(*) AS probes, count(DISTINCT v) AS distinct_values,
       max(length(replace((v # x'000A5A5A'::int)::bit(32)::text, '0', ''))) AS max_bits_flipped
FROM p;
SELECT cardinality(simhash_block_probes(0, 16, 0, 9)) AS whole_4_bit_block,
       simhash_block_probes(5, 16, 0, 0) AS radius0,
       cardinality(simhash_block_probes(0, 2, 1, 3)) AS c32_3;
SELECT simhash_block_probes(1, 4, 0, -1);
SELECT simhash_block_probes(1, 2, 0, 8);
-- one call site whose arguments change from row to row and come back: the probe array it
-- keeps from the previous row must follow them
SELECT q, r, cardinality(p) AS probes, p[1] AS first, p[cardinality(p)] AS last
FROM (SELECT n, q, r, simhash_block_probes(q, 4, 1, r) AS p
      FROM (VALUES (1, 0::bigint, 1), (2, 0, 1), (3, 65536, 1), (4, 65536, 2), (5, 0, 1),
                   (6, -1, 0)) v(n, q, r)) s
ORDER BY n;

-- simhash_near(fp, q, k) is hamming(fp, q) <= k; simhash_within is the same check
SELECT simhash_near(0, 7, 3) AS d3_k3, simhash_near(0, 15, 3) AS d4_k3,
       simhash_near(-1, 0, 64) AS d64_k64, simhash_near(42, 42, 0) AS same_k0,
       simhash_within(0, 7, 2) AS d3_k2,
       simhash_near(NULL, 0, 3) IS NULL AS null_fp, simhash_near(0, 0, NULL) IS NULL AS null_k;
SELECT simhash_near(0, 0, -1);
SELECT simhash_within(0, 0, 65);

-- how many blocks a layout gets, by largest distance and table size
SELECT m AS max_distance,
       simhash_layout_blocks(m, 1e4) AS rows_1e4, simhash_layout_blocks(m, 1e6) AS rows_1e6,
       simhash_layout_blocks(m, 1e7) AS rows_1e7, simhash_layout_blocks(m, 1e8) AS rows_1e8
FROM unnest(ARRAY[0, 3, 6, 8, 12, 16]) m;
SELECT simhash_layout_blocks(3, 'NaN');
SELECT simhash_layout_blocks(-1, 100);

-- simhash_create_index refuses what it cannot index
CREATE TABLE bad (id integer, body text, fp bigint);
CREATE VIEW bad_view AS SELECT * FROM bad;
SELECT simhash_create_index('bad_view', 'fp');
SELECT simhash_create_index('bad', 'nope');
SELECT simhash_create_index('bad', 'body');
SELECT simhash_create_index('bad', 'id');
SELECT simhash_create_index('bad', 'fp', 17);
SELECT simhash_create_index('bad', 'fp', -1);
SELECT simhash_create_index('bad', 'fp', 3, 1);
SELECT simhash_create_index('bad', NULL);
SELECT simhash_create_index('no_such_table', 'fp');
SELECT simhash_search_plan('bad', 'body', 3);
SELECT simhash_search_plan('bad', 'fp', 65);
SELECT simhash_skew('bad', 'fp');
SELECT simhash_drop_index('bad', 'fp');

-- names that need quoting, in another schema
CREATE SCHEMA "Odd Schema";
CREATE TABLE "Odd Schema"."Docs ""quoted"" table" (id integer, "Finger Print" bigint);
INSERT INTO "Odd Schema"."Docs ""quoted"" table" SELECT i, hashint8extended(i, 1) FROM generate_series(1, 200) i;
SELECT * FROM simhash_create_index('"Odd Schema"."Docs ""quoted"" table"', 'Finger Print', 2);
SELECT tbl, col, max_distance, blocks FROM simhash_layouts ORDER BY tbl::text;
SELECT * FROM simhash_block_indexes('"Odd Schema"."Docs ""quoted"" table"', 'Finger Print');
SELECT id FROM "Odd Schema"."Docs ""quoted"" table"
WHERE simhash_near("Finger Print", hashint8extended(5, 1) # 3, 2);
-- a new layout replaces the old one; dropping it removes indexes and record
SELECT * FROM simhash_create_index('"Odd Schema"."Docs ""quoted"" table"', 'Finger Print', 6, 4);
SELECT tbl, col, max_distance, blocks FROM simhash_layouts ORDER BY tbl::text;
SELECT simhash_drop_index('"Odd Schema"."Docs ""quoted"" table"', 'Finger Print') AS dropped;
SELECT simhash_drop_index('"Odd Schema"."Docs ""quoted"" table"', 'Finger Print') AS dropped_again;
-- only block indexes are block indexes: a user's index that mentions simhash_block in a
-- predicate, or on another column, survives simhash_create_index and simhash_drop_index
CREATE TABLE keep_mine (id bigint, fp bigint, other bigint, "F,p" bigint);
CREATE UNIQUE INDEX keep_mine_unique ON keep_mine (id) WHERE simhash_block(fp, 2, 0) <> 0;
CREATE INDEX keep_mine_other ON keep_mine (simhash_block(other, 2, 0), fp);
SELECT count(*) AS made FROM simhash_create_index('keep_mine', 'fp', 3);
SELECT index, blocks, block FROM simhash_block_indexes('keep_mine', 'fp');
SELECT simhash_drop_index('keep_mine', 'fp') AS dropped;
SELECT count(*) FROM simhash_create_index('keep_mine', 'F,p', 3);
SELECT index, blocks, block FROM simhash_block_indexes('keep_mine', 'F,p');
SELECT indexrelid::regclass AS left_over FROM pg_index WHERE indrelid = 'keep_mine'::regclass ORDER BY indexrelid::regclass::text COLLATE "C";
DROP TABLE keep_mine;
SELECT count(*) AS layouts FROM simhash_layouts;
-- dropping the column or the table forgets the layout
SELECT count(*) FROM simhash_create_index('"Odd Schema"."Docs ""quoted"" table"', 'Finger Print');
ALTER TABLE "Odd Schema"."Docs ""quoted"" table" DROP COLUMN "Finger Print";
SELECT count(*) AS layouts_after_drop_column FROM simhash_layouts;
ALTER TABLE "Odd Schema"."Docs ""quoted"" table" ADD COLUMN fp bigint;
SELECT count(*) FROM simhash_create_index('"Odd Schema"."Docs ""quoted"" table"', 'fp');
DROP SCHEMA "Odd Schema" CASCADE;
SELECT count(*) AS layouts_after_drop_table FROM simhash_layouts;

-- index names that are taken get a number; long names are cut to fit
CREATE TABLE named (fp bigint);
CREATE INDEX named_fp_simhash2_0 ON named (fp);
SELECT * FROM simhash_create_index('named', 'fp', 3, 2);
CREATE TABLE a_table_name_that_is_long_enough_to_need_cutting_somewhere (fingerprint_column bigint);
SELECT * FROM simhash_create_index('a_table_name_that_is_long_enough_to_need_cutting_somewhere', 'fingerprint_column', 3, 2);
DROP TABLE named, a_table_name_that_is_long_enough_to_need_cutting_somewhere;

-- only the owners of a table can record or change its layout
CREATE ROLE regress_simhash_other;
GRANT SELECT ON bad TO regress_simhash_other;
SET ROLE regress_simhash_other;
SELECT simhash_create_index('bad', 'fp');
INSERT INTO simhash_layouts (tbl, col, max_distance, blocks) VALUES ('bad', 'fp', 3, 2);
RESET ROLE;
DROP TABLE bad CASCADE;
DROP ROLE regress_simhash_other;

-- The test table: 20,000 random fingerprints, 40 query fingerprints with neighbours planted
-- at every distance 0..12 (and a duplicate at 0), 300 copies of one fingerprint (a skewed
-- bucket), and rows without a fingerprint.
CREATE FUNCTION pg_temp.flip(fp bigint, d integer, seed integer) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT fp # coalesce((SELECT bit_or(1::bigint << pos)
                          FROM (SELECT pos FROM generate_series(0, 63) pos
                                ORDER BY hashint4extended(pos, seed) LIMIT d) s), 0)
$$;
CREATE TABLE queries (qid integer PRIMARY KEY, fp bigint);
INSERT INTO queries SELECT j, hashint8extended(j, 4242) FROM generate_series(1, 40) j;
INSERT INTO queries VALUES (41, NULL);
CREATE TABLE search_docs (id integer PRIMARY KEY, fp bigint);
INSERT INTO search_docs SELECT i, hashint8extended(i, 42) FROM generate_series(1, 20000) i;
INSERT INTO search_docs
SELECT 100000 + q.qid * 100 + d, pg_temp.flip(q.fp, d, q.qid * 100 + d)
FROM queries q, generate_series(0, 12) d WHERE q.fp IS NOT NULL;
INSERT INTO search_docs SELECT 100000 + qid * 100 + 50, fp FROM queries WHERE fp IS NOT NULL;
INSERT INTO search_docs SELECT 200000 + i, hashint8extended(7, 7) FROM generate_series(1, 300) i;
INSERT INTO search_docs SELECT 300000 + i, NULL FROM generate_series(1, 50) i;

-- No layout yet: simhash_near is evaluated row by row.
EXPLAIN (COSTS OFF) SELECT id FROM search_docs WHERE simhash_near(fp, 12345, 3);
SELECT * FROM simhash_search_plan('search_docs', 'fp', 3);

SELECT * FROM simhash_create_index('search_docs', 'fp', 6);
SELECT * FROM simhash_search_plan('search_docs', 'fp', 3);
SELECT k, count(*) AS indexes, sum(probes) AS probes FROM generate_series(0, 16) k,
     LATERAL simhash_search_plan('search_docs', 'fp', k) GROUP BY k ORDER BY k;

-- index use: a constant, a parameter of a generic plan, a join, a lateral subquery
EXPLAIN (COSTS OFF) SELECT id FROM search_docs WHERE simhash_near(fp, 12345, 3);
PREPARE near(bigint) AS SELECT id FROM search_docs WHERE simhash_near(fp, $1, 4);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE near(12345);
RESET plan_cache_mode;
EXPLAIN (COSTS OFF)
SELECT a.id, b.id FROM search_docs a JOIN search_docs b ON simhash_near(b.fp, a.fp, 3)
WHERE a.id = 5 AND b.id <> a.id;
EXPLAIN (COSTS OFF)
SELECT q.qid, n.id FROM queries q CROSS JOIN LATERAL
    (SELECT id FROM search_docs d WHERE simhash_near(q.fp, d.fp, 2)) n;
-- no rewrite where it cannot help or would change the meaning: too far, volatile query,
-- k not a constant
EXPLAIN (COSTS OFF) SELECT id FROM search_docs WHERE simhash_near(fp, 12345, 16);
EXPLAIN (COSTS OFF) SELECT id FROM search_docs WHERE simhash_near(fp, (random() * 1000)::bigint, 3);
EXPLAIN (COSTS OFF) SELECT id FROM search_docs, queries q WHERE simhash_near(search_docs.fp, 12345, q.qid);

-- answers
SELECT fp AS q1 FROM queries WHERE qid = 1 \gset
EXECUTE near(:q1);
SELECT id, hamming(fp, (SELECT fp FROM queries WHERE qid = 2)) AS distance
FROM search_docs WHERE simhash_near(fp, (SELECT fp FROM queries WHERE qid = 2), 5)
ORDER BY distance, id;

-- Brute force: for every layout of 2..6 blocks and every k = 0..10, the pairs (query, row)
-- found through the indexes are exactly those with hamming <= k; the k served by index
-- lookups are listed (the others are answered by reading the table).
-- truth: every (query, row) pair within 10 bits, by brute force
CREATE FUNCTION pg_temp.brute_force() RETURNS void LANGUAGE sql AS $$
    DROP TABLE IF EXISTS truth;
    CREATE TEMP TABLE truth AS
    SELECT q.qid * 1000000::bigint + d.id AS pair, hamming(d.fp, q.fp) AS distance
    FROM queries q JOIN search_docs d ON hamming(d.fp, q.fp) <= 10;
$$;
CREATE FUNCTION pg_temp.cross_check(k integer)
RETURNS TABLE (found bigint, expected bigint, wrong bigint, by_index boolean)
LANGUAGE plpgsql AS $$
DECLARE
    got bigint[];
    want bigint[];
    plan text := '';
    line text;
BEGIN
    FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) SELECT q.qid, d.id FROM queries q JOIN search_docs d ON simhash_near(d.fp, q.fp, %s)', k) LOOP
        plan := plan || line || E'\n';
    END LOOP;
    EXECUTE format('SELECT array_agg(q.qid * 1000000::bigint + d.id) FROM queries q JOIN search_docs d ON simhash_near(d.fp, q.fp, %s)', k)
        INTO got;
    SELECT array_agg(t.pair) INTO want FROM truth t WHERE t.distance <= k;
    RETURN QUERY SELECT coalesce(cardinality(got), 0)::bigint, coalesce(cardinality(want), 0)::bigint,
        (SELECT count(*) FROM ((SELECT unnest(got) EXCEPT SELECT unnest(want))
                               UNION ALL (SELECT unnest(want) EXCEPT SELECT unnest(got))) x),
        plan ~ 'Index Scan (on|using) search_docs_fp_simhash';
END
$$;
CREATE FUNCTION pg_temp.check_layouts(blocks integer[])
RETURNS TABLE (layout text, k_by_index text, pairs bigint, all_equal boolean)
LANGUAGE plpgsql AS $$
DECLARE
    b integer;
BEGIN
    FOREACH b IN ARRAY blocks LOOP
        PERFORM simhash_create_index('search_docs', 'fp', 8, b);
        RETURN QUERY
        SELECT b || ' blocks', string_agg(k::text, ',' ORDER BY k) FILTER (WHERE c.by_index),
               sum(c.expected)::bigint, bool_and(c.wrong = 0 AND c.found = c.expected)
        FROM generate_series(0, 10) k, LATERAL pg_temp.cross_check(k) c;
    END LOOP;
END
$$;
SELECT pg_temp.brute_force();
SET enable_seqscan = off;
SELECT * FROM pg_temp.check_layouts(ARRAY[2, 3, 4, 5, 6]);

-- a layout with one block index missing still finds everything (through the others)
SELECT count(*) FROM simhash_create_index('search_docs', 'fp', 8, 4);
DROP INDEX search_docs_fp_simhash4_2;
SELECT index, block, radius FROM simhash_search_plan('search_docs', 'fp', 3);
SELECT 'missing block' AS layout, string_agg(k::text, ',' ORDER BY k) FILTER (WHERE c.by_index) AS k_by_index,
       sum(c.expected) AS pairs, bool_and(c.wrong = 0 AND c.found = c.expected) AS all_equal
FROM generate_series(0, 10) k, LATERAL pg_temp.cross_check(k) c;

-- after updates and deletes, with the layout of 3 blocks
SELECT count(*) FROM simhash_create_index('search_docs', 'fp', 8, 3);
DELETE FROM search_docs WHERE id % 100 IN (3, 7) AND id > 100000;
UPDATE search_docs SET fp = pg_temp.flip((SELECT q.fp FROM queries q WHERE q.qid = id % 40 + 1), 2 + id % 5, id)
WHERE id BETWEEN 1 AND 400;
UPDATE search_docs SET fp = NULL WHERE id BETWEEN 401 AND 420;
INSERT INTO search_docs SELECT 400000 + qid, pg_temp.flip(fp, 1, qid) FROM queries WHERE fp IS NOT NULL;
SELECT pg_temp.brute_force();
SELECT 'after changes' AS layout, string_agg(k::text, ',' ORDER BY k) FILTER (WHERE c.by_index) AS k_by_index,
       sum(c.expected) AS pairs, bool_and(c.wrong = 0 AND c.found = c.expected) AS all_equal
FROM generate_series(0, 10) k, LATERAL pg_temp.cross_check(k) c;
RESET enable_seqscan;

-- nearest neighbours: the same distances as sorting the whole table
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT array_agg(n.distance ORDER BY n.distance)
                               FROM simhash_nearest(NULL::search_docs, 'fp', q.fp, 5) n)
                            = (SELECT array_agg(hamming(d.fp, q.fp) ORDER BY hamming(d.fp, q.fp))
                               FROM (SELECT fp FROM search_docs d WHERE fp IS NOT NULL
                                     ORDER BY hamming(d.fp, q.fp) LIMIT 5) d)) AS same_distances
FROM queries q WHERE q.fp IS NOT NULL;
SELECT (n.doc).id, n.distance
FROM simhash_nearest(NULL::search_docs, 'fp', (SELECT fp FROM queries WHERE qid = 3), 4) n;
-- nothing beyond max_distance; whole table when far rows are asked for
SELECT count(*) FROM simhash_nearest(NULL::search_docs, 'fp', (SELECT fp FROM queries WHERE qid = 3), 50, max_distance => 4) n;
SELECT max(distance) > 12 AS reaches_far_rows
FROM simhash_nearest(NULL::search_docs, 'fp', (SELECT fp FROM queries WHERE qid = 3), 30) n;
SELECT count(*) FROM simhash_nearest(NULL::search_docs, 'fp', NULL, 5);
SELECT count(*) FROM simhash_nearest(NULL::search_docs, 'fp', 1, 0);
SELECT simhash_nearest(NULL::integer, 'fp', 1, 5);
SELECT simhash_nearest(NULL::search_docs, 'fp', 1, -1);
SELECT simhash_nearest(NULL::search_docs, 'id', 1, 5);

-- the skew report: the 300 copies of one fingerprint stand out in every block
SELECT block, rows, fingerprints, round(ratio) > 100 AS far_above_mean
FROM simhash_skew('search_docs', 'fp', 1);

-- More seeds: new random tables with neighbours planted at every distance 0..12, two
-- layouts each, k = 0..10, against brute force.
CREATE FUNCTION pg_temp.reseed(seed integer) RETURNS void LANGUAGE sql AS $$
    TRUNCATE queries, search_docs;
    INSERT INTO queries SELECT j, hashint8extended(j, seed * 1000 + 1) FROM generate_series(1, 30) j;
    INSERT INTO search_docs SELECT i, hashint8extended(i, seed * 1000 + 2) FROM generate_series(1, 5000) i;
    INSERT INTO search_docs
    SELECT 100000 + q.qid * 100 + d, pg_temp.flip(q.fp, d, seed * 100000 + q.qid * 100 + d)
    FROM queries q, generate_series(0, 12) d;
    INSERT INTO search_docs SELECT 300000 + i, NULL FROM generate_series(1, 20) i;
    SELECT pg_temp.brute_force();
$$;
CREATE FUNCTION pg_temp.check_seeds(seeds integer[])
RETURNS TABLE (seed integer, layout text, k_by_index text, pairs bigint, all_equal boolean)
LANGUAGE plpgsql AS $$
DECLARE
    s integer;
BEGIN
    FOREACH s IN ARRAY seeds LOOP
        PERFORM pg_temp.reseed(s);
        RETURN QUERY SELECT s, c.* FROM pg_temp.check_layouts(ARRAY[3, 4]) c;
    END LOOP;
END
$$;
SET enable_seqscan = off;
SELECT * FROM pg_temp.check_seeds(ARRAY[1, 2, 3, 4]);
RESET enable_seqscan;

DROP TABLE search_docs, queries;
SELECT count(*) AS layouts_left FROM simhash_layouts;

-- A temporary table may have a layout, but pg_dump leaves it out (the row's condition in
-- pg_extension.extcondition), and so does it a row whose table no longer exists.
CREATE TEMP TABLE search_temp (id integer, fp bigint);
CREATE TABLE search_kept (id integer, fp bigint);
SELECT count(*) AS temp_indexes FROM simhash_create_index('search_temp', 'fp', 3);
SELECT count(*) AS kept_indexes FROM simhash_create_index('search_kept', 'fp', 3);
DO $$
DECLARE
    cond text := (SELECT c[1] FROM pg_extension e, LATERAL (SELECT e.extcondition) AS x (c)
                  WHERE e.extname = 'simhash');
    n bigint;
BEGIN
    EXECUTE 'SELECT count(*) FROM simhash_layouts ' || cond INTO n;
    RAISE NOTICE 'layouts: %, dumped: %', (SELECT count(*) FROM simhash_layouts), n;
END $$;
DROP TABLE search_temp, search_kept;
SELECT count(*) AS layouts_left FROM simhash_layouts;