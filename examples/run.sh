#!/usr/bin/env bash
# Runs the example programs as tests: examples/python (psycopg 3) and examples/node
# (node-postgres), each in a database of its own on a throwaway cluster
# (scripts/pgcluster.sh) with the extension installed. Each program checks its own answers
# and exits non-zero on a wrong one; both write the same rows, so their outputs must also
# be equal once timings are masked. Exits non-zero when either fails.
#
# Usage: examples/run.sh [--families N]
#   --families N  size of the dedupe job's table (default 1000 families, 2742 rows)
# The job runs with work_mem = 1MB (its shingle sets go on in temporary files) and with
# client_min_messages = debug1, so that the function's closing DEBUG1 summary certainly
# arrives and the programs can check that it reached their notice handlers.
#
# Needs the extension built and installed (scripts/setup.sh --private-pg), python3-psycopg
# for /usr/bin/python3 (PYTHON overrides the interpreter), node and npm (scripts/setup.sh
# installs them). Installs node-postgres into examples/node/node_modules with `npm ci` from
# package-lock.json when it is missing or older than the lock file (needs the npm registry
# then), as the user running this script.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
# shellcheck source=scripts/pgcluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/pgcluster.sh"

cd "$(repo_root)"
use_private_pg

families=1000
while [[ $# -gt 0 ]]; do
    case $1 in
        --families) families=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (examples/run.sh [--families N])" ;;
    esac
done

python=${PYTHON:-/usr/bin/python3}
"${python}" -c 'import psycopg' 2>/dev/null ||
    die "${python} cannot import psycopg: install python3-psycopg (scripts/setup.sh --no-build)"
{ command -v node && command -v npm; } >/dev/null 2>&1 ||
    die "node and npm are needed: install nodejs and npm (scripts/setup.sh --no-build)"

node_dir=examples/node
if [[ ! -f ${node_dir}/node_modules/.package-lock.json ||
    ${node_dir}/package-lock.json -nt ${node_dir}/node_modules/.package-lock.json ]]; then
    log "npm ci in ${node_dir} (node-postgres, as pinned in package-lock.json)"
    (cd "${node_dir}" && npm ci --omit=dev --no-audit --no-fund --loglevel=error) ||
        die "npm ci failed"
fi

trap 'pgcluster_stop; rm -rf "${work:-}"' EXIT
pgcluster_start
work=$(mktemp -d)

psql_su() { "${PG_BIN}/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
for db in example_python example_node; do
    psql_su -d postgres -c "CREATE DATABASE ${db}"
    psql_su -d "${db}" -c 'CREATE EXTENSION simhash'
done

args=(--families "${families}" --work-mem 1MB --expect-notice)
status=0
log "examples/python/simhash_example.py ${args[*]}"
PGDATABASE=example_python "${python}" examples/python/simhash_example.py "${args[@]}" |
    tee "${work}/python.out" || status=1
log "examples/node/simhash_example.js ${args[*]}"
(cd "${node_dir}" && PGDATABASE=example_node node simhash_example.js "${args[@]}") |
    tee "${work}/node.out" || status=1

# The same rows through two drivers: the same answers, line for line.
mask() { sed -E 's/[0-9]+\.[0-9] s\b/N s/g' "$1"; }
if ! diff <(mask "${work}/python.out") <(mask "${work}/node.out") >&2; then
    log "the two programs' outputs differ (above: < Python, > Node.js)"
    status=1
fi
if [[ ${status} -eq 0 ]]; then
    log "both example programs passed"
else
    log "an example program failed"
fi
exit "${status}"
