#!/usr/bin/env bash
# Run the TAP tests (t/*.pl, with PostgreSQL's PostgreSQL::Test::Cluster: crash recovery, a
# streaming replica, a small lock table) through PGXS's `make installcheck`
# (prove_installcheck), against the PostgreSQL that scripts/setup.sh --private-pg installed
# the extension into.
#
# Usage: scripts/tap.sh [--rows N] [TEST...]
#   --rows N  the size of the tests (SIMHASH_TAP_ROWS; default 50000, at least 20000): rows
#             offered to the COPY that is killed, rows loaded on the primary, a quarter of
#             the table indexed
#   TEST      t/NNN_name.pl files to run (default: all of them)
#
# The servers refuse to run as root: when run as root, the tests run as the server user of
# scripts/pgcluster.sh (postgres), in a directory of their own under /tmp. The lines of the
# tests that start with "figure:" are printed again at the end (scripts/reliability.sh reads
# them). The directory is removed after a successful run, and kept (with the servers' logs in
# tmp_check/log) after a failure.
# Needs scripts/setup.sh --private-pg (the extension installed in build/pg, and IPC::Run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

rows=${SIMHASH_TAP_ROWS:-50000}
tests=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --rows) [[ $# -ge 2 ]] || die "--rows needs a number"; rows=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) die "unknown argument: $1 (try --help)" ;;
        *) tests+=("$1"); shift ;;
    esac
done
[[ ${rows} =~ ^[0-9]+$ && ${rows} -ge 20000 ]] || die "--rows takes a number of at least 20000"
perl -MIPC::Run -e 1 2>/dev/null || die "the TAP tests need IPC::Run: run scripts/setup.sh (Debian package libipc-run-perl)"

use_private_pg
[[ -f $("${PG_CONFIG}" --sharedir)/extension/simhash.control ]] ||
    die "simhash is not installed in ${PG_BIN%/bin}: run scripts/setup.sh --private-pg"

root=$(pwd -P)
_pgcluster_pick_user    # sets PGCLUSTER_USER: postgres when we are root, else ourselves
work=$(mktemp -d /tmp/simhash-tap.XXXXXX)
[[ ${EUID} -ne 0 ]] || chown "${PGCLUSTER_USER}:" "${work}"

# as_server_user CMD... : run CMD as the user the test servers run as, in the work directory.
as_server_user() {
    if [[ ${EUID} -eq 0 ]]; then
        (cd "${work}" && runuser -u "${PGCLUSTER_USER}" -- "$@")
    else
        (cd "${work}" && "$@")
    fi
}

prove_tests=
[[ ${#tests[@]} -eq 0 ]] || prove_tests="${tests[*]}"
log "TAP tests as ${PGCLUSTER_USER} in ${work}, ${rows} rows"
status=0
# make -f from the work directory: a VPATH build, whose tmp_check/ is made there while
# prove reads t/ from the checkout. REGRESS and ISOLATION empty: only prove_installcheck.
as_server_user env SIMHASH_TAP_ROWS="${rows}" \
    make -s -f "${root}/Makefile" PG_CONFIG="${PG_CONFIG}" installcheck REGRESS= ISOLATION= \
    PROVE_FLAGS=--timer PROVE_TESTS="${prove_tests}" 2>&1 | tee "${work}/prove.out" || status=$?

printf '\n'
grep -h '^# figure: ' "${work}/prove.out" | sed 's/^# figure: //' || true
if [[ ${status} -eq 0 ]]; then
    rm -rf -- "${work}"
else
    log "TAP tests failed; logs kept in ${work}/tmp_check/log"
fi
exit "${status}"
