#!/usr/bin/env bash
# Stress test of the simhash_dedupe trigger: 16 connections insert overlapping families of
# near-duplicate real texts at the same time, one row per transaction, for each policy,
# with a Hamming distance k and again with a similarity threshold of 0.8 (near duplicates:
# rows sharing a simhash_lsh key with simhash_jaccard >= 0.8). Afterwards a brute-force
# check must find no near-duplicate pair (reject, skip) and no near-duplicate pair with
# neither row linked (link), and no client may have seen a deadlock or any error other
# than the policy's own 23505.
#
# Usage: test/stress/dedupe_stress.sh [--clients N] [--rows-per-client R] [--k K]
#                                     [--mode rows|bulk|multirow|locked] [--batch B] [--limits "3 0.8 0.8,sets"]
#   defaults: 16 clients, 150 rows each, k = 3, mode rows, limits k, 0.8, and 0.8 with the
#   trigger's 'sets=sets' (candidates verified against stored shingle sets)
#   --compare-one  also write the same statements through one connection, one after the
#               other, and print both throughputs (rows offered a second) and their ratio
# Modes: rows, one INSERT of one row per transaction; bulk, transactions of B rows each
# (default 200) through simhash_dedupe_insert(), which takes all the lock keys of its rows
# at once, in one order, before writing any: no deadlock may occur; multirow, the same
# transactions as one INSERT ... SELECT each, the trigger taking each row's keys as it goes:
# the baseline, which deadlocks (and so fails) without any near duplicate being involved;
# locked, the same INSERT ... SELECT after LOCK TABLE docs IN SHARE ROW EXCLUSIVE MODE in
# its transaction (writers one at a time; the trigger's table filter of a long statement,
# with a distance, or its table index, with a threshold, reads the rows the writers before
# it committed).
# With reject, a bulk or multirow transaction that meets a near duplicate fails whole.
# Texts: paragraphs of /usr/share/doc/*/copyright (many licences are near copies of each
# other) and their variants (case, punctuation, a deleted word). Exits non-zero on failure.
# Needs the extension installed (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

clients=16
rows=150
k=3
mode=rows
batch=200
limits=
compare_one=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --clients) clients=$2; shift 2 ;;
        --rows-per-client) rows=$2; shift 2 ;;
        --k) k=$2; shift 2 ;;
        --mode) mode=$2; shift 2 ;;
        --batch) batch=$2; shift 2 ;;
        --limits) limits=$2; shift 2 ;;
        --compare-one) compare_one=1; shift ;;
        *) die "unknown argument: $1" ;;
    esac
done
[[ ${mode} =~ ^(rows|bulk|multirow|locked)$ ]] || die "unknown mode: ${mode}"
[[ -n ${limits} ]] || limits="${k} 0.8 0.8,sets"

pgcluster_start
work=$(mktemp -d)
trap 'pgcluster_stop; rm -rf "${work}"' EXIT

psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }

log "texts: families of near duplicates from /usr/share/doc/*/copyright"
psql -c 'CREATE EXTENSION simhash' -c 'CREATE TABLE files (name text, body text)'
find /usr/share/doc -mindepth 2 -maxdepth 2 -name copyright -type f | sort | sed -n '1,300p' |
    perl scripts/copy_docs.pl | psql -c '\copy files(name, body) from stdin'
psql -v clients="${clients}" -v rows="${rows}" <<'SQL'
-- Paragraphs, and four variants of each; the statements of each client draw from all of
-- them in their own order, so clients write near duplicates of each other's rows.
CREATE TABLE paras AS
SELECT DISTINCT ON (p) p AS body FROM files, regexp_split_to_table(body, E'\n[ \t]*\n') p
WHERE length(p) BETWEEN 200 AND 2000;
CREATE TABLE texts AS
SELECT row_number() OVER () AS tid, body FROM (
    SELECT body FROM paras
    UNION ALL SELECT upper(body) FROM paras
    UNION ALL SELECT regexp_replace(body, '[[:punct:]]', '', 'g') FROM paras
    UNION ALL SELECT regexp_replace(body, '\s+', '  ', 'g') FROM paras
    UNION ALL SELECT regexp_replace(body, '^(\S+\s+){3}\S+', '\1') FROM paras) v;
CREATE TABLE plan AS
SELECT c AS client, n, 1 + (hashint8extended(c * 100000 + n, 1) & 2147483647) % (SELECT count(*) FROM texts) AS tid
FROM generate_series(1, :clients) c, generate_series(1, :rows) n;
SQL

fail=0
# limit: the trigger's third argument; radius: the Hamming radius it searches; t: the
# similarity threshold (0: none).
for limit in ${limits}; do
sets_arg=
lim=${limit}
if [[ ${limit} == *,sets ]]; then lim=${limit%,sets}; sets_arg=", 'sets=sets'"; fi
if [[ ${lim} == *.* ]]; then radius=0; t=${lim}; else radius=${lim}; t=0; fi
for policy in reject skip link; do
    log "policy ${policy}: ${clients} clients x ${rows} rows, limit ${limit}, mode ${mode}"
    link_arg=
    [[ ${policy} == link ]] && link_arg=", 'dup_of'"
    if [[ ${t} == 0 ]]; then
        keys=fp
        index="SELECT count(*) FROM simhash_create_index('docs', 'fp', ${radius}) \\g /dev/null"
    else
        keys=lsh
        index="CREATE INDEX ON docs USING gin (lsh) WITH (fastupdate = off);"
    fi
    make_docs() {
        psql <<SQL
DROP TABLE IF EXISTS docs \; SET client_min_messages = warning;
CREATE TABLE docs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text, fp bigint, lsh bigint[], dup_of bigint, sets bytea);
${index}
CREATE TRIGGER dedupe BEFORE INSERT ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', '${keys}', '${lim}', '${policy}'${link_arg}${sets_arg});
SQL
    }
    make_docs
    for c in $(seq 1 "${clients}"); do
        if [[ ${mode} == rows ]]; then
            psql -At -c "SELECT format('INSERT INTO docs (body) VALUES (%L);', t.body)
                         FROM plan p JOIN texts t USING (tid) WHERE p.client = ${c} ORDER BY p.n" \
                >"${work}/client${c}.sql"
            continue
        fi
        for first in $(seq 1 "${batch}" "${rows}"); do
            q="SELECT t.body FROM plan p JOIN texts t USING (tid) WHERE p.client = ${c} AND p.n BETWEEN ${first} AND $((first + batch - 1)) ORDER BY p.n"
            if [[ ${mode} == bulk ]]; then
                # shellcheck disable=SC2016  # $q$ is SQL dollar quoting
                printf 'SELECT simhash_dedupe_insert(%s, $q$%s$q$);\n' "'docs'" "${q}"
            elif [[ ${mode} == locked ]]; then
                printf 'BEGIN; LOCK TABLE docs IN SHARE ROW EXCLUSIVE MODE; INSERT INTO docs (body) %s; COMMIT;\n' "${q}"
            else
                printf 'INSERT INTO docs (body) %s;\n' "${q}"
            fi
        done >"${work}/client${c}.sql"
    done
    start=${SECONDS}
    t0=${EPOCHREALTIME}
    for c in $(seq 1 "${clients}"); do
        command psql -X -q -v ON_ERROR_STOP=0 -f "${work}/client${c}.sql" \
            >/dev/null 2>"${work}/client${c}.err" &
    done
    wait
    t_many=$(awk -v a="${EPOCHREALTIME}" -v b="${t0}" 'BEGIN { print a - b }')
    errors=$(cat "${work}"/client*.err)
    rejected=$(grep -c 'is a near duplicate of an existing row' <<<"${errors}" || true)
    deadlocks=$(grep -c 'deadlock' <<<"${errors}" || true)
    other=$(grep 'ERROR' <<<"${errors}" | grep -vc 'is a near duplicate of an existing row' || true)
    read -r kept pairs unlinked < <(psql -At -F ' ' -v k="${radius}" -v t="${t}" <<'SQL'
CREATE TEMP TABLE near AS
SELECT a.id AS a, b.id AS b, a.dup_of IS NULL AND b.dup_of IS NULL AS unlinked
FROM docs a JOIN docs b ON a.id < b.id
WHERE CASE WHEN :t = 0 THEN hamming(a.fp, b.fp) <= :k
           ELSE a.lsh && b.lsh AND simhash_jaccard(a.body, b.body) >= :t END;
SELECT (SELECT count(*) FROM docs), (SELECT count(*) FROM near),
       (SELECT count(*) FROM near WHERE unlinked);
SQL
    )
    printf '%-7s %-4s %5d rows offered in %3d s: %5d kept, %5d rejected; near pairs %5d, unlinked %d; deadlocks %d, other errors %d\n' \
        "${policy}" "${limit}" $((clients * rows)) $((SECONDS - start)) "${kept}" "${rejected}" "${pairs}" "${unlinked}" "${deadlocks}" "${other}"
    if (( compare_one )); then
        # The same statements, one connection, one after the other, into a fresh table.
        make_docs
        t0=${EPOCHREALTIME}
        cat "${work}"/client*.sql | command psql -X -q -v ON_ERROR_STOP=0 >/dev/null 2>&1 || true
        t_one=$(awk -v a="${EPOCHREALTIME}" -v b="${t0}" 'BEGIN { print a - b }')
        awk -v c="${clients}" -v n="$((clients * rows))" -v many="${t_many}" -v one="${t_one}" \
            'BEGIN { printf "        throughput: %d writers %.0f rows/s, 1 writer %.0f rows/s (%.2f x)\n", c, n / many, n / one, one / many }'
    fi
    if [[ ${deadlocks} -ne 0 || ${other} -ne 0 ]]; then
        grep 'ERROR' <<<"${errors}" | grep -v 'is a near duplicate' | sort | uniq -c | head >&2
        fail=1
    fi
    case ${policy} in
        reject) [[ ${pairs} -eq 0 && ${rejected} -gt 0 ]] || fail=1 ;;
        skip) [[ ${pairs} -eq 0 && ${rejected} -eq 0 && ${kept} -lt $((clients * rows)) && ${kept} -gt 0 ]] || fail=1 ;;
        link) [[ ${unlinked} -eq 0 && ${rejected} -eq 0 && ${kept} -eq $((clients * rows)) && ${pairs} -gt 0 ]] || fail=1 ;;
    esac
done
done
if [[ ${fail} -ne 0 ]]; then
    log "FAILED"
    exit 1
fi
log "passed"
