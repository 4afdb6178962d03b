#!/usr/bin/env bash
# Threshold search through the operator %~ and a GIN index with simhash_ops, against the
# same queries answered by reading the table, in the same run, on a throwaway cluster.
#
# Usage: bench/bench_ops.sh [--rows N] [--queries Q] [--seq-queries S] [--threshold T]
#                           [--no-trgm] [--out FILE]
#   --rows N         rows of real text (default 100000): the paragraphs of the corpus
#                    (scripts/make_corpus.sh, in $SIMHASH_CORPUS or /tmp/simhash-corpus),
#                    then edited copies of them (2 to 20 % of the words deleted) up to N
#   --queries Q      texts looked up through the index (default 200): rows of the table
#   --seq-queries S  of them also answered by a sequential scan with simhash_jaccard
#                    (default 5), whose answers the index's must equal
#   --threshold T    simhash.similarity_threshold (default 0.8)
#   --no-trgm        no pg_trgm GIN index (gin_trgm_ops) on the same texts for comparison
#   --out FILE       also write the report to FILE (bench/results/bench_ops.md)
#
# Reports the build time and size of the simhash_ops index (and of pg_trgm's, when the
# contrib module is installed), then the p50/p99 time of one lookup
# (SELECT ... WHERE body %~ q, planned and executed each time, one backend, everything
# cached), the p50 of the sequential scan, their ratio, and whether the answers are equal;
# and the p50/p90/p99 of the top-10 query (WHERE body %~ q ORDER BY body <%> q LIMIT 10:
# the index finds the rows at the threshold, a Sort orders them).
# Needs the extension installed (scripts/setup.sh).
set -euo pipefail
caller_dir=${PWD}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

rows=100000
queries=200
seq_queries=5
threshold=0.8
trgm=1
out=
command_line=bench/bench_ops.sh
for arg in "$@"; do command_line+=" ${arg}"; done
while [[ $# -gt 0 ]]; do
    case $1 in
        --rows) rows=$2; shift 2 ;;
        --queries) queries=$2; shift 2 ;;
        --seq-queries) seq_queries=$2; shift 2 ;;
        --threshold) threshold=$2; shift 2 ;;
        --no-trgm) trgm=0; shift ;;
        --out) out=$2; shift 2 ;;
        -h | --help) sed -n '2,24s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done
[[ ${rows} =~ ^[0-9]+$ && ${queries} =~ ^[0-9]+$ && ${seq_queries} =~ ^[0-9]+$ ]] ||
    die "--rows, --queries and --seq-queries take whole numbers"
[[ -z ${out} || ${out} == /* ]] || out=${caller_dir}/${out}

report() {
    if [[ -n ${out} ]]; then tee -a "${out}"; else cat; fi
}
if [[ -n ${out} ]]; then
    {
        echo "# ${command_line}"
        echo
        echo "$(nproc)-core machine, $(date -u +%Y-%m-%d); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)."
        echo "Taken under load: other work shared the cores. Trust the ratios to the sequential scan"
        echo "of the same run more than the milliseconds."
        echo
        echo '```'
    } >"${out}"
fi

corpus=${SIMHASH_CORPUS:-/tmp/simhash-corpus}
if [[ ! -d ${corpus}/en ]]; then
    log "making the real-text corpus in ${corpus}"
    scripts/make_corpus.sh "${corpus}" >&2
fi

export PGCLUSTER_SETTINGS="shared_buffers = '2GB'
work_mem = '64MB'
maintenance_work_mem = '1GB'
max_parallel_workers_per_gather = 0
max_parallel_maintenance_workers = 0
jit = off
max_wal_size = '8GB'
checkpoint_timeout = '1h'
autovacuum = off"
pgcluster_start
trap pgcluster_stop EXIT

psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }

log "loading ${rows} rows"
psql -c 'CREATE EXTENSION simhash' -c 'CREATE EXTENSION pg_prewarm' \
    -c 'CREATE TABLE docs (id bigint PRIMARY KEY, body text NOT NULL)'
bench/paragraphs.pl "${corpus}" "${rows}" | psql -c '\copy docs FROM STDIN'
psql -v rows="${rows}" <<'SQL'
-- Not enough paragraphs: edited copies, row i from paragraph 1 + (i - 1) mod P.
INSERT INTO docs (id, body)
SELECT i, array_to_string(ARRAY(
           SELECT w FROM unnest(regexp_split_to_array(p.body, '\s+')) WITH ORDINALITY u(w, j)
           WHERE (hashint8extended(i * 10000 + j, 1) & 1023) >= 20 + i % 180 ORDER BY j), ' ')
FROM (SELECT count(*) AS n FROM docs) c
CROSS JOIN LATERAL generate_series(c.n + 1, :rows) i
JOIN docs p ON p.id = 1 + (i - 1) % c.n;
VACUUM ANALYZE docs;
SQL

if [[ ${trgm} -eq 1 ]] && ! psql -c 'CREATE EXTENSION pg_trgm' 2>/dev/null; then
    log "pg_trgm is not installed: no comparison with gin_trgm_ops"
    trgm=0
fi

log "building the indexes"
psql -v trgm="${trgm}" <<'SQL'
CREATE TABLE builds (index text, seconds float8, bytes bigint);
SELECT clock_timestamp() AS t0 \gset
CREATE INDEX docs_simhash ON docs USING gin (body simhash_ops);
INSERT INTO builds SELECT 'simhash_ops (GIN)', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), pg_relation_size('docs_simhash');
\if :trgm
SELECT clock_timestamp() AS t0 \gset
CREATE INDEX docs_trgm ON docs USING gin (body gin_trgm_ops);
INSERT INTO builds SELECT 'gin_trgm_ops (GIN, pg_trgm)', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), pg_relation_size('docs_trgm');
DROP INDEX docs_trgm;
\endif
ANALYZE docs;
SELECT pg_prewarm('docs'), pg_prewarm('docs_simhash') \g /dev/null
SQL

log "looking up ${queries} texts (${seq_queries} also by a sequential scan)"
psql -v queries="${queries}" -v seq_queries="${seq_queries}" -v threshold="${threshold}" <<'SQL'
SET simhash.similarity_threshold = :threshold;
-- The queries: rows spread over the table (paragraphs and edited copies).
CREATE TABLE queries AS
SELECT n, d.body AS q
FROM generate_series(1, :queries) n
JOIN docs d ON d.id = 1 + (n::bigint * 7919) % (SELECT count(*) FROM docs);
CREATE TABLE timings (n integer, how text, ms float8, found bigint[]);
CREATE FUNCTION run(how text, n integer, query text, q text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp(); found bigint[];
BEGIN
    EXECUTE query INTO found USING q;
    INSERT INTO timings VALUES (n, how, 1000 * extract(epoch FROM clock_timestamp() - t0), found);
END $$;
-- Warm-up, then each query planned and executed on its own.
\o /dev/null
SELECT run('warm-up', 0, 'SELECT array_agg(id ORDER BY id) FROM docs WHERE body %~ $1', q) FROM queries WHERE n <= 5;
SELECT run('index', n, 'SELECT array_agg(id ORDER BY id) FROM docs WHERE body %~ $1', q) FROM queries ORDER BY n;
-- The top 10 (the README's recommended query): the threshold through the index, then a Sort.
SELECT run('top10', n, 'SELECT array_agg(id) FROM (SELECT id FROM docs WHERE body %~ $1 ORDER BY body <%> $1, id LIMIT 10) t', q) FROM queries ORDER BY n;
SET enable_bitmapscan = off;
SET enable_indexscan = off;
SELECT run('seq', n, format('SELECT array_agg(id ORDER BY id) FROM docs WHERE simhash_jaccard(body, $1) >= %s', current_setting('simhash.similarity_threshold')), q)
FROM queries WHERE n <= :seq_queries ORDER BY n;
\o
RESET enable_bitmapscan;
RESET enable_indexscan;
SQL

{
    psql -v threshold="${threshold}" <<'SQL'
\pset footer off
\echo '== Table'
SELECT count(*) AS rows, round(sum(octet_length(body)) / 1e6, 1) AS text_mb,
       round(pg_table_size('docs') / 1e6, 1) AS table_mb FROM docs;
\echo '== Index build (one backend, no parallel workers)'
SELECT index, round(seconds::numeric, 1) AS seconds, round(bytes / 1e6, 1) AS mb,
       round(bytes::numeric / (SELECT count(*) FROM docs), 1) AS bytes_per_row
FROM builds ORDER BY index DESC;
\echo '== Lookups: SELECT ... WHERE body %~ q at simhash.similarity_threshold' :threshold '(ms, planning included)'
SELECT count(*) FILTER (WHERE how = 'index') AS queries,
       round(avg(cardinality(found)) FILTER (WHERE how = 'index'), 1) AS rows_found_avg,
       max(cardinality(found)) FILTER (WHERE how = 'index') AS rows_found_max,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE how = 'index')::numeric, 3) AS index_p50,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) FILTER (WHERE how = 'index')::numeric, 3) AS index_p99,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE how = 'seq')::numeric, 1) AS seq_p50,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE how = 'seq') /
              percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE how = 'index'))::numeric) AS speedup
FROM timings;
\echo '== Top 10: SELECT id FROM docs WHERE body %~ q ORDER BY body <%> q LIMIT 10 (ms, planning included)'
SELECT count(*) AS queries, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3) AS p50,
       round(percentile_cont(0.9) WITHIN GROUP (ORDER BY ms)::numeric, 3) AS p90,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 3) AS p99
FROM timings WHERE how = 'top10';
\echo '== Answers of the index against the sequential scan (rows the LSH keys missed; extra rows are impossible)'
SELECT count(*) AS compared,
       count(*) FILTER (WHERE coalesce(i.found, '{}') = coalesce(s.found, '{}')) AS equal,
       sum(coalesce(cardinality(s.found), 0)) AS rows_by_scan,
       sum((SELECT count(*) FROM unnest(s.found) x WHERE x <> ALL (coalesce(i.found, '{}')))) AS missed,
       sum((SELECT count(*) FROM unnest(i.found) x WHERE x <> ALL (coalesce(s.found, '{}')))) AS extra
FROM timings s JOIN timings i ON i.n = s.n AND i.how = 'index' WHERE s.how = 'seq';
SQL
} | report
if [[ -n ${out} ]]; then echo '```' >>"${out}"; fi
