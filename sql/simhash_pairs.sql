-- simhash_pairs() and simhash_clusters(): every near-duplicate pair, and the clusters, of a
-- query's (id, fp) rows; against brute force, in memory and through temporary files.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- fp with exactly `bits` distinct bits flipped, at positions chosen by h
CREATE FUNCTION pg_temp.flip(fp bigint, h bigint, bits int) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT fp # coalesce((SELECT bit_or(1::bigint << ((abs(h % 64) + j * (2 * abs((h >> 8) % 32) + 1)) % 64)::int)
                        FROM generate_series(0, bits - 1) j), 0)
$$;

-- A chain: b is 3 bits from a, c 3 bits from b and 6 from a; d is far; e equals b.
CREATE TABLE pairs_chain (id int PRIMARY KEY, fp bigint);
INSERT INTO pairs_chain VALUES (10, 0), (20, 7), (30, 63), (40, -1), (50, 7), (60, NULL);
SELECT * FROM simhash_pairs('SELECT id, fp FROM pairs_chain', 3) ORDER BY id1, id2;
SELECT * FROM simhash_pairs('SELECT id, fp FROM pairs_chain', 2) ORDER BY id1, id2;
-- one cluster named by its smallest id, 30 included although 6 bits from 10; 40 and the
-- NULL fingerprint are alone, so not returned
SELECT * FROM simhash_clusters('SELECT id, fp FROM pairs_chain', 3) ORDER BY id;
SELECT * FROM simhash_clusters('SELECT id, fp FROM pairs_chain', 0) ORDER BY id;
-- nothing to pair
SELECT count(*) FROM simhash_pairs('SELECT id, fp FROM pairs_chain WHERE id = 10', 8);
SELECT count(*) FROM simhash_clusters('SELECT id, fp FROM pairs_chain WHERE false', 8);
SELECT count(*) FROM simhash_pairs(NULL, 3);
SELECT count(*) FROM simhash_pairs('SELECT id, fp FROM pairs_chain', NULL);

-- Random fingerprints with planted near duplicates, three seeds: every third has a
-- neighbour 0..10 bits away, every tenth an identical copy, every thirteenth a chain of
-- three steps of 1..8 bits, every fiftieth a row without fingerprint. Ids are small (seed
-- 1), large and negative (seed 2), or random 64-bit values (seed 3).
CREATE TABLE pairs_data (seed int, n bigint, id bigint, fp bigint, PRIMARY KEY (seed, n), UNIQUE (seed, id));
INSERT INTO pairs_data (seed, n, fp)
  SELECT s, i * 10, hashint8extended(i, s) FROM generate_series(1, 3) s, generate_series(1, 400) i;
INSERT INTO pairs_data (seed, n, fp)
  SELECT seed, n + 1, pg_temp.flip(fp, hashint8extended(n, seed + 10), (abs(hashint8extended(n, seed + 20)) % 11)::int)
  FROM pairs_data WHERE n % 30 = 0;
INSERT INTO pairs_data (seed, n, fp) SELECT seed, n + 2, fp FROM pairs_data WHERE n % 100 = 0;
INSERT INTO pairs_data (seed, n, fp)
  SELECT seed, n + 3, pg_temp.flip(fp, hashint8extended(n, seed + 30), (1 + (n / 10) % 8)::int) FROM pairs_data WHERE n % 130 = 0;
INSERT INTO pairs_data (seed, n, fp)
  SELECT seed, n + 1, pg_temp.flip(fp, hashint8extended(n, seed + 40), (1 + (n / 10) % 8)::int) FROM pairs_data WHERE n % 130 = 3;
INSERT INTO pairs_data (seed, n, fp)
  SELECT seed, n + 1, pg_temp.flip(fp, hashint8extended(n, seed + 50), (1 + (n / 10) % 8)::int) FROM pairs_data WHERE n % 130 = 4;
INSERT INTO pairs_data (seed, n, fp) SELECT seed, n + 9, NULL FROM pairs_data WHERE n % 500 = 0;
UPDATE pairs_data SET id = CASE seed WHEN 1 THEN n WHEN 2 THEN n * 1000003 - 2000000000 ELSE hashint8extended(n, 3) END;
SELECT seed, count(*) AS rows, count(fp) AS with_fp FROM pairs_data GROUP BY seed ORDER BY seed;

-- brute force: every pair within k, and connected components by transitive closure
CREATE TABLE pairs_expected AS
  SELECT a.seed, k, a.id AS id1, b.id AS id2, hamming(a.fp, b.fp) AS distance
  FROM pairs_data a JOIN pairs_data b ON a.seed = b.seed AND a.id < b.id, generate_series(0, 8) k
  WHERE hamming(a.fp, b.fp) <= k;
CREATE TABLE clusters_expected AS
  WITH RECURSIVE e AS (
    SELECT seed, k, id1 AS a, id2 AS b FROM pairs_expected
    UNION ALL SELECT seed, k, id2, id1 FROM pairs_expected),
  reach AS (
    SELECT DISTINCT seed, k, a AS src, a AS dst FROM e
    UNION SELECT r.seed, r.k, r.src, e.b FROM reach r JOIN e ON e.seed = r.seed AND e.k = r.k AND e.a = r.dst)
  SELECT r.seed, r.k, r.src AS id, min(r.dst) AS cluster_id FROM reach r GROUP BY r.seed, r.k, r.src;
CREATE TABLE clusters_expected_d AS
  SELECT c.seed, c.k, c.id, c.cluster_id, hamming(a.fp, b.fp) AS distance
  FROM clusters_expected c
  JOIN pairs_data a ON a.seed = c.seed AND a.id = c.id
  JOIN pairs_data b ON b.seed = c.seed AND b.id = c.cluster_id;

-- The functions against brute force, for k = 0..8, with every row in memory (4MB) and
-- through temporary files in parts (64kB, the smallest work_mem).
CREATE TABLE pairs_got (mode text, seed int, k int, id1 bigint, id2 bigint, distance int);
CREATE TABLE clusters_got (mode text, seed int, k int, id bigint, cluster_id bigint, distance int);
SET client_min_messages = warning;
DO $$
DECLARE
  mode text; s int; k int; q text;
BEGIN
  FOREACH mode IN ARRAY ARRAY['4MB', '64kB'] LOOP
    PERFORM set_config('work_mem', mode, true);
    FOR s IN 1..3 LOOP
      q := format('SELECT id, fp FROM pairs_data WHERE seed = %s', s);
      FOR k IN 0..8 LOOP
        INSERT INTO pairs_got SELECT mode, s, k, p.* FROM simhash_pairs(q, k) p;
        INSERT INTO clusters_got SELECT mode, s, k, c.* FROM simhash_clusters(q, k) c;
      END LOOP;
    END LOOP;
  END LOOP;
END $$;
RESET client_min_messages;
SELECT m.mode, s.seed, k,
       (SELECT count(*) FROM pairs_expected e WHERE e.seed = s.seed AND e.k = ks.k) AS pairs,
       (SELECT count(*) FROM (
          (SELECT id1, id2, distance FROM pairs_expected e WHERE e.seed = s.seed AND e.k = ks.k
           EXCEPT ALL SELECT id1, id2, distance FROM pairs_got g WHERE g.mode = m.mode AND g.seed = s.seed AND g.k = ks.k)
          UNION ALL
          (SELECT id1, id2, distance FROM pairs_got g WHERE g.mode = m.mode AND g.seed = s.seed AND g.k = ks.k
           EXCEPT ALL SELECT id1, id2, distance FROM pairs_expected e WHERE e.seed = s.seed AND e.k = ks.k)) x) AS wrong_pairs,
       (SELECT count(*) FROM clusters_expected_d e WHERE e.seed = s.seed AND e.k = ks.k) AS clustered,
       (SELECT count(DISTINCT cluster_id) FROM clusters_expected_d e WHERE e.seed = s.seed AND e.k = ks.k) AS clusters,
       (SELECT count(*) FROM (
          (SELECT id, cluster_id, distance FROM clusters_expected_d e WHERE e.seed = s.seed AND e.k = ks.k
           EXCEPT ALL SELECT id, cluster_id, distance FROM clusters_got g WHERE g.mode = m.mode AND g.seed = s.seed AND g.k = ks.k)
          UNION ALL
          (SELECT id, cluster_id, distance FROM clusters_got g WHERE g.mode = m.mode AND g.seed = s.seed AND g.k = ks.k
           EXCEPT ALL SELECT id, cluster_id, distance FROM clusters_expected_d e WHERE e.seed = s.seed AND e.k = ks.k)) x) AS wrong_clusters
FROM (VALUES ('4MB'), ('64kB')) m(mode), generate_series(1, 3) s(seed), generate_series(0, 8) ks(k)
ORDER BY m.mode DESC, s.seed, k;

-- chains whose two ends are farther apart than k, every step within k: one cluster anyway
SELECT g.mode, g.k, count(*) AS chains, count(*) FILTER (WHERE ca.cluster_id = cd.cluster_id) AS in_one_cluster
FROM pairs_data a
JOIN pairs_data d ON d.seed = a.seed AND d.n = a.n + 5
JOIN (SELECT DISTINCT mode, k FROM clusters_got) g ON hamming(a.fp, d.fp) > g.k AND 1 + (a.n / 10) % 8 <= g.k
LEFT JOIN clusters_got ca ON ca.mode = g.mode AND ca.k = g.k AND ca.seed = a.seed AND ca.id = a.id
LEFT JOIN clusters_got cd ON cd.mode = g.mode AND cd.k = g.k AND cd.seed = a.seed AND cd.id = d.id
WHERE a.n % 130 = 0
GROUP BY g.mode, g.k ORDER BY g.mode DESC, g.k;

-- each pair once, id1 < id2; a row's cluster is named by the smallest id in it
SELECT count(*) FILTER (WHERE id1 >= id2) AS unordered,
       count(*) - count(DISTINCT (mode, seed, k, id1, id2)) AS repeated
FROM pairs_got;
SELECT count(*) FILTER (WHERE id < cluster_id) AS named_by_a_larger_id,
       count(*) FILTER (WHERE id = cluster_id AND distance <> 0) AS representative_not_at_0
FROM clusters_got;

-- The search through temporary files says so (a NOTICE), and gives the same answer.
SET work_mem = '64kB';
SELECT count(*), sum(distance) FROM simhash_pairs('SELECT id, fp FROM pairs_data WHERE seed = 1', 6);
SELECT count(*), count(DISTINCT cluster_id) FROM simhash_clusters('SELECT id, fp FROM pairs_data', 6);
RESET work_mem;
SELECT count(*), sum(distance) FROM simhash_pairs('SELECT id, fp FROM pairs_data WHERE seed = 1', 6);
SELECT count(*), count(DISTINCT cluster_id) FROM simhash_clusters('SELECT id, fp FROM pairs_data', 6);

-- 400 identical fingerprints: C(400, 2) pairs at distance 0, one cluster; in parts, rows
-- that share all of a table's key bits are searched together whatever work_mem says
SET work_mem = '64kB';
SELECT count(*), max(distance) FROM simhash_pairs('SELECT i, 42::bigint FROM generate_series(1, 400) i', 3);
SELECT count(*), min(cluster_id), max(distance) FROM simhash_clusters('SELECT i, 42::bigint FROM generate_series(1, 400) i', 3);
RESET work_mem;

-- Ids may be bigint, integer or smallint (or domains over them); fingerprints are bigint.
CREATE DOMAIN pairs_fp_domain AS bigint;
SELECT * FROM simhash_pairs('SELECT id::smallint, fp::pairs_fp_domain FROM pairs_chain', 3) ORDER BY 1, 2;
SELECT count(*) FROM simhash_pairs('SELECT id::integer, fp FROM pairs_chain', 3);

-- Bad input: clear errors.
SELECT * FROM simhash_pairs('SELECT id FROM pairs_chain', 3);
SELECT * FROM simhash_pairs('SELECT id, fp, fp FROM pairs_chain', 3);
SELECT * FROM simhash_pairs('SELECT id::text, fp FROM pairs_chain', 3);
SELECT * FROM simhash_pairs('SELECT id::numeric, fp FROM pairs_chain', 3);
SELECT * FROM simhash_pairs('SELECT id, fp::integer FROM pairs_chain', 3);
SELECT * FROM simhash_clusters('SELECT id, fp::text FROM pairs_chain', 3);
SELECT * FROM simhash_pairs('SELECT NULL::bigint, fp FROM pairs_chain', 3);
SELECT * FROM simhash_pairs('SELECT CASE WHEN id = 30 THEN NULL ELSE id END, fp FROM pairs_chain', 3);
SELECT * FROM simhash_pairs('SELECT 7, fp FROM pairs_chain', 3);
SELECT * FROM simhash_clusters('SELECT id % 20, fp FROM pairs_chain', 3);
SET work_mem = '64kB';
SELECT * FROM simhash_pairs('SELECT i % 3000, 0::bigint FROM generate_series(1, 3001) i', 3);
RESET work_mem;
-- an id repeated where one or both rows have no fingerprint is still an id repeated, in
-- memory and through temporary files; distinct ids without a fingerprint are fine
SELECT * FROM simhash_pairs('SELECT id, CASE WHEN id = 30 THEN NULL ELSE fp END FROM pairs_chain UNION ALL SELECT 30, NULL', 3);
SELECT * FROM simhash_clusters('SELECT id, fp FROM pairs_chain UNION ALL SELECT 30, NULL', 3);
SELECT count(*) AS pairs FROM simhash_pairs('SELECT id, fp FROM pairs_chain UNION ALL SELECT 1000000 + i, NULL FROM generate_series(1, 5) i', 3);
SET work_mem = '64kB';
SELECT * FROM simhash_pairs('SELECT i, CASE WHEN i % 2 = 0 THEN 0::bigint END FROM generate_series(1, 3000) i UNION ALL SELECT 2999, NULL', 3);
SELECT count(*) AS pairs FROM simhash_pairs('SELECT i, CASE WHEN i % 2 = 0 THEN i::bigint END FROM generate_series(1, 3000) i', 0);
RESET work_mem;
SELECT * FROM simhash_pairs('SELECT id, fp FROM pairs_chain', -1);
SELECT * FROM simhash_clusters('SELECT id, fp FROM pairs_chain', 17);
SELECT * FROM simhash_pairs('SELECT id, fp FROM no_such_table', 3);
SELECT * FROM simhash_pairs('SELEKT 1', 3);
SELECT * FROM simhash_pairs('', 3);
SELECT * FROM simhash_pairs('DELETE FROM pairs_chain WHERE false', 3);
SELECT * FROM simhash_pairs('SELECT 1::bigint, 2::bigint; SELECT 3::bigint, 4::bigint', 3);

-- Keep one row per cluster, in one statement, safe to re-run: delete every row whose
-- cluster is named by another (smaller) id. A second run finds nothing left to delete.
CREATE TABLE pairs_docs AS SELECT id, fp FROM pairs_data WHERE seed = 2;
SELECT count(*) AS rows FROM pairs_docs;
DELETE FROM pairs_docs d
USING simhash_clusters('SELECT id, fp FROM pairs_docs', 6) c
WHERE d.id = c.id AND c.id <> c.cluster_id;
DELETE FROM pairs_docs d
USING simhash_clusters('SELECT id, fp FROM pairs_docs', 6) c
WHERE d.id = c.id AND c.id <> c.cluster_id;
SELECT count(*) AS rows, (SELECT count(*) FROM simhash_pairs('SELECT id, fp FROM pairs_docs', 6)) AS pairs_left
FROM pairs_docs;
-- Or mark them, keeping them: duplicate_of names the row kept.
CREATE TABLE pairs_marked AS SELECT id, fp, NULL::bigint AS duplicate_of FROM pairs_data WHERE seed = 2;
UPDATE pairs_marked d SET duplicate_of = c.cluster_id
FROM simhash_clusters('SELECT id, fp FROM pairs_marked', 6) c
WHERE d.id = c.id AND c.id <> c.cluster_id AND d.duplicate_of IS DISTINCT FROM c.cluster_id;
UPDATE pairs_marked d SET duplicate_of = c.cluster_id
FROM simhash_clusters('SELECT id, fp FROM pairs_marked', 6) c
WHERE d.id = c.id AND c.id <> c.cluster_id AND d.duplicate_of IS DISTINCT FROM c.cluster_id;
SELECT count(*) FILTER (WHERE duplicate_of IS NULL) AS kept,
       count(*) FILTER (WHERE duplicate_of IS NOT NULL) AS marked
FROM pairs_marked;
SELECT (SELECT count(*) FROM pairs_marked WHERE duplicate_of IS NULL) = (SELECT count(*) FROM pairs_docs) AS same_rows_kept;

-- By parts (the batch mode that runs on the Citus workers, src/pg/pairs_parts.c): every row
-- sent once per block to the part of (block, value), the pairs of each part kept only in
-- the part of their first shared block. Against brute force, k = 0..8, 1, 7 and 64 parts:
-- every pair once, none extra.
SELECT seed, k, parts,
       count(*) FILTER (WHERE got AND NOT expected) AS extra,
       count(*) FILTER (WHERE expected AND NOT got) AS missed,
       sum(copies) FILTER (WHERE copies > 1) AS repeated
FROM (
  SELECT seed, k, parts, id1, id2, bool_or(got) AS got, bool_or(expected) AS expected,
         count(*) FILTER (WHERE got) AS copies
  FROM (
    SELECT g.seed, g.k, g.parts, g.p[i] AS id1, g.p[i + 1] AS id2, true AS got, false AS expected
    FROM (SELECT seed, k, parts, simhash_part_pairs(id, fp, k, part, parts) AS p
          FROM (SELECT d.seed, k, parts, simhash_pair_part(d.fp, k, b, parts) AS part, d.id, d.fp
                FROM pairs_data d, generate_series(0, 8) k, unnest(ARRAY[1, 7, 64]) parts,
                     generate_series(0, greatest(1, k)) b
                WHERE d.fp IS NOT NULL) x
          GROUP BY seed, k, parts, part) g, generate_series(1, cardinality(g.p), 5) i
    UNION ALL
    SELECT e.seed, e.k, parts, e.id1, e.id2, false, true
    FROM pairs_expected e, unnest(ARRAY[1, 7, 64]) parts) y
  GROUP BY seed, k, parts, id1, id2) z
GROUP BY seed, k, parts
HAVING count(*) FILTER (WHERE got AND NOT expected) > 0 OR count(*) FILTER (WHERE expected AND NOT got) > 0
    OR sum(copies) FILTER (WHERE copies > 1) > 0
ORDER BY 1, 2, 3;
-- The forests of the parts (simhash_part_forest: only pairs that join two components) give
-- the components of all the pairs: the same clusters as simhash_clusters, k = 0..8, 1, 7
-- and 64 parts, in fewer rows.
CREATE TEMP TABLE forest_edges AS
SELECT g.seed, g.k, g.parts, g.p[i] AS id1, g.p[i + 1] AS id2, g.p[i + 3] AS fp1, g.p[i + 4] AS fp2
FROM (SELECT seed, k, parts, simhash_part_forest(id, fp, k, part, parts) AS p
      FROM (SELECT d.seed, k, parts, simhash_pair_part(d.fp, k, b, parts) AS part, d.id, d.fp
            FROM pairs_data d, generate_series(0, 8) k, unnest(ARRAY[1, 7, 64]) parts,
                 generate_series(0, greatest(1, k)) b
            WHERE d.fp IS NOT NULL) x
      GROUP BY seed, k, parts, part) g, generate_series(1, cardinality(g.p), 5) i;
CREATE FUNCTION pg_temp.forest_differs(s int, kk int, pp int) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM (
    (SELECT * FROM simhash_clusters_of_pairs(format(
       'SELECT id1, id2, fp1, fp2 FROM forest_edges WHERE seed = %s AND k = %s AND parts = %s', s, kk, pp))
     EXCEPT ALL
     SELECT * FROM simhash_clusters(format('SELECT id, fp FROM pairs_data WHERE seed = %s', s), kk))
    UNION ALL
    (SELECT * FROM simhash_clusters(format('SELECT id, fp FROM pairs_data WHERE seed = %s', s), kk)
     EXCEPT ALL
     SELECT * FROM simhash_clusters_of_pairs(format(
       'SELECT id1, id2, fp1, fp2 FROM forest_edges WHERE seed = %s AND k = %s AND parts = %s', s, kk, pp)))) d
$$;
SELECT sum(pg_temp.forest_differs(seed, k, parts)) AS cluster_rows_differing,
       (SELECT count(*) FROM forest_edges) AS forest_rows, (SELECT count(*) * 3 FROM pairs_expected) AS pair_rows
FROM (SELECT DISTINCT seed FROM pairs_data) s, generate_series(0, 8) k, unnest(ARRAY[1, 7, 64]) parts;
SELECT simhash_pair_part(-1, 3, 4, 8);
SELECT simhash_pair_part(-1, 16, 0, 8);
SELECT simhash_part_pairs(i, 0, 3, 0, 1) FROM generate_series(1, 2) i;
SELECT simhash_part_pairs(1, f, 3, 0, 1) FROM (VALUES (0), (1)) v(f);
SELECT simhash_part_pairs(i, 0, 3, 0, 0) FROM generate_series(1, 2) i;
SELECT simhash_part_pairs(i, 0, 3, 5, 4) FROM generate_series(1, 2) i;
-- not a window function: its final step is called once
SELECT simhash_part_pairs(g, 0, 3, 0, 1) OVER (ORDER BY g) FROM generate_series(1, 3) g;
-- simhash_part_forest takes its rows as simhash_part_pairs does: the same refusals
SELECT simhash_part_forest(i, 0, 3, 0, 0) FROM generate_series(1, 2) i;
SELECT simhash_part_forest(i, 0, 3, 5, 4) FROM generate_series(1, 2) i;
SELECT simhash_part_forest(g, 0, 3, 0, 1) OVER (ORDER BY g) FROM generate_series(1, 3) g;

-- The table form: on a table Citus does not distribute, the query form's answer; its
-- columns checked (test/citus/run.sh compares it on a distributed table).
CREATE TABLE pairs_table AS SELECT id, fp FROM pairs_data WHERE seed = 3;
SELECT (SELECT count(*) FROM simhash_pairs('pairs_table', 'id', 'fp', 4)) AS table_form,
       (SELECT count(*) FROM simhash_pairs('SELECT id, fp FROM pairs_table', 4)) AS query_form,
       (SELECT count(*) FROM (SELECT * FROM simhash_pairs('pairs_table', 'id', 'fp', 4)
                              EXCEPT SELECT id1, id2, distance FROM pairs_expected WHERE seed = 3 AND k = 4) x) AS extra;
SELECT count(*) AS rows, count(*) FILTER (WHERE (id, cluster_id, distance) NOT IN
         (SELECT id, cluster_id, distance FROM clusters_expected_d WHERE seed = 3 AND k = 4)) AS wrong
FROM simhash_clusters('pairs_table', 'id', 'fp', 4);
-- the clusters of pairs, as the coordinator joins them from the workers' pairs
SELECT count(*) AS rows, count(*) FILTER (WHERE (c.id, c.cluster_id, c.distance) NOT IN
         (SELECT id, cluster_id, distance FROM clusters_expected_d WHERE seed = 3 AND k = 4)) AS wrong,
       (SELECT count(*) FROM clusters_expected_d WHERE seed = 3 AND k = 4) AS expected
FROM simhash_clusters_of_pairs(
  'SELECT p.id1, p.id2, a.fp, b.fp FROM simhash_pairs(''SELECT id, fp FROM pairs_table'', 4) p
   JOIN pairs_table a ON a.id = p.id1 JOIN pairs_table b ON b.id = p.id2') c;
SELECT * FROM simhash_clusters_of_pairs('SELECT 1, 2, 3');
SELECT * FROM simhash_clusters_of_pairs('SELECT 1::bigint, NULL::bigint, 0::bigint, 0::bigint');
SELECT * FROM simhash_clusters_of_pairs('SELECT 1::bigint, 2::bigint, 0::bigint, 0::bigint UNION ALL SELECT 1, 3, 1, 0');
SELECT * FROM simhash_clusters_of_pairs('SELECT 1::bigint, 2::bigint, 0::bigint, 0::bigint WHERE false');
SELECT * FROM simhash_clusters_of_pairs('SELECT 1::bigint, 2::bigint, 0::bigint, 0 WHERE false');
SELECT * FROM simhash_pairs('pairs_table', 'nope', 'fp', 3);
CREATE TABLE pairs_text_id AS SELECT id::text AS id, fp FROM pairs_table;
SELECT * FROM simhash_pairs('pairs_text_id', 'id', 'fp', 3);
INSERT INTO pairs_table VALUES (NULL, 1);
SELECT * FROM simhash_pairs('pairs_table', 'id', 'fp', 3);
DELETE FROM pairs_table WHERE id IS NULL;
INSERT INTO pairs_table SELECT id, fp # 1 FROM pairs_table WHERE fp IS NOT NULL LIMIT 1;
SELECT * FROM simhash_pairs('pairs_table', 'id', 'fp', 3);
DROP TABLE pairs_table, pairs_text_id;

-- Long runs are cancellable: 100000 identical fingerprints make 5e9 pairs; the statement
-- timeout stops the search in memory and through temporary files, and the session goes on.
SET statement_timeout = '1s';
SELECT count(*) FROM simhash_pairs('SELECT i, 0::bigint FROM generate_series(1, 100000) i', 0);
SELECT count(*) FROM simhash_clusters('SELECT i, 0::bigint FROM generate_series(1, 100000) i', 3);
SET work_mem = '64kB';
SET client_min_messages = warning;
SELECT count(*) FROM simhash_pairs('SELECT i, 0::bigint FROM generate_series(1, 100000) i', 3);
RESET client_min_messages;
RESET work_mem;
RESET statement_timeout;
SELECT count(*) FROM simhash_pairs('SELECT id, fp FROM pairs_chain', 3);

DROP TABLE pairs_chain, pairs_data, pairs_expected, clusters_expected, clusters_expected_d,
  pairs_got, clusters_got, pairs_docs, pairs_marked;
DROP DOMAIN pairs_fp_domain;
