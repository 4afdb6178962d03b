#!/usr/bin/env bash
# Reliability figures on a throwaway cluster, as one table: memory each SQL function keeps
# per call over many calls in one session (leaks), how fast statement_timeout stops the
# long-running calls (cancellation), with what they leave behind, and what a kill -9 of the
# server leaves (crash: the TAP tests of t/ at full size).
#
# Usage: scripts/reliability.sh [--calls N] [--timeout MS] [--tap-rows N] [--fuzz MODE]
#                               [--load-seconds S] [--valgrind-supp FILE | --no-valgrind]
#   --calls N     calls of each function in the leak runs (default 1000000; N / 10 for the
#                 functions that run queries, N / 100 for simhash_skew (a scan of the table)
#                 and the verified all-pairs functions, N / 1000 calls each its own transaction
#                 (simhash_similar_pairs, and cancelled simhash_pairs calls); each after
#                 a warm-up of a tenth, not counted)
#   --timeout MS  statement_timeout of the cancellation runs (default 100)
#   --tap-rows N  size of the TAP tests (default 500000: rows of the COPY killed half-way)
#   --fuzz MODE   the fuzzers' size: long (default: scripts/fuzz.sh --long, at least 10
#                 million executions of the libFuzzer targets, then the SQL fuzzer's 20000
#                 statements in each of five database encodings; two to three hours),
#                 smoke or none
#   --load-seconds S  the pgbench load's run time (default 300; 0: none)
#   --valgrind-supp FILE  PostgreSQL's src/tools/valgrind.supp for the valgrind run;
#   --no-valgrind         or no valgrind run (it takes about 20 minutes)
#
# Leaks: every SQL function the extension documents, in groups that share code paths, and
# error paths (bad options, a rejected insert, cancelled calls): the backend's private memory
# (RssAnon) after the warm-up and after N more calls, (after - before) / N bytes a call, less
# the same figure for the harness alone (a loop whose every call runs in a PL/pgSQL
# exception block, so that error paths can be called). Cancellation: the time from the
# statement's start to its error (57014), and then the temporary files, locks and layout
# rows left (all must be 0). Crash: scripts/tap.sh --rows N; its figures (rows committed before the kill, recovery time, amcheck, near pairs)
# become rows of the table, and the script fails when a TAP test does. Fuzzing: the
# executions of the libFuzzer targets (under ASan and UBSan) and the statements of the SQL
# fuzzer, with the crashes they found (must be 0; see docs/testing.md#fuzzing). Load:
# test/load/run.sh (32 clients: TPS, p50/p99 per statement, errors, near pairs left).
# Valgrind: scripts/valgrind_regress.sh (reports of our code under memcheck: must be 0).
# Needs scripts/setup.sh (run here with --private-pg --quiet).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

calls=1000000
timeout_ms=100
tap_rows=500000
fuzz=long
load_seconds=300
valgrind=1
valgrind_supp=
while [[ $# -gt 0 ]]; do
    case $1 in
        --calls) [[ $# -ge 2 ]] || die "--calls needs a number"; calls=$2; shift 2 ;;
        --timeout) [[ $# -ge 2 ]] || die "--timeout needs milliseconds"; timeout_ms=$2; shift 2 ;;
        --tap-rows) [[ $# -ge 2 ]] || die "--tap-rows needs a number"; tap_rows=$2; shift 2 ;;
        --fuzz) [[ $# -ge 2 && $2 =~ ^(long|smoke|none)$ ]] || die "--fuzz takes long, smoke or none"; fuzz=$2; shift 2 ;;
        --load-seconds) [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || die "--load-seconds needs a number"; load_seconds=$2; shift 2 ;;
        --valgrind-supp) [[ $# -ge 2 ]] || die "--valgrind-supp needs a file"; valgrind_supp=$2; shift 2 ;;
        --no-valgrind) valgrind=0; shift ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done
[[ ${calls} =~ ^[1-9][0-9]*$ && ${timeout_ms} =~ ^[1-9][0-9]*$ && ${tap_rows} =~ ^[1-9][0-9]*$ ]] ||
    die "--calls, --timeout and --tap-rows take positive numbers"

scripts/setup.sh --private-pg --quiet >&2
use_private_pg
export PGCLUSTER_SETTINGS="max_parallel_workers_per_gather = 0
jit = off"
pgcluster_start
trap pgcluster_stop EXIT
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }
psql -c 'CREATE EXTENSION simhash' >/dev/null

printf '\n| check | what | figure |\n|---|---|---|\n'

# Tables the leak runs use: documents with block indexes and LSH keys, a small table for
# the all-pairs functions, a document-frequency table, and tables with the dedupe trigger.
psql >/dev/null <<'SQL'
SET client_min_messages = warning;
CREATE TABLE lk_docs (id bigint PRIMARY KEY, body text, fp bigint, lsh bigint[]);
INSERT INTO lk_docs
SELECT i, 'Permission is hereby granted, free of charge, to any person obtaining a copy '
          || (i % 50) || ' of this software and associated documentation files ' || (i % 7), NULL, NULL
FROM generate_series(1, 2000) i;
UPDATE lk_docs SET fp = simhash(body), lsh = simhash_lsh(body);
SELECT count(*) FROM simhash_create_index('lk_docs', 'fp', 3);
CREATE INDEX ON lk_docs USING gin (lsh);
CREATE TABLE lk_small AS SELECT id, fp, body FROM lk_docs WHERE id <= 30;
CREATE TABLE lk_df AS SELECT * FROM simhash_df('SELECT body FROM lk_docs WHERE id <= 3');
CREATE TABLE lk_reject (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER lk_reject BEFORE INSERT ON lk_reject FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
SELECT count(*) FROM simhash_create_index('lk_reject', 'fp', 3);
INSERT INTO lk_reject (body) VALUES ('The quick brown fox jumps over the lazy dog and runs away');
CREATE TABLE lk_skip (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text, lsh bigint[]);
CREATE INDEX ON lk_skip USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER lk_skip BEFORE INSERT ON lk_skip FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'skip');
INSERT INTO lk_skip (body) VALUES ('The quick brown fox jumps over the lazy dog and runs away');
ANALYZE;
SQL

# The backend's private memory in kB (RssAnon: what palloc and malloc hold; the shared
# buffers a call touches are not counted), as a session-local SQL function.
RSS_KB_FUNCTION="CREATE FUNCTION pg_temp.rss_kb() RETURNS bigint LANGUAGE sql AS \$\$ SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'RssAnon:\\s+(\\d+)'))[1]::bigint \$\$;"

# calls_over D : the calls of a leak run that makes D times fewer calls (at least 1).
calls_over() { echo $((calls / $1 > 0 ? calls / $1 : 1)); }

# leak NAME STATEMENT [CALLS] : one session runs STATEMENT (a PL/pgSQL statement using loop
# variable i, each call in an exception block) CALLS / 10 times, then CALLS times (default
# --calls), and reports the growth of the backend's private memory in bytes a call.
leak() {
    local name=$1 stmt=$2 n=${3:-${calls}} out
    out=$(psql -At -v calls="${n}" -v stmt="${stmt}" -v rss_fn="${RSS_KB_FUNCTION}" <<'SQL'
CREATE TEMP TABLE rss (stage text, kb bigint);
SELECT :'rss_fn' \gexec
SELECT format($f$CREATE FUNCTION pg_temp.run(n integer) RETURNS void LANGUAGE plpgsql AS $b$
DECLARE x bigint; t text;
BEGIN
    FOR i IN 1..n LOOP
        BEGIN %s; EXCEPTION WHEN OTHERS THEN NULL; END;
    END LOOP;
END $b$$f$, :'stmt') \gexec
SELECT pg_temp.run(greatest(:calls / 10, 1));
INSERT INTO rss SELECT 'before', pg_temp.rss_kb();
SELECT pg_temp.run(:calls);
INSERT INTO rss SELECT 'after', pg_temp.rss_kb();
SELECT round(((SELECT kb FROM rss WHERE stage = 'after') - (SELECT kb FROM rss WHERE stage = 'before')) * 1024.0 / :calls, 2);
SQL
    )
    LEAK=${out##*$'\n'}
}

# The harness alone (a loop of subtransactions) grows too: its figure is subtracted. The
# calls that must not keep what they did (rows) end with RAISE, and are compared with the
# harness that raises too.
leak_net() {
    local name=$1 stmt=$2 n=${3:-${calls}} base=${BASE}
    [[ ${stmt} == *'RAISE EXCEPTION'* ]] && base=${BASE_RAISE}
    leak "${name}" "${stmt}" "${n}"
    printf '| leak | %s | %s bytes a call (%s measured, %s for the harness alone), over %s calls |\n' \
        "${name}" "$(awk -v a="${LEAK}" -v b="${base}" 'BEGIN { printf "%.2f", a - b }')" "${LEAK}" "${base}" "${n}"
}
leak 'harness' 'x := i'
BASE=${LEAK}
leak 'harness, raising' "x := i; RAISE EXCEPTION 'undo'"
BASE_RAISE=${LEAK}
few=$(calls_over 10)
fewer=$(calls_over 100)

# Every SQL function the extension documents (simhash_create_index, simhash_drop_index and
# the simhash_layouts functions are DDL or catalog writes, run a few times by the tests,
# not in a loop), in groups of functions that share their code paths.
leak_net 'simhash(text)' "x := simhash('The quick brown fox ' || i || ' jumps over the lazy dog')"
leak_net "simhash(text, 'char', 5, 'binary')" "x := simhash('自由软件基金会 ' || i, 'char', 5, 'binary')"
leak_net 'simhash(tsvector)' "x := simhash(to_tsvector('english', 'The quick brown fox ' || i))"
leak_net 'simhash(text[]), simhash(text[], weights)' "x := simhash(ARRAY['a' || i, 'b', 'c']) # simhash(ARRAY['a' || i, 'b'], ARRAY[1.5, 2])"
leak_net 'simhash_features' "x := (SELECT count(*) FROM simhash_features('the cat and the hat ' || i, 'word', 1))"
leak_net 'simhash_tfidf' "x := simhash_tfidf('permission is hereby granted ' || i, 'lk_df')" "${few}"
leak_net 'simhash_df' "x := (SELECT count(*) FROM simhash_df('SELECT body FROM lk_small WHERE id <= 3'))" "${few}"
leak_net 'hamming, simhash_similarity, simhash_near, simhash_within' "x := hamming(i, -i) + (simhash_similarity(i, -i) * 64)::bigint + simhash_near(i, -i, 3)::int + simhash_within(i, -i, 3)::int"
leak_net 'simhash_to_hex / _from_hex' "x := simhash_from_hex(simhash_to_hex(i))"
leak_net 'simhash_to_numeric / _from_numeric' "x := simhash_from_numeric(simhash_to_numeric(-i))"
leak_net 'simhash_block, simhash_block_probes, simhash_layout_blocks' "x := simhash_block(i, 4, 1) + cardinality(simhash_block_probes(i, 4, 1, 1)) + simhash_layout_blocks(3, i)"
leak_net 'simhash_jaccard, simhash_containment (texts)' "x := ((simhash_jaccard('Permission is hereby granted ' || i, 'permission is hereby granted') + simhash_containment('a b c ' || i, 'a b c d')) * 1000)::bigint"
leak_net 'simhash_shingles, simhash_jaccard, simhash_containment (sets)' "x := ((simhash_jaccard(simhash_shingles('Permission is hereby granted ' || i), simhash_shingles('permission is hereby granted')) + simhash_containment(simhash_shingles('a b c ' || i), simhash_shingles('a b c d'))) * 1000)::bigint"
leak_net 'simhash_lsh (text, set)' "x := cardinality(simhash_lsh('Permission is hereby granted, free of charge ' || i)) + cardinality(simhash_lsh(simhash_shingles('abc ' || i)))"
leak_net 'simhash_shingle_digest, simhash_shingle_summary' "x := simhash_shingle_digest('text ' || i) # cardinality((simhash_shingle_summary('text ' || i)).keys)"
leak_net 'simhash_similar_recipes' "x := (SELECT count(*) FROM simhash_similar_recipes(0.5 + (i % 50) / 100.0))"
leak_net 'simhash_near through the block indexes' "x := (SELECT count(*) FROM lk_docs WHERE simhash_near(fp, i, 3))" "${few}"
leak_net 'simhash_nearest' "x := (SELECT count(*) FROM simhash_nearest(NULL::lk_docs, 'fp', (SELECT d.fp FROM lk_docs d WHERE d.id = 1 + i % 2000), 3))" "${few}"
leak_net 'simhash_search_plan, simhash_skew' "x := (SELECT count(*) FROM simhash_search_plan('lk_docs', 'fp', 1 + i % 3)) + (SELECT count(*) FROM simhash_skew('lk_docs', 'fp', 1))" "${fewer}"
leak_net 'simhash_similar_nearest' "x := (SELECT count(*) FROM simhash_similar_nearest(NULL::lk_docs, 'body', 'lsh', 'Permission is hereby granted, free of charge, to any person obtaining a copy ' || (i % 50), 3))" "${few}"
leak_net 'simhash_pairs, simhash_clusters' "x := (SELECT count(*) FROM simhash_pairs('SELECT id, fp FROM lk_small', 3)) + (SELECT count(*) FROM simhash_clusters('SELECT id, fp FROM lk_small', 3))" "${few}"
leak_net 'simhash_similar_pairs, simhash_similar_clusters' "x := (SELECT count(*) FROM simhash_similar_pairs('SELECT id, body FROM lk_small', 0.8)) + (SELECT count(*) FROM simhash_similar_clusters('SELECT id, body FROM lk_small', 0.8))" "${fewer}"
leak_net 'simhash_dedupe trigger, skip (threshold)' "INSERT INTO lk_skip (body) VALUES ('The quick brown fox jumps over the lazy dog and runs away ' || (i % 2)); RAISE EXCEPTION 'undo'" "${few}"
leak_net 'error: simhash_dedupe trigger, reject (23505)' "INSERT INTO lk_reject (body) VALUES ('The quick brown fox jumps over the lazy dog and runs away')" "${few}"
leak_net 'error: bad tokenizer (22023)' "x := simhash('text ' || i, 'nonsense')"
leak_net 'error: bad hex (22P02)' "x := simhash_from_hex('zz' || i)"
leak_net 'error: k out of range (22023)' "x := simhash_near(i, -i, 65)::int"
leak_net 'error: repeated id in simhash_pairs (21000)' "x := (SELECT count(*) FROM simhash_pairs('SELECT 1::bigint, ' || i || '::bigint UNION ALL SELECT 1, 2', 3))" "${few}"

# client_leak NAME STATEMENT N [TIMEOUT] : one session runs STATEMENT N times, each its own
# transaction (under statement_timeout TIMEOUT, when given), after a warm-up of N / 10 + 1,
# and reports its private memory's growth a call (and how many calls the timeout cancelled).
client_leak() {
    local name=$1 stmt=$2 n=$3 timeout=${4:-} out j
    out=$( {
        echo "${RSS_KB_FUNCTION}"
        [[ -n ${timeout} ]] && echo "SET statement_timeout = '${timeout}';"
        for ((j = 0; j < n / 10 + 1; j++)); do echo "${stmt};"; done
        echo "SELECT 'before', pg_temp.rss_kb();"
        for ((j = 0; j < n; j++)); do echo "${stmt};"; done
        echo "SELECT 'after', pg_temp.rss_kb();"
    } | command psql -X -q -At -F ' ' 2>&1)
    local cancelled growth
    cancelled=$(grep -c 'canceling statement due to statement timeout' <<<"${out}" || true)
    growth=$(awk -v n="${n}" '$1 == "before" || $1 == "after" { v[$1] = $2 } END { printf "%.2f", (v["after"] - v["before"]) * 1024 / n }' <<<"${out}")
    if [[ -n ${timeout} ]]; then
        printf '| leak | %s | %s bytes a call, over %s calls (%s of %s cancelled in all) |\n' \
            "${name}" "${growth}" "${n}" "${cancelled}" "$((n + n / 10 + 1))"
    else
        printf '| leak | %s | %s bytes a call, over %s calls, each its own transaction |\n' "${name}" "${growth}" "${n}"
    fi
}
thousandth=$(calls_over 1000)
# The verified all-pairs functions make temporary tables, and PostgreSQL keeps some catalog
# cache for each temporary table a session has queried (about 300 bytes; see
# docs/testing.md#reliability-figures): their calls one transaction each, as a session of
# many separate calls makes them.
client_leak 'simhash_similar_pairs, one transaction a call' \
    "SELECT count(*) FROM simhash_similar_pairs('SELECT id, body FROM lk_small', 0.8)" "${thousandth}"
client_leak 'cancelled: simhash_pairs of 2M rows, statement_timeout 20 ms' \
    "SELECT count(*) FROM simhash_pairs('SELECT i, (hashint8(i)::bigint << 32) | (hashint8(-i)::bigint & 4294967295) FROM generate_series(1, 2000000) i', 8)" \
    "${thousandth}" 20ms
psql -c 'DROP TABLE lk_docs, lk_small, lk_df, lk_reject, lk_skip' >/dev/null

# cancel NAME SETUP STATEMENT : STATEMENT under statement_timeout; the time to its error,
# then what is left behind.
cancel() {
    local name=$1 setup=$2 stmt=$3 out
    out=$(psql -At -v timeout="${timeout_ms}" -v setup="${setup}" -v stmt="${stmt}" <<'SQL' 2>&1 || true
SELECT :'setup' <> '' AS has_setup \gset
\if :has_setup
SELECT :'setup' \gexec
\endif
SET statement_timeout = :timeout;
SELECT clock_timestamp() AS t0 \gset
\set ON_ERROR_STOP 0
SELECT :'stmt' \gexec
\set ON_ERROR_STOP 1
RESET statement_timeout;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000) AS ms,
       (SELECT count(*) FROM pg_ls_tmpdir()) AS temp_files,
       (SELECT count(*) FROM pg_locks WHERE pid <> pg_backend_pid() OR locktype = 'advisory') AS locks,
       (SELECT count(*) FROM simhash_layouts) AS layouts \gset
SELECT format('%s ms; left: %s temporary files, %s locks, %s layout rows', :'ms', :'temp_files', :'locks', :'layouts');
SQL
    )
    local line
    line=$(grep -E '^[0-9]+ ms; left' <<<"${out}" || echo "no result: ${out//$'\n'/ }")
    grep -q 'canceling statement due to statement timeout' <<<"${out}" || line="NOT CANCELLED: ${line}"
    printf '| cancel | %s | %s |\n' "${name}" "${line}"
}

cancel 'simhash() of 200 MB' "CREATE TABLE big AS SELECT repeat('lorem ipsum dolor sit amet ', 7700000) AS body" \
    'SELECT simhash(body) FROM big'
cancel "simhash(…, 'char', 5, 'binary') of 200 MB" '' "SELECT simhash(body, 'char', 5, 'binary') FROM big"
cancel 'simhash_lsh of 200 MB' '' 'SELECT cardinality(simhash_lsh(body)) FROM big'
cancel 'simhash_pairs, 2M rows, k = 8' '' \
    "SELECT count(*) FROM simhash_pairs('SELECT i, (hashint8(i)::bigint << 32) | (hashint8(-i)::bigint & 4294967295) FROM generate_series(1, 2000000) i', 8)"
cancel 'simhash_pairs, 2M rows, spilled (work_mem 64kB)' '' \
    "SET work_mem = '64kB'; SELECT count(*) FROM simhash_pairs('SELECT i, (hashint8(i)::bigint << 32) | (hashint8(-i)::bigint & 4294967295) FROM generate_series(1, 2000000) i', 8)"
cancel 'simhash_create_index, 5M rows' \
    'CREATE TABLE fps AS SELECT i AS id, (hashint8(i)::bigint << 32) | (hashint8(-i)::bigint & 4294967295) AS fp FROM generate_series(1, 5000000) i' \
    "SELECT count(*) FROM simhash_create_index('fps', 'fp', 6)"
cancel 'simhash_df of 200 MB' '' "SELECT count(*) FROM simhash_df('SELECT body FROM big')"
cancel 'simhash_similar_pairs, 200k rows' \
    "CREATE TABLE paras AS SELECT i AS id, 'paragraph ' || (i % 1000) || ' of a licence text with words ' || i AS body FROM generate_series(1, 200000) i" \
    "SELECT count(*) FROM simhash_similar_pairs('SELECT id, body FROM paras', 0.8)"

# Crash recovery: the TAP tests at full size, on servers of their own; each figure they
# print ("figure: NAME: VALUE") becomes a row.
pgcluster_stop
tap_log=$(mktemp)
tap_status=0
SECONDS=0
scripts/tap.sh --rows "${tap_rows}" >"${tap_log}" 2>&1 || tap_status=$?
while IFS= read -r line; do
    printf '| crash | %s | %s |\n' "${line%%: *}" "${line#*: }"
done < <(sed -n 's/^# figure: //p' "${tap_log}")
if [[ ${tap_status} -eq 0 ]]; then
    printf '| crash | TAP tests (t/*.pl), %s rows | %s in %s s |\n' "${tap_rows}" \
        "$(grep -o 'Tests=[0-9]*' "${tap_log}" | tail -n 1 | sed 's/Tests=\(.*\)/\1 tests passed/')" "${SECONDS}"
    rm -f -- "${tap_log}"
else
    printf '| crash | TAP tests (t/*.pl), %s rows | FAILED (output in %s) |\n' "${tap_rows}" "${tap_log}"
    tail -n 40 "${tap_log}" >&2
    exit 1
fi

# Fuzzing, after this script's cluster is stopped (the SQL fuzzer starts its own): the
# totals of scripts/fuzz.sh's table and of test/fuzz/sql_fuzz.sh's.
if [[ ${fuzz} != none ]]; then
    pgcluster_stop
    fuzz_out=$(mktemp)
    fuzz_status=0
    scripts/fuzz.sh "--${fuzz}" >"${fuzz_out}" || fuzz_status=$?
    total=$(grep '^| total |' "${fuzz_out}" || true)
    if [[ -n ${total} ]]; then
        IFS='|' read -r _ _ execs crashes secs _ <<<"${total}"
        printf '| fuzz | libFuzzer: 8 targets of the core and its C ABI, ASan + UBSan (%s) | %s executions, %s crashes, in %s s |\n' \
            "${fuzz}" "$(xargs <<<"${execs}")" "$(xargs <<<"${crashes}")" "$(xargs <<<"${secs}")"
    else
        printf '| fuzz | libFuzzer (%s) | NO RESULT (scripts/fuzz.sh exited with %s) |\n' "${fuzz}" "${fuzz_status}"
    fi
    sql_status=0
    test/fuzz/sql_fuzz.sh "--${fuzz}" >"${fuzz_out}" || sql_status=$?
    sql=$(awk -F'|' 'function grouped(x, s, out) { s = sprintf("%d", x); while (length(s) > 3) { out = "," substr(s, length(s) - 2) out; s = substr(s, 1, length(s) - 3) } return s out }
        /^\| (UTF8|SQL_ASCII|LATIN1|EUC_CN|EUC_JP) \|/ { n++; s += $3; i += $6; c += $7 }
        END { if (n) printf "%s statements in %d database encodings, %d crashes, %d internal errors (XX000)", grouped(s), n, c, i }' "${fuzz_out}")
    printf '| fuzz | SQL: every function, random arguments (%s) | %s |\n' "${fuzz}" \
        "${sql:-NO RESULT (test/fuzz/sql_fuzz.sh exited with ${sql_status})}"
    rm -f "${fuzz_out}"
fi

# Load: test/load/run.sh on a cluster of its own (TPS, p50/p99 per statement, errors and
# near pairs left; it fails on an error or a near pair).
if [[ ${load_seconds} -gt 0 ]]; then
    pgcluster_stop
    load_out=$(mktemp)
    load_status=0
    test/load/run.sh --seconds "${load_seconds}" >"${load_out}" 2>&1 || load_status=$?
    sed -n 's/^| \([^|]*[^ ]\) *| \(.*\) |$/| load | \1 | \2 |/p' "${load_out}" | grep -v '| load | load |\|---'
    if [[ ${load_status} -ne 0 ]]; then
        printf '| load | test/load/run.sh | FAILED (output in %s) |\n' "${load_out}"
        exit 1
    fi
    rm -f -- "${load_out}"
fi

# Valgrind: the pg_regress files under memcheck (scripts/valgrind_regress.sh).
if [[ ${valgrind} -eq 1 ]]; then
    pgcluster_stop
    vg_out=$(mktemp)
    vg_status=0
    scripts/valgrind_regress.sh ${valgrind_supp:+--suppressions "${valgrind_supp}"} >"${vg_out}" 2>&1 ||
        vg_status=$?
    sed -n 's/^| \(regression files\|backends checked\|reports with a frame of simhash\|other reports[^|]*\) | \(.*\) |$/| valgrind | \1 | \2 |/p' "${vg_out}"
    if [[ ${vg_status} -ne 0 ]]; then
        printf '| valgrind | scripts/valgrind_regress.sh | FAILED (output in %s) |\n' "${vg_out}"
        exit 1
    fi
    rm -f -- "${vg_out}"
fi
