#!/usr/bin/env bash
# Huge texts: how long the shingle functions take on one text of 64.8 million characters,
# how much memory they take (growth of the backend's peak RSS, VmHWM), and how long a call
# goes on after pg_cancel_backend (the cancel is sent at several points of the call, the
# worst is reported). Also the time of 10,000 man-page-sized texts, the normal case, which
# must not get slower.
#
# Usage: bench/bench_hugetext.sh [--chars N] [--distinct] [--docs D] [--only REGEX]
#   --chars N    characters of the huge text (default 64800000: 2,025,000 md5 hex digests,
#                about a million distinct shingles)
#   --distinct   random CJK characters instead: every shingle distinct (the worst case for
#                memory; generating it takes a minute)
#   --docs D     normal texts of about 6 kB (default 10000)
#   --only RE    run only the calls whose name matches RE
# Starts a throwaway cluster (scripts/pgcluster.sh) with work_mem = 64kB; needs the
# extension installed in the PostgreSQL of scripts/lib.sh (SIMHASH_PG_BIN, use_private_pg).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

chars=64800000
docs=10000
only=.
distinct=
while [[ $# -gt 0 ]]; do
    case $1 in
        --chars) chars=$2; shift 2 ;;
        --docs) docs=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --distinct) distinct=1; shift ;;
        -h | --help) sed -n '2,17s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done

export PGCLUSTER_SETTINGS="work_mem = '64kB'
max_parallel_workers_per_gather = 0
jit = off"
pgcluster_start
trap pgcluster_stop EXIT
psql=("${PG_BIN}/psql" -X -q -v ON_ERROR_STOP=1 -At)

"${psql[@]}" <<SQL
CREATE EXTENSION simhash;
CREATE TABLE huge AS
  SELECT left(string_agg(md5(i::text), ''), ${chars}) AS body
  FROM generate_series(1, (${chars} + 31) / 32) i
  WHERE '${distinct}' = '';
INSERT INTO huge
  SELECT string_agg(chr(19968 + (random() * 20000)::int), '') FROM generate_series(1, ${chars})
  WHERE '${distinct}' <> '';
DELETE FROM huge WHERE body IS NULL;
ALTER TABLE huge ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE TABLE docs AS
  SELECT i AS id, string_agg(md5((i * 1000 + j)::text) || ' lorem ipsum dolor ' || j, ' ') AS body
  FROM generate_series(1, ${docs}) i, generate_series(1, 120) j GROUP BY i;
VACUUM ANALYZE huge;
VACUUM ANALYZE docs;
SQL

now() { date +%s.%N; }

# name|query over huge (its result is discarded)
calls=(
    "simhash_shingles|SELECT cardinality(simhash_shingles(body)) FROM huge"
    "simhash_lsh|SELECT cardinality(simhash_lsh(body)) FROM huge"
    "simhash_jaccard|SELECT simhash_jaccard(body, body) FROM huge"
    "simhash_containment|SELECT simhash_containment(body, body) FROM huge"
    "simhash_shingle_digest|SELECT simhash_shingle_digest(body) FROM huge"
    "simhash_shingle_summary|SELECT (simhash_shingle_summary(body)).digest FROM huge"
    "simhash_features|SELECT count(*) FROM huge, simhash_features(body, 'char', 5)"
    "simhash binary|SELECT simhash(body, 'char', 5, 'binary') FROM huge"
)

printf '%-24s %9s %10s %12s\n' call seconds 'peak MB' 'cancel->end'
for entry in "${calls[@]}"; do
    name=${entry%%|*}
    query=${entry#*|}
    [[ ${name} =~ ${only} ]] || continue
    # Time and peak memory in a fresh backend.
    out=$("${psql[@]}" <<SQL
SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')::bigint AS hwm0 \gset
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
${query} \g /dev/null
SELECT round((extract(epoch FROM clock_timestamp()) - :t0)::numeric, 2) || ' ' ||
       (substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')::bigint - :hwm0) / 1024;
SQL
)
    secs=${out% *}
    mb=${out#* }
    # Cancel at 20 %, 40 %, 60 %, 80 % and 95 % of the call; the worst delay to its end.
    worst=0
    for frac in 0.2 0.4 0.6 0.8 0.95; do
        delay=$(echo "${secs} * ${frac}" | bc -l)
        PGAPPNAME=hugetext_victim "${psql[@]}" -c "${query}" >/dev/null 2>&1 &
        victim=$!
        sleep "${delay}"
        sent=
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            if [[ $("${psql[@]}" -c "SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) FROM pg_stat_activity WHERE application_name = 'hugetext_victim' AND state = 'active'") == 1 ]]; then
                sent=$(now)
                break
            fi
            sleep 0.05
        done
        wait "${victim}" || true
        ended=$(now)
        if [[ -n ${sent} ]]; then
            late=$(echo "${ended} - ${sent}" | bc -l)
            if (($(echo "${late} > ${worst}" | bc -l))); then worst=${late}; fi
        fi
    done
    printf '%-24s %9s %10s %12.3f\n' "${name}" "${secs}" "${mb}" "${worst}"
done

# The normal case: 10,000 texts of about 6 kB, every shingle function once per text.
"${psql[@]}" <<'SQL'
SELECT 'normal texts: ' || count(*) || ' texts, ' || round(avg(octet_length(body))) || ' bytes on average' FROM docs;
SQL
for q in "sum(cardinality(simhash_shingles(body)))" "count(simhash_lsh(body))" \
         "sum(simhash_jaccard(body, body))" "count(simhash(body, 'char', 5, 'binary'))"; do
    best=
    for _ in 1 2 3; do
        t=$("${psql[@]}" <<SQL
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT ${q} FROM docs \g /dev/null
SELECT round((extract(epoch FROM clock_timestamp()) - :t0)::numeric * 1000);
SQL
)
        if [[ -z ${best} || ${t} -lt ${best} ]]; then best=${t}; fi
    done
    printf '%-50s %6s ms (best of 3)\n' "${q}" "${best}"
done
