#!/usr/bin/env bash
# Citus against one node, in the same run: search latency and all pairs on a table
# distributed over a coordinator and two workers (test/citus/cluster.sh, all on this
# machine), against the same rows in a plain table on the coordinator.
#
# Usage: bench/bench_citus.sh [--rows N] [--text-rows T] [--queries Q] [--shards S] [--out FILE]
#   --rows N     fingerprints (default 1000000): 90% random, 9% planted near duplicates
#                of random rows at 1..8 bits, 1% within 2 bits of 10 "hot" fingerprints
#                (the generator of bench/bench_search.sh)
#   --text-rows T  duplicate-dense texts for the verified functions (default 200000; 0:
#                none): paragraphs of the corpus's English files (scripts/make_corpus.sh,
#                $SIMHASH_CORPUS) in families of 5, bench/dense_rows.pl
#   --queries Q  queries of each kind (planted, random, hot) per k (default 200)
#   --shards S   citus.shard_count (default 32)
#   --out FILE   also write the tables there (default bench/results/bench_citus_<S>shards.md)
#
# Both tables get simhash_create_index(tbl, 'fp', 6). Reported:
#   - search: p50/p99 of SELECT count(*) ... WHERE simhash_near(fp, <q>, k), k = 3 and 6,
#     each query planned and run on its own from the coordinator, and the ratio of the
#     distributed p50 to the single-node p50 (the figure to trust: both measured here, on
#     the same busy 2 cores);
#   - all pairs: simhash_pairs('SELECT id, fp FROM tbl', k) for k = 3 and 6, written to a
#     table, 3 times each (alternating the tables): the median seconds and the ratios of
#     the medians and of the best times, pairs, and whether the two answers are identical;
#   - where the work happens: CPU seconds of the coordinator and of the workers (from /proc)
#     during one simhash_pairs at k = 3 on the plain table, the query form on the
#     distributed table, and the table form simhash_pairs('fps', 'id', 'fp', 3), which finds
#     the pairs on the workers (and the same for simhash_clusters): the workers' share, and
#     the coordinator's CPU against the plain table's call;
#   - floors, what Citus itself costs here: p50 of a query that reaches every shard and
#     finds nothing (id < 0), and the seconds to move 1M (id, fp) rows and the k = 3
#     answer from the workers to the coordinator (CREATE TEMP TABLE AS), against the same
#     from plain tables.
# Skips (exit 0) when Citus is not installed. Needs simhash installed (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

rows=1000000
text_rows=200000
queries=200
shards=32
out=
while [[ $# -gt 0 ]]; do
    case $1 in
        --rows) rows=$2; shift 2 ;;
        --text-rows) text_rows=$2; shift 2 ;;
        --queries) queries=$2; shift 2 ;;
        --shards) shards=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done
out=${out:-bench/results/bench_citus_${shards}shards.md}
if [[ ! -f $("${PG_CONFIG}" --sharedir)/extension/citus.control ]]; then
    echo "SKIP bench_citus: Citus is not installed"
    exit 0
fi

CITUS_EXTRA_CONF="shared_buffers = '1GB'
work_mem = '64MB'
maintenance_work_mem = '512MB'
max_parallel_workers_per_gather = 0
max_wal_size = '8GB'
autovacuum = off
citus.shard_count = ${shards}"
# shellcheck source=test/citus/cluster.sh
source test/citus/cluster.sh
log "starting a coordinator and 2 workers"
cluster_start

log "loading ${rows} fingerprints into fps_local (coordinator) and fps (distributed, ${shards} shards)"
sql -v rows="${rows}" -v tbl=fps_local <<'SQL'
\i bench/fingerprints.sql
CREATE TABLE fps (id bigint PRIMARY KEY, fp bigint);
SELECT create_distributed_table('fps', 'id') \g /dev/null
INSERT INTO fps SELECT * FROM fps_local;
SELECT count(*) FROM simhash_create_index('fps_local', 'fp', 6) \g /dev/null
SELECT count(*) FROM simhash_create_index('fps', 'fp', 6) \g /dev/null
VACUUM ANALYZE fps_local;
VACUUM ANALYZE fps;

CREATE TABLE timings (tbl text, kind text, k integer, n integer, ms float8, found bigint);
CREATE TABLE pairs_timings (tbl text, k integer, seconds float8, pairs bigint);
SQL

# time_queries NAME : runs the queries of CLUSTER_DIR/q_NAME.sql in one psql, each planned
# and executed on its own, timed in psql's client (\timing, which includes the round trip
# to the coordinator for both tables), into table timings.
time_queries() {
    (echo '\timing on'; cat "${CLUSTER_DIR}/q_$1.sql") |
        sql -F '|' 2>&1 | awk -F'|' '/^Time: / { print last "|" $0; next } { last = $0 }' |
        sed -E 's/\|Time: ([0-9.]+) ms.*/|\1/' >"${CLUSTER_DIR}/t_$1.txt"
    sql -c "\\copy timings (tbl, kind, k, n, found, ms) FROM '${CLUSTER_DIR}/t_$1.txt' WITH (DELIMITER '|')"
}

log "search: ${queries} queries of each kind at k = 3 and 6, on each table"
for k in 3 6; do
    for tbl in fps_local fps; do
        sql -c "SELECT format('SELECT %L AS tbl, %L AS kind, %s AS k, %s AS n, count(*) FROM %s WHERE simhash_near(fp, %s, %s);',
                       '${tbl}', kind, ${k}, n, '${tbl}', fp, ${k})
                FROM queries WHERE n <= ${queries} ORDER BY n, kind" >"${CLUSTER_DIR}/q_${tbl}_${k}.sql"
        time_queries "${tbl}_${k}"
    done
done

log "all pairs: simhash_pairs at k = 3 and 6, on each table, 3 times (the median is reported)"
for k in 3 6; do
    for rep in 1 2 3; do
    for tbl in fps_local fps; do
        sql -v tbl="${tbl}" -v k="${k}" -v res="pairs_${tbl}_${k}" <<'SQL'
DROP TABLE IF EXISTS :res;
SELECT clock_timestamp() AS t0 \gset
CREATE TABLE :res AS SELECT id1, id2 FROM simhash_pairs(format('SELECT id, fp FROM %s', :'tbl'), :k);
INSERT INTO pairs_timings
SELECT :'tbl', :k, extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), count(*) FROM :res;
SQL
    done
    done
done

# Where the work happens: CPU seconds of each node's processes (its postmaster's children,
# live or ended: /proc utime + stime, and the postmaster's cutime + cstime) during one call
# of simhash_pairs at k = 3: the query form on the plain table (everything on the
# coordinator), the query form on the distributed table (the coordinator pulls the rows),
# and the table form on the distributed table (the pairs found on the workers).
tick=$(getconf CLK_TCK)
# node_ticks I : CPU ticks of node I's processes so far.
node_ticks() {
    local pm pid sum=0
    pm=$(head -1 "${CLUSTER_DIR}/${NODES[$1]}/postmaster.pid")
    read -r -a f < <(sed 's/^.*) //' "/proc/${pm}/stat")
    sum=$((f[11] + f[12] + f[13] + f[14]))
    for pid in $(pgrep -P "${pm}"); do
        if read -r -a f < <(sed 's/^.*) //' "/proc/${pid}/stat" 2>/dev/null); then
            sum=$((sum + f[11] + f[12]))
        fi
    done
    echo "${sum}"
}
log "where the work happens: CPU seconds per node during simhash_pairs at k = 3"
sql -c "CREATE TABLE cpu_use (call text, seconds float8, coordinator float8, worker1 float8, worker2 float8, pairs bigint)"
calls="pairs_local pairs_query_form pairs_table_form clusters_local clusters_table_form"
if [[ ${text_rows} -gt 0 ]]; then
    corpus=${SIMHASH_CORPUS:-/tmp/simhash-corpus}
    [[ -d ${corpus}/en ]] || scripts/make_corpus.sh "${corpus}" >/dev/null
    log "loading ${text_rows} duplicate-dense rows (paragraphs of ${corpus}/en and edited copies) into texts_local and texts"
    perl bench/paragraphs.pl "${corpus}/en" 1000000 >"${CLUSTER_DIR}/paragraphs.tsv"
    perl bench/dense_rows.pl "${CLUSTER_DIR}/paragraphs.tsv" "${text_rows}" 5 >"${CLUSTER_DIR}/texts.tsv"
    sql <<SQL
CREATE TABLE texts_local (id bigint PRIMARY KEY, body text);
\\copy texts_local FROM '${CLUSTER_DIR}/texts.tsv'
CREATE TABLE texts (id bigint PRIMARY KEY, body text);
SELECT create_distributed_table('texts', 'id') \\g /dev/null
\\copy texts FROM '${CLUSTER_DIR}/texts.tsv'
VACUUM ANALYZE texts_local;
VACUUM ANALYZE texts;
SQL
    calls="${calls} similar_local similar_query_form similar_table_form similar_clusters_local similar_clusters_table_form"
fi
for call in ${calls}; do
    case ${call} in
        pairs_local) src="simhash_pairs('SELECT id, fp FROM fps_local', 3)" ;;
        pairs_query_form) src="simhash_pairs('SELECT id, fp FROM fps', 3)" ;;
        pairs_table_form) src="simhash_pairs('fps', 'id', 'fp', 3)" ;;
        clusters_local) src="simhash_clusters('SELECT id, fp FROM fps_local', 3)" ;;
        clusters_table_form) src="simhash_clusters('fps', 'id', 'fp', 3)" ;;
        similar_local) src="simhash_similar_pairs('SELECT id, body FROM texts_local', 0.8)" ;;
        similar_query_form) src="simhash_similar_pairs('SELECT id, body FROM texts', 0.8)" ;;
        similar_table_form) src="simhash_similar_pairs('texts', 'id', 'body', 0.8)" ;;
        similar_clusters_local) src="simhash_similar_clusters('SELECT id, body FROM texts_local', 0.8)" ;;
        similar_clusters_table_form) src="simhash_similar_clusters('texts', 'id', 'body', 0.8)" ;;
    esac
    # (a second for the backends of earlier connections to end and be counted)
    sleep 1
    before=($(node_ticks 0) $(node_ticks 1) $(node_ticks 2))
    t0=$(date +%s.%N)
    sql -c "CREATE TABLE res_${call} AS SELECT * FROM ${src}"
    t1=$(date +%s.%N)
    sleep 1
    after=($(node_ticks 0) $(node_ticks 1) $(node_ticks 2))
    n=$(sql -c "SELECT count(*) FROM res_${call}")
    sql -c "INSERT INTO cpu_use VALUES ('${call}', ${t1} - ${t0},
            $(( after[0] - before[0] )) / ${tick}.0, $(( after[1] - before[1] )) / ${tick}.0,
            $(( after[2] - before[2] )) / ${tick}.0, ${n})"
done

sql -c "CREATE TABLE differ (name text, n bigint)"
for name in pairs clusters similar similar_clusters; do
    if [[ $(sql -c "SELECT to_regclass('res_${name}_table_form') IS NOT NULL") == t ]]; then
        sql -c "INSERT INTO differ SELECT '${name}', count(*) FROM ((TABLE res_${name}_table_form EXCEPT TABLE res_${name}_local)
                UNION ALL (TABLE res_${name}_local EXCEPT TABLE res_${name}_table_form)) x"
    fi
done

# What the table form moves: the intermediate table's rows and bytes on the workers at k = 3
# (each row once per block), and the pairs (id1, id2, distance, fp1, fp2) the coordinator
# receives, as rows; for the clusters, the spanning forests of the parts' pairs.
sql <<'SQL'
SELECT scratch, pairs_query FROM simhash_pair_parts('fps', 'id', 'fp', 3, false) \gset
CREATE TABLE shuffle_size AS
SELECT (SELECT count(*) FROM :scratch) AS rows_moved,
       citus_total_relation_size(:'scratch') AS bytes_on_workers;
CREATE TEMP TABLE answer_arrays AS :pairs_query;
ALTER TABLE shuffle_size ADD COLUMN answer_bytes bigint;
UPDATE shuffle_size SET answer_bytes = (SELECT sum(pg_column_size(a.*)) FROM answer_arrays a);
DROP TABLE :scratch;
SELECT scratch, pairs_query FROM simhash_pair_parts('fps', 'id', 'fp', 3, true) \gset
CREATE TEMP TABLE forest_arrays AS :pairs_query;
ALTER TABLE shuffle_size ADD COLUMN forest_rows bigint, ADD COLUMN forest_bytes bigint;
UPDATE shuffle_size SET forest_rows = (SELECT count(*) FROM forest_arrays),
                        forest_bytes = (SELECT sum(pg_column_size(a.*)) FROM forest_arrays a);
DROP TABLE :scratch;
SQL

# Floors: what Citus itself costs here, whatever simhash does. For search, a query that
# reaches every shard and finds nothing through the primary key (id < 0), timed as the
# searches are. For all pairs, moving rows to the coordinator: the (id, fp) rows that the
# coordinator's finder reads, and the k = 3 answer, as any design that finds the pairs on
# the workers must send it back (CREATE TEMP TABLE AS from a distributed table against
# the same from a plain one).
log "floors: ${queries} trivial queries to every shard; moving the rows and the answer"
for tbl in fps_local fps; do
    sql -c "SELECT format('SELECT %L AS tbl, %L AS kind, %s AS k, %s AS n, count(*) FROM %s WHERE id < 0;',
                   '${tbl}', 'floor', 0, n, '${tbl}')
            FROM queries WHERE n <= ${queries} AND kind = 'random' ORDER BY n" >"${CLUSTER_DIR}/q_${tbl}_0.sql"
    time_queries "${tbl}_0"
done
sql <<'SQL'
CREATE TABLE moves (what text, tbl text, seconds float8, n bigint);
CREATE TABLE answer_d AS TABLE pairs_fps_local_3;
SELECT create_distributed_table('answer_d', 'id1') \g /dev/null
CREATE TABLE answer_l AS TABLE pairs_fps_local_3;
VACUUM ANALYZE answer_d, answer_l;
SQL
for what in rows answer; do
    for tbl in local distributed; do
        case ${what}/${tbl} in
            rows/local) src='SELECT id, fp FROM fps_local' ;;
            rows/distributed) src='SELECT id, fp FROM fps' ;;
            answer/local) src='SELECT id1, id2 FROM answer_l' ;;
            answer/distributed) src='SELECT id1, id2 FROM answer_d' ;;
        esac
        sql -v what="${what}" -v tbl="${tbl}" -v src="${src}" <<'SQL'
SELECT clock_timestamp() AS t0 \gset
CREATE TEMP TABLE moved AS :src;
INSERT INTO moves SELECT :'what', :'tbl', extract(epoch FROM clock_timestamp() - :'t0'::timestamptz), count(*) FROM moved;
SQL
    done
done

report=$(sql -v rows="${rows}" -v shards="${shards}" <<'SQL'
\pset format aligned
\pset tuples_only off
\pset footer off
\echo '== Search: simhash_near(fp, q, k) from the coordinator, ms (' :rows 'rows; distributed: ' :shards 'shards on 2 workers)'
SELECT d.k, d.kind,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l.ms)::numeric, 2) AS single_p50,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY l.ms)::numeric, 2) AS single_p99,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d.ms)::numeric, 2) AS citus_p50,
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY d.ms)::numeric, 2) AS citus_p99,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY d.ms) /
              percentile_cont(0.5) WITHIN GROUP (ORDER BY l.ms))::numeric, 1) AS p50_ratio,
       count(*) FILTER (WHERE d.found <> l.found) AS answers_differ
FROM timings d JOIN timings l USING (kind, k, n)
WHERE d.tbl = 'fps' AND l.tbl = 'fps_local' AND kind <> 'floor'
GROUP BY d.k, d.kind ORDER BY d.k, d.kind;
\echo
\echo '== All pairs: CREATE TABLE AS SELECT ... FROM simhash_pairs(''SELECT id, fp FROM tbl'', k), median of 3, seconds'
WITH m AS (SELECT tbl, k, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) AS seconds,
                  min(seconds) AS best, max(pairs) AS pairs
           FROM pairs_timings GROUP BY tbl, k)
SELECT l.k, round(l.seconds::numeric, 2) AS single_s, round(d.seconds::numeric, 2) AS citus_s,
       round((d.seconds / l.seconds)::numeric, 2) AS ratio,
       round((d.best / l.best)::numeric, 2) AS ratio_of_best, l.pairs AS single_pairs, d.pairs AS citus_pairs
FROM m l JOIN m d USING (k) WHERE l.tbl = 'fps_local' AND d.tbl = 'fps' ORDER BY k;
\echo
\echo '== All pairs and clusters (k = 3; verified: 0.8), where the work happens: CPU seconds of each node during one call'
SELECT call, round(seconds::numeric, 2) AS wall_s, round(coordinator::numeric, 2) AS coordinator_cpu_s,
       round((worker1 + worker2)::numeric, 2) AS workers_cpu_s,
       round((100 * (worker1 + worker2) / nullif(coordinator + worker1 + worker2, 0))::numeric, 1) AS workers_pct,
       round((coordinator / (SELECT l.coordinator FROM cpu_use l
                             WHERE l.call = regexp_replace(c.call, '_(query|table)_form$', '_local')))::numeric, 2)
           AS coordinator_vs_local,
       pairs AS rows_out
FROM cpu_use c ORDER BY regexp_replace(call, '_(local|query_form|table_form)$', ''), call NOT LIKE '%_local', call;
SELECT name AS table_form, n AS rows_differ_from_one_node FROM differ ORDER BY name;
SELECT rows_moved AS intermediate_rows, pg_size_pretty(bytes_on_workers) AS intermediate_size,
       round(bytes_on_workers::numeric / rows_moved, 1) AS bytes_a_row,
       pg_size_pretty(answer_bytes) AS pairs_to_coordinator_as_rows,
       forest_rows AS clusters_forest_rows, pg_size_pretty(forest_bytes) AS forest_to_coordinator
FROM shuffle_size;
\echo
\echo '== Floors: what Citus costs whatever the query does'
SELECT 'search: SELECT count(*) ... WHERE id < 0 (every shard, nothing found), ms' AS floor,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l.ms)::numeric, 2) AS single_p50,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d.ms)::numeric, 2) AS citus_p50
FROM timings d JOIN timings l USING (kind, k, n)
WHERE d.tbl = 'fps' AND l.tbl = 'fps_local' AND kind = 'floor'
UNION ALL
SELECT format('move to the coordinator: %s (%s rows), s', what, max(n)),
       round((max(seconds) FILTER (WHERE tbl = 'local'))::numeric, 2),
       round((max(seconds) FILTER (WHERE tbl = 'distributed'))::numeric, 2)
FROM moves GROUP BY what;
SELECT 'k = 3: ' || (SELECT count(*) FROM (TABLE pairs_fps_3 EXCEPT TABLE pairs_fps_local_3) x) || ' + ' ||
       (SELECT count(*) FROM (TABLE pairs_fps_local_3 EXCEPT TABLE pairs_fps_3) x) ||
       ' pairs differ; k = 6: ' || (SELECT count(*) FROM (TABLE pairs_fps_6 EXCEPT TABLE pairs_fps_local_6) x) || ' + ' ||
       (SELECT count(*) FROM (TABLE pairs_fps_local_6 EXCEPT TABLE pairs_fps_6) x) || ' pairs differ' AS identical_answers;
SQL
)
printf '%s\n' "${report}"
{
    echo "# bench/bench_citus.sh --rows ${rows} --text-rows ${text_rows} --queries ${queries} --shards ${shards}"
    echo
    echo "Citus $(sql -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'"), coordinator + 2 workers and the single-node table all on this machine ($(nproc) cores), $(date -u +%Y-%m-%d)."
    echo
    echo '```'
    printf '%s\n' "${report}"
    echo '```'
} >"${out}"
log "wrote ${out}"
