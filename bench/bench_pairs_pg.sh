#!/usr/bin/env bash
# All near-duplicate pairs and clusters inside PostgreSQL: simhash_pairs() and
# simhash_clusters() against a SQL self-join on block keys over the same table, in the same
# run, on a throwaway cluster. Prints a markdown table of medians, pair counts and memory.
#
# Usage: bench/bench_pairs_pg.sh [--sizes N,N...] [--ks K,K...] [--rounds N] [--timeout S]
#                                [--no-self-join] [--no-spill]
#   --sizes    random fingerprints per table, each plus 10% planted near duplicates at
#              1..3 bits of a random one of them (default 1000000,10000000)
#   --ks       distances (default 3,6)
#   --rounds   runs of each simhash measurement, the median is printed (default 3)
#   --timeout  statement_timeout of the self-join, reported as "> S s" (default 120)
#   --no-self-join / --no-spill   skip the baseline / the runs at the default work_mem
#
# Conditions: one backend, no parallel workers, no JIT, shared_buffers 2GB, work_mem 1GB
# ("in memory"), and also work_mem 4MB, PostgreSQL's default ("spilled": the search goes
# through temporary files), for the first k. Each measurement runs in a fresh session
# after a count(*) of the table, and times `SELECT count(*) FROM f(...)` (reading the
# table, the search and writing the result). Memory: "arrays" is simhash's own peak (its
# DEBUG1 summary), "backend" the growth of the backend's peak RSS (VmHWM) during the call.
# Needs the extension installed (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

sizes=1000000,10000000
ks=3,6
rounds=3
timeout=120
self_join=1
spill=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --sizes) sizes=$2; shift 2 ;;
        --ks) ks=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --no-self-join) self_join=0; shift ;;
        --no-spill) spill=0; shift ;;
        -h | --help) sed -n '2,21s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done
IFS=, read -r -a size_list <<<"${sizes}"
IFS=, read -r -a k_list <<<"${ks}"

export PGCLUSTER_SETTINGS="shared_buffers = '2GB'
max_parallel_workers_per_gather = 0
jit = off"
pgcluster_start
trap pgcluster_stop EXIT
tmp=$(mktemp -d)
trap 'pgcluster_stop; rm -rf "${tmp}"' EXIT

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION simhash;
-- fp with `bits` (1..3) distinct bits flipped, at positions chosen by h
CREATE FUNCTION flip3(fp bigint, h bigint, bits int) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT fp # (1::bigint << (abs(h % 64))::int)
            # CASE WHEN bits >= 2 THEN 1::bigint << ((abs(h % 64) + s) % 64)::int ELSE 0 END
            # CASE WHEN bits >= 3 THEN 1::bigint << ((abs(h % 64) + 2 * s) % 64)::int ELSE 0 END
  FROM (SELECT 2 * abs((h >> 8) % 32) + 1 AS s) step
$$;
SQL

for n in "${size_list[@]}"; do
    log "making fps_${n}: ${n} random fingerprints + $((n / 10)) planted near duplicates"
    psql -X -q -v ON_ERROR_STOP=1 -v n="${n}" <<'SQL'
CREATE TABLE fps_:n (id bigint, fp bigint);
INSERT INTO fps_:n SELECT i, hashint8extended(i, 2026) FROM generate_series(1, :n) i;
-- a near duplicate of row src: its fingerprint (computed again, not looked up), 1..3 bits off
INSERT INTO fps_:n
  SELECT :n + j, flip3(hashint8extended(src, 2026), hashint8extended(j, 7), (1 + abs(hashint8extended(j, 8)) % 3)::int)
  FROM generate_series(1, :n / 10) j, LATERAL (SELECT 1 + abs(hashint8extended(j, 9)) % :n AS src) s;
VACUUM ANALYZE fps_:n;
SQL
done

# measure LABEL WORK_MEM TIMEOUT_S TABLE STATEMENT : one run in a fresh session; prints
# "LABEL <tab> status <tab> seconds <tab> result <tab> arrays_kB <tab> backend_kB".
measure() {
    local label=$1 wm=$2 limit=$3 table=$4 stmt=$5 out
    out=$(psql -X -q -At -v ON_ERROR_STOP=0 2>"${tmp}/stderr" <<SQL
SET work_mem = '${wm}';
SELECT count(*) FROM ${table} \gset warm_
SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')::bigint AS hwm0 \gset
SET client_min_messages = debug1;
SET statement_timeout = '${limit}s';
SELECT extract(epoch from clock_timestamp()) AS t0 \gset
SELECT count(*) AS result FROM (${stmt}) q \gset
RESET statement_timeout;
RESET client_min_messages;
SELECT round((extract(epoch from clock_timestamp()) - :t0)::numeric, 3) AS secs,
       substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')::bigint - :hwm0 AS hwm \gset
\if :{?result}
\echo ok :secs :result :hwm
\else
\echo timeout :secs - :hwm
\endif
SQL
)
    local arrays
    arrays=$(grep -o 'peak memory [0-9]* kB' "${tmp}/stderr" | grep -o '[0-9]*' || true)
    if grep -q 'ERROR' "${tmp}/stderr" && ! grep -q 'statement timeout' "${tmp}/stderr"; then
        cat "${tmp}/stderr" >&2
        die "${label}: failed"
    fi
    read -r status secs result hwm <<<"${out}"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${label}" "${status}" "${secs}" "${result}" \
        "${arrays:--}" "${hwm}" >>"${tmp}/runs.tsv"
    log "${label}: ${status} ${secs} s, ${result} rows, arrays ${arrays:--} kB, backend +${hwm} kB"
}

# The baseline: the classic pigeonhole self-join, k + 1 blocks, pairs that agree on one block
# (each pair once with DISTINCT), checked with hamming().
self_join_sql() {
    local table=$1 k=$2 m=$(($2 + 1)) b lo hi parts=()
    for ((b = 0; b < m; b++)); do
        lo=$((64 * b / m))
        hi=$((64 * (b + 1) / m))
        parts+=("SELECT id, fp, ${b} AS blk, (fp >> ${lo}) & ((1::bigint << $((hi - lo))) - 1) AS key FROM ${table}")
    done
    local union
    union=$(printf ' UNION ALL %s' "${parts[@]}")
    printf 'WITH b AS MATERIALIZED (%s) SELECT DISTINCT x.id, y.id FROM b x JOIN b y ON x.blk = y.blk AND x.key = y.key AND x.id < y.id WHERE hamming(x.fp, y.fp) <= %d' \
        "${union# UNION ALL }" "${k}"
}

: >"${tmp}/runs.tsv"
for n in "${size_list[@]}"; do
    table=fps_${n}
    for k in "${k_list[@]}"; do
        for ((r = 1; r <= rounds; r++)); do
            measure "${n}|${k}|simhash_pairs|1GB" 1GB 0 "${table}" \
                "SELECT * FROM simhash_pairs('SELECT id, fp FROM ${table}', ${k})"
            measure "${n}|${k}|simhash_clusters|1GB" 1GB 0 "${table}" \
                "SELECT * FROM simhash_clusters('SELECT id, fp FROM ${table}', ${k})"
        done
        if [[ ${spill} -eq 1 && ${k} == "${k_list[0]}" ]]; then
            for ((r = 1; r <= rounds; r++)); do
                measure "${n}|${k}|simhash_pairs|4MB" 4MB 0 "${table}" \
                    "SELECT * FROM simhash_pairs('SELECT id, fp FROM ${table}', ${k})"
                measure "${n}|${k}|simhash_clusters|4MB" 4MB 0 "${table}" \
                    "SELECT * FROM simhash_clusters('SELECT id, fp FROM ${table}', ${k})"
            done
        fi
        if [[ ${self_join} -eq 1 ]]; then
            measure "${n}|${k}|SQL self-join on ${k}+1 block keys|1GB" 1GB "${timeout}" "${table}" \
                "$(self_join_sql "${table}" "${k}")"
        fi
    done
done

# Medians per label, and the ratio of the self-join to simhash_pairs in memory.
{
    echo
    echo "One backend, no parallel workers, no JIT, shared_buffers 2GB; median of ${rounds} runs"
    echo "(self-join: one run, statement_timeout ${timeout} s). Rows: N random + N/10 planted."
    echo "arrays = simhash's own peak memory; backend = growth of the backend's peak RSS."
    echo
    echo "| fingerprints | k | method | work_mem | result rows | seconds | vs self-join | arrays MB | backend MB |"
    echo "|---|---|---|---|---|---|---|---|---|"
    awk -F'\t' '
    { split($1, p, "|"); key = $1; n[key]++; secs[key, n[key]] = $3; status[key] = $2
      result[key] = $4; arrays[key] = $5; hwm[key] = ($6 > hwm[key] ? $6 : hwm[key])
      if (!(key in seen)) { seen[key] = 1; order[++count] = key } }
    function median(key,   i, j, t, m, a) {
      m = n[key]; for (i = 1; i <= m; i++) a[i] = secs[key, i] + 0
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    END {
      for (c = 1; c <= count; c++) {
        key = order[c]; split(key, p, "|")
        if (p[3] ~ /self-join/) baseline[p[1], p[2]] = (status[key] == "ok") ? median(key) : -median(key) }
      for (c = 1; c <= count; c++) {
        key = order[c]; split(key, p, "|"); med = median(key)
        shown = (status[key] == "ok") ? sprintf("%.2f", med) : sprintf("> %.0f", med)
        rows = (status[key] == "ok") ? result[key] : "-"
        ratio = ""
        b = baseline[p[1], p[2]]
        if (p[3] !~ /self-join/ && b != "") ratio = (b > 0) ? sprintf("%.0fx", b / med) : sprintf("> %.0fx", -b / med)
        mem = (arrays[key] == "-") ? "-" : sprintf("%.0f", arrays[key] / 1024)
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f |\n", p[1], p[2], p[3], p[4], rows, shown, ratio, mem, hwm[key] / 1024 } }
    ' "${tmp}/runs.tsv"
}
