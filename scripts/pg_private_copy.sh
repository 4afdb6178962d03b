#!/usr/bin/env bash
# Make a private, relocated copy of the PostgreSQL installation, so that a checkout can
# `make install` its own build and run pg_regress against it without touching the system
# installation (and without root, once the copy exists).
#
# Usage: scripts/pg_private_copy.sh DIR
#   then:  export SIMHASH_PG_BIN=DIR/lib/postgresql/15/bin
#
# PostgreSQL finds its share, lib and include directories relative to its binaries when
# they move together, so copying Debian's three trees under one prefix is enough. The
# copy is about 60 MB. Running it again refreshes the copy.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $# -eq 1 && $1 != -* ]] || { sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; [[ ${1:-} == -h || ${1:-} == --help ]] && exit 0; exit 2; }
dest=$1
src_bin=/usr/lib/postgresql/${PG_MAJOR}/bin
[[ -x ${src_bin}/pg_config ]] || die "PostgreSQL ${PG_MAJOR} is not installed: run scripts/setup.sh --no-build"
[[ -d /usr/include/postgresql/${PG_MAJOR}/server ]] ||
    die "postgresql-server-dev-${PG_MAJOR} is not installed: run scripts/setup.sh --no-build"

mkdir -p "${dest}/lib/postgresql" "${dest}/share/postgresql" "${dest}/include"
rm -rf "${dest}/lib/postgresql/${PG_MAJOR}" "${dest}/share/postgresql/${PG_MAJOR}" \
    "${dest}/include/postgresql"
cp -a "/usr/lib/postgresql/${PG_MAJOR}" "${dest}/lib/postgresql/"
cp -a "/usr/share/postgresql/${PG_MAJOR}" "${dest}/share/postgresql/"
cp -a /usr/include/postgresql "${dest}/include/"
# The server may run as another user (see pgcluster.sh): it must be able to read the copy.
chmod -R a+rX "${dest}"

bin=$(cd "${dest}/lib/postgresql/${PG_MAJOR}/bin" && pwd -P)
[[ $("${bin}/pg_config" --sharedir) == "$(cd "${dest}" && pwd -P)/share/postgresql/${PG_MAJOR}" ]] ||
    die "the copy did not relocate: pg_config --sharedir says $("${bin}/pg_config" --sharedir)"
log "private PostgreSQL in ${dest}; use it with: export SIMHASH_PG_BIN=${bin}"
