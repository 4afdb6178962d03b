#!/usr/bin/env bash
# Radius search on a table with a hot bucket: many rows sharing one fingerprint (copies of
# one boilerplate text, or tiny texts that all fingerprint alike). Compares, in the same
# run, simhash_near() as the planner serves it with the same query answered by reading the
# table (simhash_within, never rewritten), and says which plan the planner chose.
#
# Usage: bench/bench_skew.sh [--rows N] [--hot H] [--queries Q]
#   --rows N     random fingerprints (default 1000000)
#   --hot H      copies of one hot fingerprint F added to them (default 1000000)
#   --queries Q  queries of each kind and k (default 20); the median is reported
#
# Query kinds, for k = 3 and 6, on the layout simhash_create_index chooses for
# max_distance 6:
#   random      a random fingerprint: near nothing, shares no block value with F
#   block-mate  F with 12 to 16 bits flipped outside block 0: shares block 0 with the
#               whole bucket but is near none of it (the worst case of a B-tree probe)
#   hot         F with 1 bit flipped: the whole bucket is the answer
# One backend, no parallel workers, no JIT, everything cached.
# Needs the extension installed (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

rows=1000000
hot=1000000
queries=20
while [[ $# -gt 0 ]]; do
    case $1 in
        --rows) rows=$2; shift 2 ;;
        --hot) hot=$2; shift 2 ;;
        --queries) queries=$2; shift 2 ;;
        -h | --help) sed -n '2,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done

export PGCLUSTER_SETTINGS="shared_buffers = '2GB'
work_mem = '64MB'
maintenance_work_mem = '1GB'
max_parallel_workers_per_gather = 0
jit = off
autovacuum = off"
pgcluster_start
trap pgcluster_stop EXIT

psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }

log "loading ${rows} random fingerprints and ${hot} copies of one"
psql -v rows="${rows}" -v hot="${hot}" -v nq="${queries}" <<'SQL'
CREATE EXTENSION simhash;
CREATE EXTENSION pg_prewarm;
CREATE TABLE fps (id bigint PRIMARY KEY, fp bigint);
INSERT INTO fps SELECT i, hashint8extended(i, 1) FROM generate_series(1, :rows) i;
-- F: a fingerprint whose block 0 no random row shares (checked below)
INSERT INTO fps SELECT :rows + i, 1234567890123456789 FROM generate_series(1, :hot) i;
SELECT count(*) FROM simhash_create_index('fps', 'fp', 6) \g /dev/null
VACUUM ANALYZE fps;
SELECT blocks FROM simhash_layouts WHERE tbl = 'fps'::regclass \gset
SELECT pg_prewarm('fps') \g /dev/null
SELECT pg_prewarm(index) FROM simhash_block_indexes('fps', 'fp') \g /dev/null

CREATE TABLE queries (kind text, n integer, fp bigint);
INSERT INTO queries SELECT 'random', j, hashint8extended(j, 77) FROM generate_series(1, :nq) j;
-- 12..16 bits flipped among the bits outside block 0
CREATE TABLE outside (b integer);
INSERT INTO outside SELECT b FROM generate_series(0, 63) b
WHERE simhash_block(1234567890123456789 # (1::bigint << b), :blocks, 0)
      = simhash_block(1234567890123456789, :blocks, 0);
INSERT INTO queries
SELECT 'block-mate', j,
       1234567890123456789 # (SELECT bit_or(1::bigint << b) FROM (
           SELECT b FROM outside ORDER BY hashint8extended(j * 64 + b, 9) LIMIT 12 + j % 5) s)
FROM generate_series(1, :nq) j;
INSERT INTO queries SELECT 'hot', j, 1234567890123456789 # (1::bigint << (j % 64)) FROM generate_series(1, :nq) j;

CREATE FUNCTION run(query text, OUT ms float8, OUT nrows bigint, OUT plan text)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; p json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO p;
    plan := p -> 0 -> 'Plan' -> 'Plans' -> 0 ->> 'Node Type';
    t0 := clock_timestamp();
    EXECUTE query INTO nrows;
    ms := 1000 * extract(epoch FROM clock_timestamp() - t0);
END $$;

CREATE TABLE timings (kind text, k integer, how text, ms float8, found bigint, plan text);
DO $$
DECLARE q record; k integer;
BEGIN
    FOREACH k IN ARRAY ARRAY[3, 6] LOOP
        FOR q IN SELECT * FROM queries ORDER BY kind, n LOOP
            INSERT INTO timings SELECT q.kind, k, 'planner', r.ms, r.nrows, r.plan
            FROM run(format('SELECT count(*) FROM fps WHERE simhash_near(fp, %s, %s)', q.fp, k)) r;
            INSERT INTO timings SELECT q.kind, k, 'read the table', r.ms, r.nrows, r.plan
            FROM run(format('SELECT count(*) FROM fps WHERE simhash_within(fp, %s, %s)', q.fp, k)) r;
        END LOOP;
    END LOOP;
END $$;

\pset footer off
\echo
\echo '== Hot bucket:' :hot 'copies of one fingerprint among' :rows 'random ones;' :blocks 'block indexes'
SELECT count(*) FILTER (WHERE simhash_block(fp, :blocks, 0) = simhash_block(1234567890123456789, :blocks, 0))
           AS rows_sharing_block_0_with_f
FROM fps;
\echo '== Latency in ms (median of the queries), the plan the planner chose, and the ratio'
WITH m AS (
    SELECT kind, k, how, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms,
           avg(found) AS found, string_agg(DISTINCT plan, ', ') AS plans
    FROM timings GROUP BY kind, k, how)
SELECT p.kind, p.k, round(p.found) AS rows_found, round(p.ms::numeric, 2) AS planner_ms,
       p.plans AS planner_chose, round(s.ms::numeric, 2) AS read_table_ms,
       round((s.ms / p.ms)::numeric, 1) AS speedup
FROM m p JOIN m s USING (kind, k)
WHERE p.how = 'planner' AND s.how = 'read the table'
ORDER BY p.k, p.kind;
\echo 'Queries whose two answers differ (must be 0):'
SELECT count(*) AS differing FROM (
    SELECT kind, k, sum(found) FILTER (WHERE how = 'planner') AS a,
           sum(found) FILTER (WHERE how = 'read the table') AS b
    FROM timings GROUP BY kind, k) x WHERE a <> b;
SQL
