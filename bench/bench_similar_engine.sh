#!/usr/bin/env bash
# simhash_similar_pairs / simhash_similar_clusters on duplicate-dense natural text, against
# the in-memory reference program (build/similar_reference: the same core engine on a file,
# no PostgreSQL) and count(md5(body)), all measured in the same run on a throwaway cluster.
# Prints a markdown table of medians with the ratios.
#
# Usage: bench/bench_similar_engine.sh [--corpus DIR] [--docs N] [--family F]
#                                      [--threshold T] [--rounds N] [--work-mem SIZE]
#                                      [--spill SIZE[,SIZE...]] [--threads LIST] [--what LIST]
#   --corpus     a corpus made by scripts/make_corpus.sh (default /tmp/simhash-corpus; made
#                there when missing)
#   --docs       rows (default 64000): families of F rows, each a real paragraph (the
#                blocks between blank lines of the corpus files, in file order, at least
#                30 characters, every language; past the corpus's paragraphs, Latin-script
#                ones with their letters shifted) and F - 1 edited copies of it, each with
#                1-7 % of its words deleted (a seeded hash decides which), so that most
#                rows have several near duplicates, as in catalogs and crawls
#   --family     F (default 5)
#   --threshold  min_similarity (default 0.8)
#   --rounds     runs of each measurement, the median is printed (default 3)
#   --work-mem   work_mem of the measured sessions (default 4GB: the engine in memory)
#   --spill      also time both functions (2 threads) with these smaller work_mem
#                settings, where the engine goes external (shingle sets in temporary files),
#                printing the engine's peak memory (its DEBUG1 summary) and the files' size
#   --threads    thread counts of the in-memory measurements (default "1,2")
#   --what       functions measured (default "pairs,clusters")
#   --save FILE  keep the rows (COPY text format), to run build/similar_reference on alone
#
# Or, with --vs-plain, the engine against an independent plain program on files:
#
#   bench/bench_similar_engine.sh --vs-plain [--corpus DIR] [--rounds N] [--threshold T]
#                                 [--collections LIST] [--dense-rows N] [--no-pg] [--keep DIR]
#   --collections  which collections (default "natural,dense"):
#                  natural: every paragraph of the corpus (bench/paragraphs.pl: man pages in
#                     five languages and every copyright file), as they are, no planted
#                     families: its near duplicates are the corpus's own (licences, repeated
#                     man page sections and headers);
#                  natural64k: every third of those paragraphs;
#                  dense: --dense-rows rows (default 1000000) of bench/dense_rows.pl, families
#                     of 5 (a paragraph and 4 copies with 1-7 % of its words deleted)
#   --no-pg        leave out simhash_similar_pairs (else timed through a throwaway cluster,
#                  one thread, work_mem 4GB, the rows loaded with \copy)
#   --keep DIR     the collections' files go there (and are reused when present)
#   --engine BIN   another build of similar_reference to time (e.g. an older one)
# Prints, a collection a row, the best of --rounds of: build/similar_reference (the engine
# alone, 1 and 2 threads, reading its file not timed), refsimilar (the yardstick of
# ../shared/reference, built into build/refsimilar; its own "total", reading included; left
# out with a message when that directory is missing) with 1 and 2 threads, and the
# extension; with each one's ratio to refsimilar at the same thread count. Runs alternate
# (engine, refsimilar, engine, ...) so that a machine's load falls on both alike; the load
# average is printed.
#
# Conditions: one backend, no JIT, shared_buffers 1GB; max_parallel_workers_per_gather 0
# (one thread) and 1 (two threads, on a 2-core machine). Each SQL measurement runs in a
# fresh session and times `SELECT count(*) FROM f(...)`: reading the rows, shingling,
# candidates, verification and the result. The reference is timed from its first row
# handed to the engine to its last pair (reading its file is not timed).
# Needs the extension installed and build/similar_reference built (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

corpus=/tmp/simhash-corpus
docs=64000
family=5
threshold=0.8
rounds=3
work_mem=4GB
spill=
threads_list="1,2"
what_list="pairs,clusters"
save=
vs_plain=0
collections=natural,dense
dense_rows=1000000
with_pg=1
keep=
engine_bin=
rounds_given=0
[[ " $* " == *" --rounds "* ]] && rounds_given=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --corpus) corpus=$2; shift 2 ;;
        --docs) docs=$2; shift 2 ;;
        --family) family=$2; shift 2 ;;
        --threshold) threshold=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --work-mem) work_mem=$2; shift 2 ;;
        --spill) spill=$2; shift 2 ;;
        --threads) threads_list=$2; shift 2 ;;
        --what) what_list=$2; shift 2 ;;
        --save) save=$2; shift 2 ;;
        --vs-plain) vs_plain=1; shift ;;
        --collections) collections=$2; shift 2 ;;
        --dense-rows) dense_rows=$2; shift 2 ;;
        --no-pg) with_pg=0; shift ;;
        --keep) keep=$2; shift 2 ;;
        --engine) engine_bin=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done
[[ ${docs} =~ ^[1-9][0-9]*$ ]] || die "--docs needs a positive number"
[[ ${family} =~ ^[1-9][0-9]*$ ]] || die "--family needs a positive number"
reference=${engine_bin:-build/similar_reference}
[[ -x ${reference} ]] || die "${reference} is missing: cmake --build build --target similar_reference"
if [[ ! -d ${corpus} ]]; then
    log "making the corpus in ${corpus}"
    scripts/make_corpus.sh "${corpus}" >&2
fi
use_private_pg

if [[ ${vs_plain} == 1 ]]; then
    [[ ${rounds_given} == 1 ]] || rounds=3
    plain=
    if [[ -f ../shared/reference/refsimilar.cpp ]]; then
        plain=build/refsimilar
        if [[ ! -x ${plain} || ../shared/reference/refsimilar.cpp -nt ${plain} ]]; then
            log "building ${plain} from ../shared/reference/refsimilar.cpp"
            g++ -O2 -march=native -std=c++17 -pthread -o "${plain}" ../shared/reference/refsimilar.cpp ||
                { log "refsimilar did not build: left out"; plain=; }
        fi
    else
        log "../shared/reference/refsimilar.cpp is missing: the plain program is left out"
    fi
    dir=${keep:-$(mktemp -d)}
    mkdir -p "${dir}"
    [[ -n ${keep} ]] || trap 'rm -rf "${dir}"' EXIT
    # collection_file NAME : the file of a collection, made when missing.
    collection_file() {
        local f=${dir}/$1.tsv
        if [[ ! -s ${f} ]]; then
            case $1 in
                natural) bench/paragraphs.pl "${corpus}" 100000000 >"${f}" ;;
                natural64k) collection_file natural >/dev/null
                    awk 'NR % 3 == 1' "${dir}/natural.tsv" >"${f}" ;;
                dense) collection_file natural >/dev/null
                    bench/dense_rows.pl "${dir}/natural.tsv" "${dense_rows}" 5 >"${f}" ;;
                *) die "unknown collection: $1" ;;
            esac
        fi
        printf '%s\n' "${f}"
    }
    # best SECONDS... : the smallest.
    best() { printf '%s\n' "$@" | sort -g | head -n 1; }
    ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }' || printf '—'; }
    if [[ ${with_pg} == 1 ]]; then
        use_private_pg
        export PGCLUSTER_SETTINGS="shared_buffers = '1GB'
jit = off"
        pgcluster_start
        trap 'pgcluster_stop; [[ -n ${keep} ]] || rm -rf "${dir}"' EXIT
        psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash'
    fi
    printf '\nmin_similarity %s, best of %s runs; load average at the start: %s\n\n' "${threshold}" "${rounds}" \
        "$(cut -d ' ' -f 1-3 /proc/loadavg)"
    printf '| collection | rows | MB | pairs (engine / refsimilar) | engine, 1 thread | refsimilar, 1 | ratio | engine, 2 threads | refsimilar, 2 | ratio | simhash_similar_pairs, 1 | ratio |\n'
    printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
    for c in ${collections//,/ }; do
        f=$(collection_file "${c}")
        declare -A e=() p=()
        epairs= ppairs= rows= mb= sql_s=
        for ((r = 0; r < rounds; r++)); do
            for t in 1 2; do
                line=$("${reference}" "${f}" "${threshold}" --threads "${t}")
                e[$t]+=" $(sed -n 's/.*, \([0-9.]*\) s (median.*/\1/p' <<<"${line}")"
                epairs=$(sed -n 's/.*pairs \([0-9]*\),.*/\1/p' <<<"${line}")
                rows=$(sed -n 's/^rows \([0-9]*\),.*/\1/p' <<<"${line}")
                mb=$(sed -n 's/^rows [0-9]*, \([0-9.]*\) MB.*/\1/p' <<<"${line}")
                if [[ -n ${plain} ]]; then
                    line=$("${plain}" -q -j "${t}" "${threshold}" <"${f}" 2>&1 >/dev/null | tr '\n' ' ')
                    p[$t]+=" $(sed -n 's/.*| total \([0-9.]*\) s.*/\1/p' <<<"${line}")"
                    ppairs=$(sed -n 's/.*| pairs=\([0-9]*\).*/\1/p' <<<"${line}")
                fi
            done
        done
        if [[ ${with_pg} == 1 ]]; then
            psql -X -q -v ON_ERROR_STOP=1 -c 'SET client_min_messages = warning' -c 'DROP TABLE IF EXISTS docs' \
                -c 'CREATE TABLE docs (id bigint PRIMARY KEY, body text NOT NULL)' \
                -c "\\copy docs FROM '${f}'" -c 'VACUUM ANALYZE docs'
            times=()
            for ((r = 0; r < rounds; r++)); do
                out=$(psql -X -At -v ON_ERROR_STOP=1 -c "SET work_mem = '4GB'" \
                    -c 'SET max_parallel_workers_per_gather = 0' -c '\timing on' \
                    -c "SELECT count(*) FROM simhash_similar_pairs('SELECT id, body FROM docs', ${threshold})" 2>/dev/null)
                times+=("$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"${out}" | awk '{ printf "%.3f", $1 / 1000 }')")
                n=$(grep -v '^Time:\|^SET$' <<<"${out}" | tail -n 1)
                [[ ${n} == "${epairs}" ]] || log "WARNING: simhash_similar_pairs returned ${n} pairs, the engine alone ${epairs}"
            done
            sql_s=$(best "${times[@]}")
        fi
        e1=$(best ${e[1]}) e2=$(best ${e[2]}) p1= p2=
        [[ -n ${plain} ]] && p1=$(best ${p[1]}) && p2=$(best ${p[2]})
        printf '| %s | %s | %s | %s / %s | %s s | %s | %s | %s s | %s | %s | %s | %s |\n' "${c}" "${rows}" "${mb}" \
            "${epairs}" "${ppairs:-—}" "${e1}" "${p1:+${p1} s}" "$(ratio "${e1}" "${p1}")" \
            "${e2}" "${p2:+${p2} s}" "$(ratio "${e2}" "${p2}")" "${sql_s:+${sql_s} s}" "$(ratio "${sql_s}" "${p1}")"
        unset e p
    done
    printf '\nload average at the end: %s\n' "$(cut -d ' ' -f 1-3 /proc/loadavg)"
    exit 0
fi
use_private_pg

export PGCLUSTER_SETTINGS="shared_buffers = '1GB'
jit = off"
pgcluster_start
tmp=$(mktemp -d)
trap 'pgcluster_stop; rm -rf "${tmp}"' EXIT

base=$(((docs + family - 1) / family))
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash' \
    -c 'CREATE TABLE base (id bigint PRIMARY KEY, body text NOT NULL)'
bench/paragraphs.pl "${corpus}" "${base}" |
    psql -X -q -v ON_ERROR_STOP=1 -c '\copy base FROM STDIN'
got=$(psql -X -At -c 'SELECT count(*) FROM base')
if [[ ${got} -lt ${base} ]]; then
    # Too few paragraphs for distinct families: the missing originals are Latin-script
    # paragraphs with their letters shifted (a Caesar shift of 1..25, the k-th extra: the
    # k mod n-th such paragraph, shift 1 + k / n): the same lengths, words and repeats,
    # and no shingle in common with their source or each other, so the density stays that
    # of --family. (Joining two paragraphs instead made texts half alike by the hundred
    # thousand, whose candidates swamped the run.)
    log "the corpus has ${got} paragraphs, fewer than ${base}: the others are Latin-script ones with their letters shifted"
    psql -X -q -v ON_ERROR_STOP=1 -v base="${base}" -v got="${got}" <<'SQL'
CREATE TEMP TABLE latin AS
SELECT row_number() OVER (ORDER BY id) AS rn, body FROM base
WHERE length(regexp_replace(body, '[^A-Za-z]', '', 'g')) > length(body) / 2;
INSERT INTO base (id, body)
SELECT :got + k,
       translate(a.body, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ',
                 substr('abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz', s + 1, 26) ||
                 substr('ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ', s + 1, 26))
FROM (SELECT count(*) AS n FROM latin) c
CROSS JOIN LATERAL generate_series(1, :base - :got) k
CROSS JOIN LATERAL (SELECT (1 + ((k - 1) / c.n) % 25)::integer AS s) sh
JOIN latin a ON a.rn = 1 + (k - 1) % c.n;
SQL
fi
psql -X -q -v ON_ERROR_STOP=1 -v docs="${docs}" -v family="${family}" <<'SQL'
CREATE TABLE docs (id bigint PRIMARY KEY, body text NOT NULL);
-- Row i: paragraph 1 + (i - 1) / family mod P; the first of a family as it is, the others
-- with 1-7 % of their words deleted.
INSERT INTO docs (id, body)
SELECT i, CASE WHEN (i - 1) % :family = 0 THEN p.body ELSE array_to_string(ARRAY(
           SELECT w FROM unnest(regexp_split_to_array(p.body, '\s+')) WITH ORDINALITY u(w, j)
           WHERE (hashint8extended(i::bigint * 10000 + j, 1) & 1023) >= 10 + (hashint8extended(i, 2) & 63)
           ORDER BY j), ' ') END
FROM (SELECT count(*) AS n FROM base) c
CROSS JOIN LATERAL generate_series(1, :docs) i
JOIN base p ON p.id = 1 + ((i - 1) / :family) % c.n;
VACUUM ANALYZE docs;
SQL
psql -X -q -v ON_ERROR_STOP=1 -c "\\copy docs TO '${tmp}/docs.tsv'"
[[ -z ${save} ]] || cp "${tmp}/docs.tsv" "${save}"
read -r rows mbytes < <(psql -X -At -F ' ' -c \
    "SELECT count(*), round(sum(octet_length(body)) / 1e6, 1) FROM docs")
log "loaded ${rows} rows, ${mbytes} MB"

# measure SETTINGS SQL : runs SQL (a query returning one value) in --rounds fresh sessions
# after the settings; sets MEDIAN_MS and RESULT (the last run's value).
measure() {
    local settings=$1 sql=$2 n=${3:-${rounds}} i out times=()
    for ((i = 0; i < n; i++)); do
        out=$(psql -X -At -v ON_ERROR_STOP=1 -c "${settings}" -c '\timing on' -c "${sql}" 2>/dev/null)
        times+=("$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"${out}" | tail -n 1)")
        RESULT=$(grep -v '^Time:\|^SET$' <<<"${out}" | tail -n 1)
    done
    MEDIAN_MS=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
}
# reference ARGS... : the reference's median seconds into REF_S, its result into REF_N.
reference_run() {
    local line
    line=$("${reference}" "${tmp}/docs.tsv" "${threshold}" --rounds "${rounds}" "$@")
    log "reference: ${line}"
    REF_S=$(sed -n 's/.*, \([0-9.]*\) s (median.*/\1/p' <<<"${line}")
    REF_N=$(sed -n 's/.*\(pairs\|cluster rows\) \([0-9]*\),.*/\2/p' <<<"${line}")
    REF_MB=$(sed -n 's/.*peak engine memory \([0-9]*\) MB.*/\1/p' <<<"${line}")
}

measure '' 'SELECT count(md5(body)) FROM docs'
md5_ms=${MEDIAN_MS}
printf '\n%s rows (families of %s), %s MB, min_similarity %s, work_mem %s, median of %s runs\n\n' \
    "${rows}" "${family}" "${mbytes}" "${threshold}" "${work_mem}" "${rounds}"
printf '| what | threads | rows returned | time | ratio to the reference | ratio to count(md5(body)) |\n|---|---|---|---|---|---|\n'
printf '| `count(md5(body))` | 1 | | %.0f ms | | 1 |\n' "${md5_ms}"
for what in ${what_list//,/ }; do
    fn=simhash_similar_${what}
    extra=()
    [[ ${what} == clusters ]] && extra=(--clusters)
    for threads in ${threads_list//,/ }; do
        reference_run --threads "${threads}" "${extra[@]}"
        printf '| reference program, %s | %s | %s | %.2f s (peak %s MB) | 1 | %.1f |\n' "${what}" "${threads}" \
            "${REF_N}" "${REF_S}" "${REF_MB}" "$(awk -v s="${REF_S}" -v b="${md5_ms}" 'BEGIN { print s * 1000 / b }')"
        measure "SET work_mem = '${work_mem}'; SET max_parallel_workers_per_gather = $((threads - 1))" \
            "SELECT count(*) FROM ${fn}('SELECT id, body FROM docs', ${threshold})"
        [[ ${RESULT} == "${REF_N}" ]] || log "WARNING: ${fn} returned ${RESULT} rows, the reference ${REF_N}"
        printf '| `%s` | %s | %s | %.2f s | %.2f | %.1f |\n' "${fn}" "${threads}" "${RESULT}" \
            "$(awk -v m="${MEDIAN_MS}" 'BEGIN { print m / 1000 }')" \
            "$(awk -v m="${MEDIAN_MS}" -v r="${REF_S}" 'BEGIN { print m / 1000 / r }')" \
            "$(awk -v m="${MEDIAN_MS}" -v b="${md5_ms}" 'BEGIN { print m / b }')"
    done
done
# The engine's DEBUG1 summary of a call: its peak memory and the records file (kB).
engine_summary() {
    psql -X -At -c "SET work_mem = '$1'" -c "SET max_parallel_workers_per_gather = 1" \
        -c "SET client_min_messages = debug1" -c "SELECT count(*) FROM $2('SELECT id, body FROM docs', ${threshold})" 2>&1 |
        sed -n 's/.*engine memory at most \([0-9]*\) kB.*records file \([0-9]*\) kB.*/\1 \2/p' | tail -n 1
}
if [[ -n ${spill} ]]; then
    printf '\nExternal mode (work_mem below the in-memory need; 2 threads):\n\n'
    printf '| what | work_mem | rows returned | time | ratio to the in-memory reference (2 threads) | ratio to count(md5(body)) | engine peak | records file |\n|---|---|---|---|---|---|---|---|\n'
    for wm in ${spill//,/ }; do
        for what in ${what_list//,/ }; do
            fn=simhash_similar_${what}
            extra=()
            [[ ${what} == clusters ]] && extra=(--clusters)
            reference_run --threads 2 "${extra[@]}"
            measure "SET work_mem = '${wm}'; SET max_parallel_workers_per_gather = 1" \
                "SELECT count(*) FROM ${fn}('SELECT id, body FROM docs', ${threshold})"
            [[ ${RESULT} == "${REF_N}" ]] || log "WARNING: ${fn} at work_mem ${wm} returned ${RESULT} rows, the reference ${REF_N}"
            read -r peak_kb file_kb < <(engine_summary "${wm}" "${fn}")
            printf '| `%s` | %s | %s | %.2f s | %.2f | %.1f | %.0f MB | %.0f MB |\n' "${fn}" "${wm}" "${RESULT}" \
                "$(awk -v m="${MEDIAN_MS}" 'BEGIN { print m / 1000 }')" \
                "$(awk -v m="${MEDIAN_MS}" -v r="${REF_S}" 'BEGIN { print m / 1000 / r }')" \
                "$(awk -v m="${MEDIAN_MS}" -v b="${md5_ms}" 'BEGIN { print m / b }')" \
                "$(awk -v k="${peak_kb:-0}" 'BEGIN { print k / 1024 }')" "$(awk -v k="${file_kb:-0}" 'BEGIN { print k / 1024 }')"
        done
    done
fi
pairs_per_row=$(psql -X -At -c "SET work_mem = '${work_mem}'" -c \
    "SELECT round(count(*)::numeric / (SELECT count(*) FROM docs), 2) FROM simhash_similar_pairs('SELECT id, body FROM docs', ${threshold})" | tail -n 1)
printf '\nPairs at or above %s per row: %s\n' "${threshold}" "${pairs_per_row}"
