#!/usr/bin/env bash
# The pg_regress files once under valgrind memcheck: a throwaway cluster whose server runs
# under valgrind (every backend with it), the regression files run against it, then every
# error valgrind reports is read: invalid reads and writes, uses of uninitialised values,
# bad frees, and definite leaks at backend exit.
#
# Usage: scripts/valgrind_regress.sh [--suppressions FILE] [--tests "a b c"] [--out FILE]
#   --suppressions FILE  PostgreSQL's src/tools/valgrind.supp (from its source; not shipped
#                        with the Debian packages), for the server's own known reports
#   --tests LIST         pg_regress files (default: all of them but simhash_search, whose
#                        million-probe queries take an hour under valgrind)
#   --out FILE           also write the summary there
# SIMHASH_KEEP_VALGRIND_LOGS=DIR keeps valgrind's logs (one per process) there.
#
# Prints: the reports whose stack has a frame of ours (a function simhash*, a file of the
# C++ core, or simhash.so itself: must be 0), the others
# (PostgreSQL's own, without its suppressions), and the backends checked. PostgreSQL from
# Debian is not built with USE_VALGRIND, so memory inside palloc's blocks is not tracked
# chunk by chunk: what is checked is the C++ core's own heap (std::vector, new) and every
# access outside PostgreSQL's blocks. Exits non-zero when a report is ours.
# Needs valgrind and the extension installed (scripts/setup.sh --private-pg runs here).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

supp=
tests=
out=
while [[ $# -gt 0 ]]; do
    case $1 in
        --suppressions) supp=$(realpath "$2"); shift 2 ;;
        --tests) tests=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done
command -v valgrind >/dev/null || need_packages valgrind
if [[ -z ${tests} ]]; then
    # simhash_cancel times cancels against a 1 s bound, which a server under valgrind misses.
    tests=$(make -s print-regress | tr ' ' '\n' | grep -vx -e simhash_search -e simhash_cancel | tr '\n' ' ')
fi

scripts/setup.sh --private-pg --quiet >&2
use_private_pg
export PGCLUSTER_SETTINGS="max_parallel_workers_per_gather = 0
jit = off
max_connections = 20"
pgcluster_start
trap 'pg_stop_valgrind; pgcluster_stop' EXIT

# Restart the server under valgrind, as the server's user.
data=${PGCLUSTER_DIR}/data
logs=${PGCLUSTER_DIR}/valgrind
_pgcluster_run "${PG_BIN}/pg_ctl" -D "${data}" -m fast -w stop >/dev/null
mkdir -p "${logs}"
[[ ${EUID} -eq 0 ]] && chown "${PGCLUSTER_USER}:" "${logs}"
[[ -n ${supp} ]] && cp "${supp}" "${logs}/pg.supp" && chmod 644 "${logs}/pg.supp"
vg_args=(--quiet --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite
    --num-callers=40 --track-origins=yes --error-markers=VG-BEGIN,VG-END
    "--log-file=${logs}/vg.%p.log")
[[ -n ${supp} ]] && vg_args+=("--suppressions=${logs}/pg.supp")
_pgcluster_run valgrind "${vg_args[@]}" "${PG_BIN}/postgres" -D "${data}" \
    >"${PGCLUSTER_DIR}/server-valgrind.log" 2>&1 &
pg_stop_valgrind() {
    [[ -f ${data}/postmaster.pid ]] &&
        _pgcluster_run "${PG_BIN}/pg_ctl" -D "${data}" -m fast -w -t 300 stop >/dev/null 2>&1
    return 0
}
for _ in $(seq 1 300); do
    "${PG_BIN}/pg_isready" -q -h "${PGHOST}" -p "${PGPORT}" && break
    sleep 1
done
"${PG_BIN}/pg_isready" -q -h "${PGHOST}" -p "${PGPORT}" || die "the server did not start under valgrind"

log "pg_regress under valgrind: ${tests}"
start=${SECONDS}
regress=0
make -s installcheck REGRESS="${tests}" ISOLATION= TAP_TESTS= PG_CONFIG="${PG_CONFIG}" \
    >"${PGCLUSTER_DIR}/regress.out" 2>&1 ||
    regress=$?
took=$((SECONDS - start))
pg_stop_valgrind

# Each report is between VG-BEGIN and VG-END; ours have a frame of our code.
read -r ours theirs backends <<<"$(awk '
    FNR == 1 { files++ }
    /VG-BEGIN/ { inblock = 1; mine = 0; next }
    inblock && /simhash[_:.]|\.cpp:|\.hpp:/ { mine = 1 }
    /VG-END/ { inblock = 0; if (mine) o++; else t++ }
    END { print o + 0, t + 0, files + 0 }' "${logs}"/vg.*.log)"
summary=$(printf '| valgrind memcheck | %s |\n|---|---|\n| regression files | %s (%s) |\n| backends checked | %s |\n| reports with a frame of simhash | %s |\n| other reports (PostgreSQL%s) | %s |\n| time | %s s |\n' \
    "$(valgrind --version)" "$(wc -w <<<"${tests}")" \
    "$([[ ${regress} -eq 0 ]] && echo 'all passed' || echo 'some failed')" \
    "${backends}" "${ours}" "$([[ -n ${supp} ]] && echo ', after its suppressions' || echo ', no suppressions')" \
    "${theirs}" "${took}")
printf '\n%s\n' "${summary}"
if [[ ${ours} -gt 0 ]]; then
    log "our reports:"
    awk '/VG-BEGIN/ { b = ""; inblock = 1 } inblock { b = b $0 "\n" } inblock && /simhash[_:.]|\.cpp:|\.hpp:/ { mine = 1 }
         /VG-END/ { if (mine) printf "%s", b; inblock = 0; mine = 0 }' "${logs}"/vg.*.log | head -200 >&2
fi
[[ -n ${out} ]] && printf '# scripts/valgrind_regress.sh%s\n\n%s\n' "${supp:+ --suppressions <PostgreSQL source>/src/tools/valgrind.supp}" "${summary}" >"${out}"
[[ -n ${SIMHASH_KEEP_VALGRIND_LOGS:-} ]] && cp -r "${logs}" "${SIMHASH_KEEP_VALGRIND_LOGS}"
[[ ${ours} -eq 0 && ${regress} -eq 0 ]]
