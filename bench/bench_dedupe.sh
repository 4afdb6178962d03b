#!/usr/bin/env bash
# What the simhash_dedupe trigger costs a bulk load: COPY of real-text-derived rows into a
# table with the block indexes, without the trigger (the fingerprint a generated column)
# and with it (policies link and skip; and reject, which fails at the first near duplicate,
# on the rows skip kept, beside a plain COPY of those rows), in the same run, on a throwaway
# cluster; for the
# layout simhash_create_index chooses by default and for one of k + 1 blocks (one index
# lookup per block and row, which is what the trigger likes best). With a similarity
# threshold: the LSH keys (simhash_lsh(body), a generated column without the trigger) and
# their GIN index instead of a fingerprint and block indexes.
#
# Also, in the same run: the bulk path, simhash_dedupe_insert() (COPY into an unlogged
# staging table, then the load: both timed), and the latency of single-row INSERTs (pgbench,
# one row a transaction, rows drawn from the same data) into the table loaded with and
# without the trigger, p50 and p99.
#
# Usage: bench/bench_dedupe.sh [--rows N] [--k K] [--rounds R] [--inserts M] [--layouts L]
#                              [--kinds K] [--no-inserts] [--preload P] [--sets]
#                              [--maintenance-work-mem M]
#   --rows N    rows per COPY (default 1000000): paragraphs of the real-text corpus and
#               edited copies of them (2..20% of words deleted), shuffled
#   --k K       the trigger's maximum distance and the layout's (default 3), or a similarity
#               threshold such as 0.8 (the trigger's key column is then simhash_lsh(body),
#               with a GIN index)
#   --rounds R  COPYs of each kind, alternating; the median is reported (default 3)
#   --inserts M single-row INSERTs timed per kind (default 2000)
#   --layouts L with a distance, the block layouts measured, comma-separated: default
#               (simhash_create_index's choice), k+1 (k + 1 blocks) (default: default,k+1);
#               with a threshold, gin (the trigger without stored sets) and gin+sets (with
#               'sets=sets'), simhash_ops (no keys column: the trigger's shorter form,
#               simhash_dedupe('body', 'similarity=T', policy), with a simhash_ops GIN
#               index on the text) (default: gin, and gin,gin+sets with --sets)
#   --kinds K   the kinds of COPY measured, separated by ';' (default: all of them: 'no
#               trigger', 'trigger, link', 'trigger, skip', 'bulk, link', 'bulk, skip', 'no
#               trigger, unique rows', 'trigger, reject, unique rows', 'bulk, reject, unique
#               rows'; the unique-rows kinds need 'trigger, skip' or 'bulk, skip' before
#               them)
#   --no-inserts  no single-row INSERT latencies
#   --sets      with a threshold: also measure every kind with the argument 'sets=sets'
#               of the trigger (each row's shingle set stored in the bytea column sets,
#               candidates verified against it instead of their texts)
#   --preload P the table holds P rows before each timed COPY (more edited copies of the
#               same paragraphs, so many loaded rows have a near duplicate there; inserted
#               untimed, before the trigger is made), as for a nightly load into a table
#               that already holds data (default 0: an empty table); with --sets they
#               hold no stored set (NULL), so they are verified against their texts
#   --maintenance-work-mem M  the server's maintenance_work_mem (default 4GB): the budget
#               of the statement memo of a long statement or a load (with a threshold,
#               each row's shingle set: about 3 kB a row of this data, so 1M rows need
#               about 3 GB; below that the memo is given up and every row is searched)
# The corpus is scripts/make_corpus.sh's, in $SIMHASH_CORPUS (default /tmp/simhash-corpus;
# made if missing). Needs the extension installed (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

rows=1000000
k=3
rounds=3
inserts=2000
layout_list=default,k+1
kind_list=
preload=0
sets=0
mwm=4GB
while [[ $# -gt 0 ]]; do
    case $1 in
        --rows) rows=$2; shift 2 ;;
        --k) k=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --inserts) inserts=$2; shift 2 ;;
        --layouts) layout_list=$2; shift 2 ;;
        --kinds) kind_list=$2; shift 2 ;;
        --no-inserts) inserts=0; shift ;;
        --preload) preload=$2; shift 2 ;;
        --sets) sets=1; shift ;;
        --maintenance-work-mem) mwm=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done

if (( sets )); then
    [[ ${k} == *.* ]] || die "--sets needs a similarity threshold (--k 0.8)"
fi

# radius: the Hamming radius the layout serves; fp_expr: the fingerprint the trigger stores.
if [[ ${k} == *.* ]]; then
    radius=0
    fp_expr="simhash_lsh(body)"
else
    radius=${k}
    fp_expr="simhash(body)"
fi

corpus=${SIMHASH_CORPUS:-/tmp/simhash-corpus}
if [[ ! -d ${corpus}/en ]]; then
    log "making the real-text corpus in ${corpus}"
    scripts/make_corpus.sh "${corpus}" >&2
fi

export PGCLUSTER_SETTINGS="shared_buffers = '2GB'
work_mem = '64MB'
maintenance_work_mem = '${mwm}'
max_wal_size = '8GB'
checkpoint_timeout = '1h'
autovacuum = off
max_parallel_workers_per_gather = 0
jit = off"
pgcluster_start
trap pgcluster_stop EXIT

psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }

log "making ${rows} rows from ${corpus}"
psql -c 'CREATE EXTENSION simhash' -c 'CREATE TABLE files (name text, body text)'
find "${corpus}" -type f -name '*.txt' | sort | perl scripts/copy_docs.pl |
    psql -c '\copy files(name, body) from stdin'
data=${PGCLUSTER_DIR}/rows.copy
psql -v rows="${rows}" -v preload="${preload}" -v data="${data}" <<'SQL'
CREATE TABLE paras AS
SELECT row_number() OVER (ORDER BY f.name, p.n) AS pid, p.body
FROM files f, regexp_split_to_table(f.body, E'\n[ \t]*\n') WITH ORDINALITY AS p(body, n)
WHERE length(p.body) >= 100;
-- Row i: paragraph i mod P, with a share of its words deleted (none for the first copy).
CREATE TABLE source AS
SELECT i AS id,
       CASE WHEN i <= (SELECT count(*) FROM paras) THEN p.body
            ELSE array_to_string(ARRAY(
                     SELECT w FROM unnest(regexp_split_to_array(p.body, '\s+')) WITH ORDINALITY u(w, j)
                     WHERE (hashint8extended(i::bigint * 10000 + j, 1) & 1023) >= 20 + i % 180
                     ORDER BY j), ' ')
       END AS body
FROM generate_series(1, :rows + :preload) i
JOIN paras p ON p.pid = 1 + (i - 1) % (SELECT count(*) FROM paras);
COPY (SELECT id, body FROM source WHERE id <= :rows ORDER BY hashint8(id)) TO :'data';
CREATE TABLE pre AS SELECT id, body FROM source WHERE id > :rows;
DELETE FROM source WHERE id > :rows;
SELECT count(*) AS rows, pg_size_pretty(sum(octet_length(body))) AS text,
       round(avg(octet_length(body))) AS avg_bytes FROM source;
DROP TABLE source, paras, files;
CHECKPOINT;

CREATE TABLE timings (layout text, kind text, round integer, seconds float8, kept bigint);
SQL

# One COPY into a fresh table of the given layout and kind; records seconds and rows kept.
copy_into() {
    local layout=$1 kind=$2 round=$3 sets_arg= fp_arg="'fp', "
    [[ ${layout} == 'gin, sets' ]] && sets_arg=", 'sets=sets'"
    local limit=${k}
    # without a keys column the threshold is spelled out (a bare '0.8' would be a column)
    [[ ${layout} == 'simhash_ops' ]] && fp_arg= && limit="similarity=${k}"
    psql -v layout="${layout}" -v kind="${kind}" -v round="${round}" -v data="${data}" -v k="${limit}" -v rows="${rows}" \
        -v radius="${radius}" -v fp_expr="${fp_expr}" -v sets_arg="${sets_arg}" -v fp_arg="${fp_arg}" <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS docs, made;
RESET client_min_messages;
SELECT CASE WHEN :'layout' LIKE 'gin%' OR :'layout' = 'simhash_ops' THEN 'bigint[]' ELSE 'bigint' END AS fp_type \gset
SELECT CASE WHEN :'kind' LIKE 'no trigger%' AND :'layout' <> 'simhash_ops'
            THEN format('fp %s GENERATED ALWAYS AS (%s) STORED', :'fp_type', :'fp_expr')
            ELSE format('fp %s', :'fp_type') END AS fp_column \gset
CREATE TABLE docs (id bigint PRIMARY KEY, body text, :fp_column, dup_of bigint, sets bytea);
SELECT CASE WHEN :'layout' LIKE 'gin%' THEN 'CREATE INDEX docs_fp ON docs USING gin (fp) WITH (fastupdate = off)'
            WHEN :'layout' = 'simhash_ops' THEN 'CREATE INDEX docs_body ON docs USING gin (body simhash_ops) WITH (fastupdate = off)'
       ELSE format('CREATE TEMP TABLE made AS SELECT count(*) FROM simhash_create_index(''docs'', ''fp'', %s, %s)', :radius,
                   CASE WHEN :'layout' = 'default' THEN 'NULL' WHEN :'layout' = 'k + 1' THEN least(16, :radius + 1)::text
                        ELSE substring(:'layout' from '[0-9]+') END) END \gexec
SELECT coalesce((SELECT format('%s (%s blocks)', :'layout', blocks) FROM simhash_layouts WHERE tbl = 'docs'::regclass),
                CASE WHEN :'layout' = 'simhash_ops' THEN 'simhash_ops index on the text, no keys column' END,
                'GIN index on simhash_lsh keys' || CASE WHEN :'sets_arg' <> '' THEN ', sets column' ELSE '' END) AS layout_name \gset
-- The rows already there (--preload), untimed, before any trigger.
SELECT CASE WHEN NOT EXISTS (SELECT FROM pre) THEN 'SELECT'
            WHEN :'kind' LIKE 'no trigger%' OR :'layout' = 'simhash_ops' THEN 'INSERT INTO docs (id, body) SELECT id, body FROM pre'
            ELSE format('INSERT INTO docs (id, body, fp) SELECT id, body, %s FROM pre', :'fp_expr') END \gexec
VACUUM ANALYZE docs;
SELECT CASE :'kind'
         WHEN 'trigger, link' THEN format('CREATE TRIGGER dedupe BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(''body'', %s%L, ''link'', ''dup_of''%s)', :'fp_arg', :'k', :'sets_arg')
         WHEN 'trigger, skip' THEN format('CREATE TRIGGER dedupe BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(''body'', %s%L, ''skip''%s)', :'fp_arg', :'k', :'sets_arg')
         WHEN 'trigger, reject, unique rows' THEN format('CREATE TRIGGER dedupe BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(''body'', %s%L, ''reject''%s)', :'fp_arg', :'k', :'sets_arg')
         ELSE 'SET client_min_messages = warning' END \gexec
SELECT CASE :'kind'
         WHEN 'bulk, link' THEN format('CREATE TRIGGER dedupe BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(''body'', %s%L, ''link'', ''dup_of''%s)', :'fp_arg', :'k', :'sets_arg')
         WHEN 'bulk, skip' THEN format('CREATE TRIGGER dedupe BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(''body'', %s%L, ''skip''%s)', :'fp_arg', :'k', :'sets_arg')
         WHEN 'bulk, reject, unique rows' THEN format('CREATE TRIGGER dedupe BEFORE INSERT ON docs FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(''body'', %s%L, ''reject''%s)', :'fp_arg', :'k', :'sets_arg')
         ELSE 'SET client_min_messages = warning' END \gexec
DROP TABLE IF EXISTS staging;
CHECKPOINT;
SELECT clock_timestamp() AS t0 \gset
SELECT CASE WHEN :'kind' LIKE 'bulk%' THEN 'CREATE UNLOGGED TABLE staging (id bigint, body text)' END \gexec
SELECT CASE WHEN :'kind' = 'bulk, reject, unique rows' THEN format('COPY staging FROM %L', :'data' || '.unique')
            WHEN :'kind' LIKE 'bulk%' THEN format('COPY staging FROM %L', :'data')
            WHEN :'kind' LIKE '%unique rows' THEN format('COPY docs (id, body) FROM %L', :'data' || '.unique')
            ELSE format('COPY docs (id, body) FROM %L', :'data') END \gexec
SELECT CASE WHEN :'kind' LIKE 'bulk%' THEN 'CREATE TEMP TABLE loaded AS SELECT simhash_dedupe_insert(''docs'', ''SELECT id, body FROM staging'')' END \gexec
SET client_min_messages = warning;
INSERT INTO timings SELECT :'layout_name', :'kind', :round, extract(epoch FROM clock_timestamp() - :'t0'::timestamptz),
                           (SELECT count(*) FROM docs WHERE id <= :rows);
-- The rows skip keeps, none a near duplicate of another: what reject loads without failing.
SELECT CASE WHEN :'kind' IN ('trigger, skip', 'bulk, skip')
            THEN format('COPY (SELECT id, body FROM docs WHERE id <= %s ORDER BY hashint8(id)) TO %L', :rows, :'data' || '.unique') END \gexec
SQL
}

all_kinds=('no trigger' 'trigger, link' 'trigger, skip' 'bulk, link' 'bulk, skip'
    'no trigger, unique rows' 'trigger, reject, unique rows' 'bulk, reject, unique rows')
kinds=()
if [[ -z ${kind_list} ]]; then
    kinds=("${all_kinds[@]}")
else
    IFS=';' read -r -a kinds <<<"${kind_list}"
    for kd in "${kinds[@]}"; do
        printf '%s\n' "${all_kinds[@]}" | grep -qxF -- "${kd}" || die "unknown kind: ${kd}"
    done
fi

layouts=()
if [[ ${k} == *.* && ${layout_list} == default,k+1 ]]; then
    layout_list=gin
    (( sets )) && layout_list=gin,gin+sets
fi
IFS=, read -r -a wanted <<<"${layout_list}"
for l in "${wanted[@]}"; do
    case ${l} in
        default) layouts+=(default) ;;
        k+1) layouts+=('k + 1') ;;
        gin) layouts+=(gin) ;;
        gin+sets) layouts+=('gin, sets') ;;
        simhash_ops) layouts+=(simhash_ops) ;;
        *) die "unknown layout: ${l} (default or k+1; with a threshold, gin or gin+sets)" ;;
    esac
    if [[ ${k} == *.* ]]; then
        [[ ${l} == gin* || ${l} == simhash_ops ]] || die "with a threshold the layouts are gin, gin+sets and simhash_ops"
    else
        [[ ${l} != gin* ]] || die "with a distance the layouts are default and k+1"
    fi
done
[[ ${#layouts[@]} -gt 0 ]] || die "--layouts names no layout"
# Single-row INSERTs (not in the COPY medians), one a transaction, of rows drawn at random
# from the data (the table holds them or near duplicates of them, so skip drops and link
# links most), into the table the last round's COPY of kinds 'no trigger', 'trigger, skip'
# and 'trigger, link' loaded: per-transaction latencies from pgbench's log.
psql -c 'CREATE TABLE latency (layout text, kind text, p50_ms float8, p99_ms float8)'
if (( inserts > 0 )); then
    psql -v data="${data}" <<'SQL'
CREATE TABLE extra (rid integer PRIMARY KEY, body text);
CREATE TEMP TABLE raw (id bigint, body text);
COPY raw FROM :'data';
INSERT INTO extra SELECT row_number() OVER (), body FROM raw;
SQL
    nextra=$(psql -At -c 'SELECT count(*) FROM extra')
    bench_dir=$(mktemp -d)
    chmod 777 "${bench_dir}"
    trap 'pgcluster_stop; rm -rf "${bench_dir}"' EXIT
    printf '%s\n' "\\set r random(1, ${nextra})" \
        "INSERT INTO docs (id, body) SELECT nextval('ids'), body FROM extra WHERE rid = :r;" >"${bench_dir}/insert.sql"
fi
measure_latency() {
    local layout=$1 kind=$2 p50 p99 layout_name
    log "latency: layout ${layout}, ${kind}: ${inserts} single-row INSERTs"
    psql -c 'DROP SEQUENCE IF EXISTS ids' -c 'CREATE SEQUENCE ids START 100000000' -c 'VACUUM ANALYZE docs'
    rm -f "${bench_dir}"/pgbench_log.*
    (cd "${bench_dir}" && "${PG_BIN}/pgbench" -n -c 1 -t "${inserts}" -f insert.sql -l >/dev/null)
    read -r p50 p99 < <(awk '{print $3}' "${bench_dir}"/pgbench_log.* | sort -n |
        awk '{v[NR] = $1} END {printf "%.3f %.3f\n", v[int(NR * 0.5 + 0.5)] / 1000, v[int(NR * 0.99 + 0.5)] / 1000}')
    layout_name=$(psql -At -c "SELECT coalesce((SELECT format('%s (%s blocks)', '${layout}', blocks) FROM simhash_layouts WHERE tbl = 'docs'::regclass), $([[ ${layout} == simhash_ops ]] && echo "'simhash_ops index on the text, no keys column'," )'GIN index on simhash_lsh keys$([[ ${layout} == 'gin, sets' ]] && echo ', sets column')')")
    psql -c "INSERT INTO latency VALUES ('${layout_name}', '${kind}', ${p50}, ${p99})"
}

for round in $(seq 1 "${rounds}"); do
    for layout in "${layouts[@]}"; do
        for kind in "${kinds[@]}"; do
            log "round ${round}: COPY, layout ${layout}, ${kind}"
            copy_into "${layout}" "${kind}" "${round}"
            if (( inserts > 0 && round == rounds )) &&
                [[ ${kind} == 'no trigger' || ${kind} == 'trigger, skip' || ${kind} == 'trigger, link' ]]; then
                measure_latency "${layout}" "${kind}"
            fi
        done
    done
done
[[ -n ${bench_dir:-} ]] && rm -rf "${bench_dir}"

psql -v k="${k}" -v rows="${rows}" -v preload="${preload}" <<'SQL'
\pset footer off
\echo
\echo '== COPY of' :rows 'rows into a table with a primary key and the search indexes,'
\echo '   median of the rounds; trigger at distance (or similarity threshold)' :k
\echo '   (into a table already holding' :preload 'rows)'
WITH m AS (
    SELECT layout, kind, percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) AS s, max(kept) AS kept
    FROM timings WHERE round > 0 GROUP BY layout, kind)
SELECT layout, kind, round(s::numeric, 1) AS seconds,
       round((CASE WHEN kind LIKE '%unique rows' THEN kept ELSE :rows END / s)::numeric) AS rows_offered_per_s,
       kept AS rows_kept,
       round((s / (SELECT b.s FROM m b WHERE b.layout = m.layout
                   AND b.kind = CASE WHEN m.kind LIKE '%unique rows' THEN 'no trigger, unique rows' ELSE 'no trigger' END))::numeric, 2) AS ratio
FROM m ORDER BY layout, kind LIKE '%unique rows', s;
\echo
\echo '== single-row INSERTs (one a transaction, pgbench) into the loaded table:'
\echo '   latency in ms, and its ratio to a plain INSERT (no trigger) into the same layout'
SELECT layout, kind, round(p50_ms::numeric, 3) AS p50_ms, round(p99_ms::numeric, 3) AS p99_ms,
       round((p50_ms / (SELECT b.p50_ms FROM latency b WHERE b.layout = l.layout AND b.kind = 'no trigger'))::numeric, 2) AS p50_ratio,
       round((p99_ms / (SELECT b.p99_ms FROM latency b WHERE b.layout = l.layout AND b.kind = 'no trigger'))::numeric, 2) AS p99_ratio
FROM latency l ORDER BY layout, p50_ms;
SQL
