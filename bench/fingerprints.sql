-- The benchmarks' fingerprints (bench/bench_search.sh, bench/bench_citus.sh), run by psql
-- with -v rows=N -v tbl=NAME: table :tbl (id bigint, fp bigint) of :rows rows, 90 % random
-- fingerprints, 9 % near duplicates of random rows at 1..8 bits, 1 % within 2 bits of one
-- of 10 "hot" fingerprints (a skewed set); and table queries (kind, n, fp): 10,000 each of
-- planted (the base row of a planted near duplicate), random and hot queries.
CREATE SCHEMA IF NOT EXISTS bench;
CREATE OR REPLACE FUNCTION bench.flip(fp bigint, d integer, seed bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT fp # (SELECT bit_or(1::bigint << ((hashint8extended(seed * 64 + t, 3) & 63)::integer))
                 FROM generate_series(1, d) t)
$$;
CREATE TABLE :tbl (id bigint, fp bigint);
INSERT INTO :tbl SELECT i, hashint8extended(i, 1) FROM generate_series(1, (:rows * 0.9)::bigint) i;
INSERT INTO :tbl
SELECT (:rows * 0.9)::bigint + j,
       bench.flip(hashint8extended(1 + (hashint8extended(j, 2) & 2147483647) % (:rows * 0.9)::bigint, 1),
                  1 + (j % 8)::integer, j)
FROM generate_series(1, (:rows * 0.09)::bigint) j;
INSERT INTO :tbl
SELECT (:rows * 0.99)::bigint + j, bench.flip(hashint8extended(j % 10, 5), (j % 3)::integer, j + 1000000000)
FROM generate_series(1, :rows - (:rows * 0.99)::bigint) j;
ALTER TABLE :tbl ADD PRIMARY KEY (id);

CREATE TABLE queries (kind text, n integer, fp bigint);
INSERT INTO queries
SELECT 'planted', j, hashint8extended(1 + (hashint8extended(j, 2) & 2147483647) % (:rows * 0.9)::bigint, 1)
FROM generate_series(1, 10000) j;
INSERT INTO queries SELECT 'random', j, hashint8extended(j, 77) FROM generate_series(1, 10000) j;
INSERT INTO queries SELECT 'hot', j, bench.flip(hashint8extended(j % 10, 5), 1, j + 2000000000)
FROM generate_series(1, 10000) j;
