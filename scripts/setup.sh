#!/usr/bin/env bash
# Install everything the project needs on Debian 12, then build and install the extension.
#
# Usage: scripts/setup.sh [--no-build] [--no-install] [--private-pg]
#   --no-build    only install the Debian packages
#   --no-install  build, but skip `make install`
#   --private-pg  install into a private copy of PostgreSQL (build/pg, see use_private_pg
#                 in scripts/lib.sh) instead of the system's; what demo.sh and test.sh use
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
for arg in "$@"; do
    case ${arg} in
        --no-build) build=0 ;;
        --no-install) install=0 ;;
        --private-pg) private=1 ;;
        -h | --help)
            sed -n '2,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
            exit 0
            ;;
        *) die "unknown argument: ${arg} (try --help)" ;;
    esac
done

packages=(
    # Compilers and build tools.
    build-essential g++ make cmake pkg-config
    # The server (for tests and the demo) and its headers plus PGXS (for the extension).
    "postgresql-${PG_MAJOR}" "postgresql-server-dev-${PG_MAJOR}"
    # Libraries: hashing, unit tests, benchmarks, MD5 for the evaluation's classic baseline.
    libxxhash-dev libgtest-dev libbenchmark-dev libssl-dev
    # Text for the demo and the evaluation (scripts/make_corpus.sh, scripts/copy_docs.pl).
    perl man-db groff-base bsdextrautils
    manpages manpages-zh manpages-ja manpages-de manpages-fr
)
need_packages "${packages[@]}"

if [[ ${build} -eq 0 ]]; then
    log "dependencies installed (--no-build: not building)"
    exit 0
fi

cd "$(repo_root)"
[[ ${private} -eq 1 ]] && use_private_pg

log "building the C++ core, tests and benchmarks (CMake, build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"

log "building the extension (PGXS)"
make PG_CONFIG="${PG_CONFIG}" -j"$(nproc)"

if [[ ${install} -eq 1 && -n ${SIMHASH_PG_BIN:-} ]]; then
    log "installing the extension into the PostgreSQL of ${PG_BIN}"
    make PG_CONFIG="${PG_CONFIG}" install
elif [[ ${install} -eq 1 ]]; then
    log "installing the extension into the system's PostgreSQL ${PG_MAJOR} (every cluster of it can use it)"
    as_root make PG_CONFIG="${PG_CONFIG}" install
else
    log "--no-install: not installing the extension"
fi
log "done"
