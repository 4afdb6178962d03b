#!/usr/bin/env bash
# Radius search speed: simhash_near() through the block indexes against the same queries
# answered by reading the table, in the same run, on a throwaway cluster.
#
# Usage: bench/bench_search.sh [--rows N] [--queries Q] [--seq-queries S] [--no-trgm]
#   --rows N         fingerprints in the table (default 1000000): 90% random, 9% planted
#                    near duplicates of random rows at 1..8 bits, 1% a skewed set within
#                    2 bits of 10 "hot" fingerprints
#   --queries Q      queries of each kind per measurement (default 200)
#   --seq-queries S  of them also answered by a sequential scan (default 5)
#   --text-queries T paragraphs looked up in the pg_trgm comparison (default 30; pg_trgm
#                    takes seconds per lookup)
#   --no-trgm        skip the comparison with pg_trgm on a real-text table
#   --layouts "L..." the layouts measured (default "3 8 3/4"): max_distance, or
#                    max_distance/blocks
#   --ks "K..."      the distances k queried (default "3 6 8")
#   --out FILE       also write the report to FILE, headed by this command line and the
#                    machine's state (bench/plot.sh reads bench/results/bench_search_*.md)
#
# Reports, for the layouts simhash_create_index chooses for max_distance 3 and for 8, and
# the layout of 4 blocks it gives a table deduplicated at distance 3 by simhash_dedupe:
# build time, index size per row, and p50/p99 latency of simhash_near(fp, q, k) for
# each k of --ks and three kinds of query (planted: q has near duplicates; random: it has
# none; hot: q sits in the skewed set), each query planned and executed on its own (the
# time includes planning), one backend, no parallel workers, everything cached
# (pg_prewarm). Then the same on a table of real-text paragraphs and their edited copies,
# with pg_trgm's % on a GIN index.
# Needs the extension installed (scripts/setup.sh).
set -euo pipefail
caller_dir=${PWD}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

rows=1000000
queries=200
seq_queries=5
text_queries=30
trgm=1
layouts="3 8 3/4"
ks="3 6 8"
out=
command_line=bench/bench_search.sh
for arg in "$@"; do
    [[ ${arg} == *' '* ]] && arg="\"${arg}\""
    command_line+=" ${arg}"
done
while [[ $# -gt 0 ]]; do
    case $1 in
        --layouts) layouts=$2; shift 2 ;;
        --ks) ks=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --rows) rows=$2; shift 2 ;;
        --queries) queries=$2; shift 2 ;;
        --seq-queries) seq_queries=$2; shift 2 ;;
        --text-queries) text_queries=$2; shift 2 ;;
        --no-trgm) trgm=0; shift ;;
        -h | --help) sed -n '2,29s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done

[[ ${ks} =~ ^[0-9]+( [0-9]+)*$ ]] || die "--ks takes distances separated by spaces, like \"3 6 8\""
ks_array="{${ks// /,}}"
[[ -z ${out} || ${out} == /* ]] || out=${caller_dir}/${out}

# report : stdout, and the --out file too when there is one.
report() {
    if [[ -n ${out} ]]; then tee -a "${out}"; else cat; fi
}
if [[ -n ${out} ]]; then
    {
        echo "# ${command_line}"
        echo
        echo "$(nproc)-core machine, $(date -u +%Y-%m-%d); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)."
        echo "Other work shares the cores: trust the speedups over the sequential scans of the same"
        echo "run more than the milliseconds."
        echo
        echo '```'
    } >"${out}"
fi

export PGCLUSTER_SETTINGS="shared_buffers = '4GB'
work_mem = '64MB'
maintenance_work_mem = '1GB'
max_parallel_workers_per_gather = 0
max_parallel_maintenance_workers = 1
jit = off
max_wal_size = '8GB'
checkpoint_timeout = '1h'
autovacuum = off"
pgcluster_start
trap pgcluster_stop EXIT

psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }

log "loading ${rows} fingerprints"
psql -v rows="${rows}" -v tbl=fps <<'SQL'
CREATE EXTENSION simhash;
CREATE EXTENSION pg_prewarm;
\i bench/fingerprints.sql
VACUUM ANALYZE fps;

CREATE TABLE timings (layout text, kind text, k integer, n integer, how text, ms float8, found bigint);
CREATE TABLE builds (layout text, blocks integer, seconds float8, bytes bigint, table_bytes bigint);

CREATE FUNCTION bench.run(query text) RETURNS TABLE (ms float8, found bigint)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp(); n bigint;
BEGIN
    EXECUTE query INTO n;
    RETURN QUERY SELECT 1000 * extract(epoch FROM clock_timestamp() - t0)::float8, n;
END $$;

CREATE FUNCTION bench.measure(layout text, nq integer, nseq integer, ks integer[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE q record; k integer;
BEGIN
    FOREACH k IN ARRAY ks LOOP
        FOR q IN SELECT * FROM queries WHERE n <= nq ORDER BY kind, n LOOP
            INSERT INTO timings SELECT layout, q.kind, k, q.n, 'index', r.ms, r.found
            FROM bench.run(format('SELECT count(*) FROM fps WHERE simhash_near(fp, %s, %s)', q.fp, k)) r;
        END LOOP;
        FOR q IN SELECT * FROM queries WHERE n <= nseq ORDER BY kind, n LOOP
            INSERT INTO timings SELECT layout, q.kind, k, q.n, 'seq', r.ms, r.found
            FROM bench.run(format('SELECT count(*) FROM fps WHERE simhash_within(fp, %s, %s)', q.fp, k)) r;
        END LOOP;
    END LOOP;
END $$;

CREATE FUNCTION bench.build(layout text, max_distance integer, blocks integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp(); b integer;
BEGIN
    PERFORM simhash_create_index('fps', 'fp', max_distance, blocks);
    SELECT l.blocks INTO b FROM simhash_layouts l WHERE l.tbl = 'fps'::regclass;
    INSERT INTO builds
    SELECT layout, b, extract(epoch FROM clock_timestamp() - t0),
           (SELECT sum(pg_relation_size(index)) FROM simhash_block_indexes('fps', 'fp')),
           pg_relation_size('fps');
    PERFORM pg_prewarm('fps');
    PERFORM pg_prewarm(index) FROM simhash_block_indexes('fps', 'fp');
END $$;
SQL

for layout in ${layouts}; do
    max_distance=${layout%/*}
    blocks=NULL
    name="max_distance ${max_distance}"
    if [[ ${layout} == */* ]]; then
        blocks=${layout#*/}
        name="${blocks} blocks (dedupe)"
    fi
    log "layout ${name}: build, then ${queries} queries per kind and k"
    psql -v name="${name}" -v md="${max_distance}" -v blocks="${blocks}" -v nq="${queries}" \
        -v nseq="${seq_queries}" -v ks="${ks_array}" <<'SQL'
\o /dev/null
SELECT bench.build(:'name', :md, :blocks);
SELECT bench.measure(:'name', :nq, :nseq, :'ks');
SQL
done

{
psql -v rows="${rows}" <<'SQL'
\pset footer off
\echo
\echo '== Block indexes (' :rows 'rows)'
SELECT layout, blocks, round(seconds::numeric, 1) AS build_s,
       pg_size_pretty(bytes) AS index_size, round(bytes::numeric / :rows, 1) AS bytes_per_row,
       pg_size_pretty(table_bytes) AS table_size
FROM builds ORDER BY layout;

\echo
\echo '== Radius queries: latency in ms (p50 / p99 through the indexes; median of the sequential scans)'
SELECT t.layout, t.k, t.kind,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE how = 'index')::numeric, 3) AS p50,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) FILTER (WHERE how = 'index')::numeric, 3) AS p99,
       round(avg(found) FILTER (WHERE how = 'index'), 1) AS rows_found,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE how = 'seq')::numeric, 1) AS seq_p50,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE how = 'seq') /
              percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE how = 'index'))::numeric) AS speedup
FROM timings t GROUP BY t.layout, t.k, t.kind ORDER BY t.layout, t.k, t.kind;

\echo
\echo 'Queries answered both ways, and how many answers differ (must be 0):'
SELECT count(*) AS compared, count(*) FILTER (WHERE i.found <> s.found) AS differing
FROM timings s JOIN timings i USING (layout, kind, k, n)
WHERE s.how = 'seq' AND i.how = 'index';
SQL
} | report

finish_report() {
    if [[ -n ${out} ]]; then
        printf '```\n\nLoad average at the end: %s.\n' "$(cut -d' ' -f1-3 /proc/loadavg)" >>"${out}"
    fi
}
[[ ${trgm} -eq 1 ]] || { finish_report; exit 0; }

corpus=${SIMHASH_CORPUS:-/tmp/simhash-corpus}
if [[ ! -d ${corpus}/en ]]; then
    log "making the real-text corpus in ${corpus}"
    scripts/make_corpus.sh "${corpus}" >&2
fi
log "pg_trgm comparison: paragraphs of ${corpus} and two edited copies of each"
find "${corpus}" -type f -name '*.txt' | sort | perl scripts/copy_docs.pl |
    psql -c 'CREATE TABLE files (name text, body text)' -c '\copy files(name, body) from stdin'
{
psql -v nq="${text_queries}" <<'SQL'
SET bench.nq = :nq;
CREATE EXTENSION pg_trgm;
-- Paragraphs of at least 200 characters; each edited twice: 3% and 10% of its words (or,
-- in text without spaces, characters) deleted, chosen by a hash of their position.
CREATE TABLE paras AS
SELECT row_number() OVER (ORDER BY f.name, p.n) AS pid, p.body
FROM files f, regexp_split_to_table(f.body, E'\n[ \t]*\n') WITH ORDINALITY AS p(body, n)
WHERE length(p.body) >= 200;
CREATE FUNCTION bench.edit(body text, rate integer, seed bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN cardinality(w) >= 30
                THEN array_to_string(ARRAY(SELECT t FROM unnest(w) WITH ORDINALITY u(t, i)
                                           WHERE (hashint8extended(seed * 100000 + i, 9) & 1023) >= rate * 1024 / 100
                                           ORDER BY i), ' ')
                ELSE array_to_string(ARRAY(SELECT t FROM unnest(regexp_split_to_array(body, '')) WITH ORDINALITY u(t, i)
                                           WHERE (hashint8extended(seed * 100000 + i, 9) & 1023) >= rate * 1024 / 100
                                           ORDER BY i), '')
           END
    FROM regexp_split_to_array(body, '\s+') w
$$;
CREATE TABLE texts (id bigint PRIMARY KEY, pid bigint, edit integer, body text, fp bigint);
INSERT INTO texts SELECT pid * 10, pid, 0, body, simhash(body) FROM paras;
INSERT INTO texts SELECT pid * 10 + 1, pid, 3, b, simhash(b) FROM paras, bench.edit(body, 3, pid) b;
INSERT INTO texts SELECT pid * 10 + 2, pid, 10, b, simhash(b) FROM paras, bench.edit(body, 10, pid * 7) b;
VACUUM ANALYZE texts;

CREATE TABLE text_builds (method text, seconds float8, bytes bigint);
DO $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM simhash_create_index('texts', 'fp', 12);
    INSERT INTO text_builds SELECT 'simhash blocks (max_distance 12)', extract(epoch FROM clock_timestamp() - t0),
        (SELECT sum(pg_relation_size(index)) FROM simhash_block_indexes('texts', 'fp'));
    t0 := clock_timestamp();
    CREATE INDEX texts_trgm ON texts USING gin (body gin_trgm_ops);
    INSERT INTO text_builds SELECT 'pg_trgm GIN', extract(epoch FROM clock_timestamp() - t0), pg_relation_size('texts_trgm');
    PERFORM pg_prewarm('texts');
    PERFORM pg_prewarm('texts_trgm');
    PERFORM pg_prewarm(index) FROM simhash_block_indexes('texts', 'fp');
END $$;
ANALYZE texts;

-- Queries: originals sampled evenly; each should find its two edited copies.
CREATE TABLE text_timings (method text, pid bigint, ms float8, found bigint, found3 boolean, found10 boolean);
CREATE FUNCTION bench.lookup(method text, query text, body text, pid bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; ids bigint[];
BEGIN
    t0 := clock_timestamp();
    EXECUTE query INTO ids USING body;
    INSERT INTO text_timings VALUES (method, pid, 1000 * extract(epoch FROM clock_timestamp() - t0),
        coalesce(cardinality(ids), 0), pid * 10 + 1 = ANY (ids), pid * 10 + 2 = ANY (ids));
END $$;
DO $$
DECLARE q record;
BEGIN
    FOR q IN SELECT p.pid, p.body FROM paras p
             WHERE p.pid % greatest(1, (SELECT count(*) FROM paras) / current_setting('bench.nq')::int) = 0
             ORDER BY p.pid LOOP
        PERFORM bench.lookup('simhash_near k=6',
            'SELECT array_agg(id) FROM texts WHERE simhash_near(fp, simhash($1), 6)', q.body, q.pid);
        PERFORM bench.lookup('simhash_near k=8',
            'SELECT array_agg(id) FROM texts WHERE simhash_near(fp, simhash($1), 8)', q.body, q.pid);
        PERFORM bench.lookup('simhash_near k=12',
            'SELECT array_agg(id) FROM texts WHERE simhash_near(fp, simhash($1), 12)', q.body, q.pid);
        PERFORM set_config('pg_trgm.similarity_threshold', '0.6', true);
        PERFORM bench.lookup('pg_trgm % (0.6)',
            'SELECT array_agg(id) FROM texts WHERE body % $1', q.body, q.pid);
        PERFORM set_config('pg_trgm.similarity_threshold', '0.8', true);
        PERFORM bench.lookup('pg_trgm % (0.8)',
            'SELECT array_agg(id) FROM texts WHERE body % $1', q.body, q.pid);
    END LOOP;
END $$;

\pset footer off
\echo
\echo '== Real text: paragraphs and their edited copies'
SELECT count(*) AS rows, count(DISTINCT pid) AS paragraphs,
       pg_size_pretty(sum(octet_length(body))) AS text, round(avg(length(body))) AS avg_chars
FROM texts;
SELECT method, round(seconds::numeric, 1) AS build_s, pg_size_pretty(bytes) AS index_size FROM text_builds;
\echo
\echo '== Looking up the near duplicates of a paragraph (ms; share of its copies with 3% and 10% of words deleted found)'
SELECT method, count(*) AS queries,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2) AS p50,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 2) AS p99,
       round(avg(found), 1) AS avg_rows,
       round(avg(found3::int), 2) AS found_3pct, round(avg(found10::int), 2) AS found_10pct
FROM text_timings GROUP BY method ORDER BY method;
SQL
} | report
finish_report
