#!/usr/bin/env bash
# The hostile-schema test mode: the whole pg_regress suite, run in a database where a role
# that is not a superuser planted, in the extension's schema and in public, overloads of
# every function of the extension with more specific argument types (test/hostile/plant.sql).
# A planted overload that runs inside the extension's own calls logs a WARNING
# "simhash-hostile: planted ..." and raises; one called by the test itself stands in for
# the real function, so the expected outputs hold. Passes when every file matches its
# expected output and the server log has no such WARNING.
#
# Two rounds:
#   superuser  the database belongs to the planting role, which is its owner (and so may
#              create in public, as under PostgreSQL 15); a superuser installs the
#              extension (simhash_basic) and runs the suite;
#   trusted    the planting role itself installs the extension first (a trusted install:
#              the extension is the role's, its objects the bootstrap superuser's), then
#              plants; a superuser runs the suite.
#
# Usage: test/hostile/run.sh [--round superuser|trusted] [FILE...]
#   Needs the extension built and installed (scripts/setup.sh --private-pg) and starts a
#   throwaway cluster of its own. FILE... : pg_regress files (default: all of REGRESS).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
# shellcheck source=scripts/pgcluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/pgcluster.sh"

cd "$(repo_root)"
use_private_pg

rounds=(superuser trusted)
files=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --round) rounds=("$2"); shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) die "unknown argument: $1" ;;
        *) files+=("$1"); shift ;;
    esac
done
[[ ${#files[@]} -gt 0 ]] || read -r -a files <<<"$(make -s print-regress)"

trap pgcluster_stop EXIT
pgcluster_start

pg_regress=$("${PG_CONFIG}" --pkglibdir)/pgxs/src/test/regress/pg_regress
planter=regress_simhash_hostile_planter
# The name the suite's files reconnect to (\c contrib_regression).
db=contrib_regression
psql_su() { "${PG_BIN}/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

# make_db : a fresh database owned by the planting role, with pg_regress's settings.
make_db() {
    psql_su -d postgres <<SQL
SET client_min_messages = warning;
DROP DATABASE IF EXISTS ${db};
DROP ROLE IF EXISTS ${planter};
CREATE ROLE ${planter} LOGIN;
CREATE DATABASE ${db} OWNER ${planter} TEMPLATE template0;
ALTER DATABASE ${db} SET lc_messages TO 'C';
ALTER DATABASE ${db} SET lc_monetary TO 'C';
ALTER DATABASE ${db} SET lc_numeric TO 'C';
ALTER DATABASE ${db} SET lc_time TO 'C';
ALTER DATABASE ${db} SET bytea_output TO 'hex';
ALTER DATABASE ${db} SET timezone_abbreviations TO 'Default';
SQL
}

# plant : the planting role's traps, for the extension as now installed in the database.
plant() {
    psql_su -d "${db}" -U "${planter}" -v ext_schema=public -v also_public=on \
        -f test/hostile/plant.sql 2>&1 | sed 's/^/    /' >&2
    [[ ${PIPESTATUS[0]} -eq 0 ]]
}

status=0
for round in "${rounds[@]}"; do
    log "===== round ${round}: planting"
    make_db
    case ${round} in
        superuser)
            # The extension must exist to list its functions; simhash_basic installs it again.
            psql_su -d "${db}" -c 'CREATE EXTENSION simhash'
            plant
            psql_su -d "${db}" -c 'DROP EXTENSION simhash'
            ;;
        trusted)
            psql_su -d "${db}" -U "${planter}" -c 'CREATE EXTENSION simhash'
            plant
            ;;
        *) die "unknown round: ${round}" ;;
    esac
    log_start=$(wc -l <"${PGCLUSTER_DIR}/server.log")
    outdir=output_hostile/${round}
    rm -rf "${outdir}"
    mkdir -p "${outdir}"
    log "===== round ${round}: the regression suite"
    round_status=0
    "${pg_regress}" --bindir="${PG_BIN}" --inputdir=. --outputdir="${outdir}" \
        --use-existing --dbname="${db}" "${files[@]}" || round_status=1
    if [[ ${round_status} -ne 0 && -f ${outdir}/regression.diffs ]]; then
        log "${outdir}/regression.diffs:"
        head -n 200 "${outdir}/regression.diffs" >&2
    fi
    ran=$(tail -n +"$((log_start + 1))" "${PGCLUSTER_DIR}/server.log" |
        grep -c 'WARNING:  simhash-hostile: planted' || true)
    if [[ ${ran} -ne 0 ]]; then
        log "round ${round}: ${ran} planted overloads ran inside the extension:"
        tail -n +"$((log_start + 1))" "${PGCLUSTER_DIR}/server.log" |
            grep -A3 'WARNING:  simhash-hostile: planted' | head -n 60 >&2
        round_status=1
    fi
    if [[ ${round_status} -eq 0 ]]; then
        log "round ${round}: passed (no planted overload ran inside the extension)"
    else
        log "round ${round}: FAILED"
        status=1
    fi
done
exit "${status}"
