#!/usr/bin/env bash
# Install everything the project needs on Debian 12, then build and install the extension.
#
# Usage: scripts/setup.sh [--no-build] [--no-install] [--private-pg] [--extension-only] [--quiet]
#   --no-build    only install the Debian packages
#   --extension-only  only what the extension needs (compiler, PostgreSQL and its headers,
#                 xxHash): no CMake build of the unit tests, benchmarks and evaluation
#                 programs, and none of their packages; what demo.sh uses
#   --no-install  build, but skip `make install`
#   --private-pg  install into a private copy of PostgreSQL (build/pg, see use_private_pg
#                 in scripts/lib.sh) instead of the system's; what demo.sh and test.sh use
#   --quiet       one line per stage; apt, CMake and compiler output go to build/setup.log
#                 (its last lines are shown if a stage fails)
#
# Without --private-pg (or SIMHASH_PG_BIN), `make install` puts simhash.so, its control file
# and SQL scripts into the system's PostgreSQL 15 directories, where every cluster
# of that installation can then CREATE EXTENSION simhash.
#
# Works as root or as a user with sudo. Safe to run again: packages that are already
# installed are not touched, and the builds are incremental.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build=1
install=1
private=0
extension_only=0
quiet=0
for arg in "$@"; do
    case ${arg} in
        --no-build) build=0 ;;
        --no-install) install=0 ;;
        --private-pg) private=1 ;;
        --extension-only) extension_only=1 ;;
        --quiet) quiet=1 ;;
        -h | --help)
            sed -n '2,20s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
            exit 0
            ;;
        *) die "unknown argument: ${arg} (try --help)" ;;
    esac
done

packages=(
    # Compilers and build tools.
    build-essential g++ make
    # The server (for tests and the demo) and its headers plus PGXS (for the extension).
    "postgresql-${PG_MAJOR}" "postgresql-server-dev-${PG_MAJOR}"
    # Hashing, compiled into the extension.
    libxxhash-dev
    # The demo's loader (scripts/copy_docs.pl). The man pages of the benchmarks' corpus are
    # installed by scripts/make_corpus.sh when a benchmark needs them.
    perl
)
if [[ ${extension_only} -eq 0 ]]; then
    packages+=(
        # The C++ core's own build (CMake): unit tests, benchmarks, MD5 for the
        # evaluation's classic baseline.
        cmake pkg-config libgtest-dev libbenchmark-dev libssl-dev
        # The TAP tests (t/, scripts/tap.sh): PostgreSQL::Test::Cluster runs its servers
        # and clients through IPC::Run.
        libipc-run-perl
        # The example programs (examples/): psycopg 3 for Python, Node.js for node-postgres.
        python3-psycopg nodejs
    )
    # npm fetches node-postgres for examples/node: Debian's, unless an npm is there already
    # (the nodejs package of NodeSource brings its own, and cannot be installed beside
    # Debian's).
    command -v npm >/dev/null 2>&1 || packages+=(npm)
fi

# run CMD... : run a step; with --quiet, its output goes to build/setup.log.
setup_log=$(repo_root)/build/setup.log
run() {
    if [[ ${quiet} -eq 0 ]]; then
        "$@"
        return
    fi
    mkdir -p "$(dirname "${setup_log}")"
    "$@" >>"${setup_log}" 2>&1 || {
        local status=$?
        log "failed: $*; the last lines of ${setup_log}:"
        tail -n 40 "${setup_log}" >&2
        return "${status}"
    }
}

log "checking the Debian packages"
run need_packages "${packages[@]}"

if [[ ${build} -eq 0 ]]; then
    log "dependencies installed (--no-build: not building)"
    exit 0
fi

cd "$(repo_root)"
if [[ ${private} -eq 1 ]]; then
    use_private_pg
fi

if [[ ${extension_only} -eq 0 ]]; then
    log "building the C++ core, tests and benchmarks (CMake, build/)"
    run cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
    run cmake --build build -j"$(nproc)"
fi

log "building the extension (PGXS)"
run make PG_CONFIG="${PG_CONFIG}" -j"$(nproc)"

if [[ ${install} -eq 1 && -n ${SIMHASH_PG_BIN:-} ]]; then
    log "installing the extension into the PostgreSQL of ${PG_BIN}"
    run make PG_CONFIG="${PG_CONFIG}" install
elif [[ ${install} -eq 1 ]]; then
    log "installing the extension into the system's PostgreSQL ${PG_MAJOR} (every cluster of it can use it)"
    run as_root make PG_CONFIG="${PG_CONFIG}" install
else
    log "--no-install: not installing the extension"
fi
log "done"
