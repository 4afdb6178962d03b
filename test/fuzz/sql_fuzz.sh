#!/usr/bin/env bash
# The SQL-level fuzzer: every SQL function of the extension called with random arguments
# (test/fuzz/sql_gen.pl) in databases of five encodings, on a throwaway cluster.
#
# Usage: test/fuzz/sql_fuzz.sh [--smoke | --long | --calls N] [--seed S] [--encodings "E ..."]
#   --smoke     500 statements per database (the default; tens of seconds in all)
#   --long      20000 statements per database
#   --calls N   N statements per database
#   --seed S    the random seed (default: the current time; printed, to replay a run)
#   --encodings the databases' encodings (default: UTF8 SQL_ASCII LATIN1 EUC_CN EUC_JP)
#
# Each database is created with TEMPLATE template0 and LC_COLLATE/LC_CTYPE 'C', the
# extension installed, a few tables of real text filled (build-fuzz/text, made by
# test/fuzz/make_seeds.pl), and then the statements run in batches through psql, one a
# line, with statement_timeout 10 s. An error with a SQLSTATE is fine (counted by class);
# a failure is an internal error (XX000) or a crash: psql losing its connection, or the
# server log saying a server process was terminated by a signal. Failing statements are
# kept in build-fuzz/sql-failures/. Prints one table: database encoding, statements,
# statements without error, errors by SQLSTATE class, internal errors, crashes. Exits
# non-zero on any failure. Every error message of the last run is in build-fuzz/sql-logs/.
#
# Needs scripts/setup.sh (run here with --private-pg --quiet when the extension is not
# installed into the private PostgreSQL yet).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

calls=500
seed=$(date +%s)
encodings=(UTF8 SQL_ASCII LATIN1 EUC_CN EUC_JP)
while [[ $# -gt 0 ]]; do
    case $1 in
        --smoke) calls=500; shift ;;
        --long) calls=20000; shift ;;
        --calls) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || die "--calls needs a number"; calls=$2; shift 2 ;;
        --seed) [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || die "--seed needs a number"; seed=$2; shift 2 ;;
        --encodings) [[ $# -ge 2 ]] || die "--encodings needs a list"; read -r -a encodings <<<"$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done

use_private_pg
if [[ ! -f $("${PG_CONFIG}" --sharedir)/extension/simhash.control ]]; then
    scripts/setup.sh --private-pg --quiet >&2
fi
[[ -d build-fuzz/text ]] || test/fuzz/make_seeds.pl --out build-fuzz --per-script 24

failures=build-fuzz/sql-failures
logs=build-fuzz/sql-logs
mkdir -p "${failures}" "${logs}"
rm -f "${logs}"/*.errors
work=$(mktemp -d "${TMPDIR:-/tmp}/simhash-sqlfuzz.XXXXXX")
cleanup() {
    pgcluster_stop
    rm -rf -- "${work}"
}
trap cleanup EXIT

export PGCLUSTER_SETTINGS="restart_after_crash = on
log_min_messages = warning
log_min_error_statement = panic
jit = off"
pgcluster_start
server_log=${PGCLUSTER_DIR}/server.log
log "seed ${seed}, ${calls} statements per database"

# A psql that goes on after errors (reported with their SQLSTATE) and throws results away.
fuzz_psql() {
    command psql -X -q -v ON_ERROR_STOP=0 -v VERBOSITY=verbose -o /dev/null "$@"
}

# wait_for_server : after a crash, wait until the server accepts connections again.
wait_for_server() {
    local i
    for i in $(seq 1 120); do
        command psql -X -q -d postgres -c 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    die "the server did not come back after a crash"
}

rows=()
status=0
for enc in "${encodings[@]}"; do
    db=fuzz_$(tr 'A-Z' 'a-z' <<<"${enc}")
    command psql -X -q -d postgres -v ON_ERROR_STOP=1 \
        -c "CREATE DATABASE ${db} TEMPLATE template0 ENCODING '${enc}' LC_COLLATE 'C' LC_CTYPE 'C'" \
        -c "ALTER DATABASE ${db} SET statement_timeout = '10s'" >/dev/null
    test/fuzz/sql_gen.pl --setup --encoding "${enc}" --text build-fuzz/text >"${work}/setup.sql"
    command psql -X -q -d "${db}" -v ON_ERROR_STOP=1 -f "${work}/setup.sql" >/dev/null ||
        die "setting up the ${enc} database failed"
    test/fuzz/sql_gen.pl --encoding "${enc}" --text build-fuzz/text --calls "${calls}" \
        --seed "$((seed + ${#rows[@]}))" >"${work}/all.sql"
    total=$(wc -l <"${work}/all.sql")
    log_lines_before=$(wc -l <"${server_log}")

    crashes=0
    internal=0
    declare -A classes=()
    errors=0
    done_lines=0
    batch=0
    # Batches of 250 lines; after a crash, the rest of the batch goes on after the line
    # that crashed.
    while [[ ${done_lines} -lt ${total} ]]; do
        sed -n "$((done_lines + 1)),$((done_lines + 250))p" "${work}/all.sql" >"${work}/batch.sql"
        n=$(wc -l <"${work}/batch.sql")
        batch=$((batch + 1))
        rc=0
        fuzz_psql -d "${db}" -f "${work}/batch.sql" 2>"${work}/errors.txt" || rc=$?
        cut -c1-400 "${work}/errors.txt" >>"${logs}/${enc}.errors"
        # psql:FILE:LINE: ERROR:  SQLSTATE: message
        while read -r line state; do
            errors=$((errors + 1))
            classes[${state:0:2}]=$((${classes[${state:0:2}]:-0} + 1))
            if [[ ${state} == XX000 ]]; then
                internal=$((internal + 1))
                sed -n "${line}p" "${work}/batch.sql" >"${failures}/${enc}-XX000-${seed}-${batch}-${line}.sql"
            fi
        done < <(sed -n 's/^psql:[^:]*:\([0-9]*\): ERROR:  \([0-9A-Z]\{5\}\): .*/\1 \2/p' "${work}/errors.txt")
        if [[ ${rc} -eq 2 ]] || grep -q 'connection to server was lost\|server closed the connection' "${work}/errors.txt"; then
            crashes=$((crashes + 1))
            line=$(sed -n 's/^psql:[^:]*:\([0-9]*\): .*\(server closed the connection\|connection to server was lost\).*/\1/p' \
                "${work}/errors.txt" | head -n 1)
            line=${line:-${n}}
            sed -n "${line}p" "${work}/batch.sql" >"${failures}/${enc}-crash-${seed}-${batch}-${line}.sql"
            log "${enc}: the server crashed on line ${line} of batch ${batch}; kept in ${failures}/"
            wait_for_server
            done_lines=$((done_lines + line))
        else
            done_lines=$((done_lines + n))
        fi
    done
    # The server log of this database's run: processes terminated by a signal.
    logged=$(tail -n +"$((log_lines_before + 1))" "${server_log}" |
        grep -c 'terminated by signal\|was terminated by exception' || true)
    if [[ ${logged} -gt ${crashes} ]]; then crashes=${logged}; fi
    [[ $((crashes + internal)) -eq 0 ]] || status=1

    by_class=$(for c in "${!classes[@]}"; do printf '%s\n' "${c}: ${classes[${c}]}"; done | sort | paste -sd ',' | sed 's/,/, /g')
    rows+=("$(printf '| %s | %d | %d | %s | %d | %d |' "${enc}" "${total}" "$((total - errors - crashes))" "${by_class:-none}" "${internal}" "${crashes}")")
    unset classes
done

printf '\n| database encoding | statements | without error | errors by SQLSTATE class | internal errors (XX000) | crashes |\n|---|---|---|---|---|---|\n'
printf '%s\n' "${rows[@]}"
if [[ ${status} -ne 0 ]]; then
    log "FAILED: internal errors or crashes; the statements are in ${failures}/ (seed ${seed})"
    grep -E 'terminated by signal|was terminated by|PANIC|TRAP' "${server_log}" | head -n 20 >&2 || true
fi
exit "${status}"
