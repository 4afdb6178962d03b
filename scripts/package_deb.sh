#!/usr/bin/env bash
# Builds the Debian package postgresql-15-simhash from a clean export of the committed tree
# (git archive HEAD) with Debian's PostgreSQL extension tools (debian/, pg_buildext,
# dpkg-buildpackage), and with --test installs it and runs a smoke test.
#
# Usage: scripts/package_deb.sh [--test] [--out DIR]
#   --out DIR  where the .deb goes (default build/deb)
#   --test     then install the .deb into the system's PostgreSQL 15 (dpkg -i: this is
#              what a package does; it replaces a simhash installed by `make install`),
#              start a throwaway cluster, CREATE EXTENSION simhash, run a smoke query, and
#              remove the package again (dpkg -r)
# Needs root (or sudo) for the build dependencies and for --test.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root=$(repo_root)
out=${root}/build/deb
test=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --test) test=1; shift ;;
        --out) [[ $# -ge 2 ]] || die "--out needs a directory"; out=$2; shift 2 ;;
        -h | --help) sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done

log "build dependencies"
need_packages dpkg-dev debhelper postgresql-server-dev-all "postgresql-server-dev-${PG_MAJOR}" \
    libxxhash-dev g++ make >/dev/null

work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
version=$(dpkg-parsechangelog -l "${root}/debian/changelog" -S Version)
log "exporting $(git -C "${root}" rev-parse --short HEAD) to ${work}/simhash-${version}"
git -C "${root}" archive --prefix="simhash-${version}/" HEAD | tar -x -C "${work}"
log "dpkg-buildpackage (log: ${work}/build.log, shown on failure)"
(cd "${work}/simhash-${version}" && dpkg-buildpackage -us -uc -b) >"${work}/build.log" 2>&1 ||
    { tail -n 60 "${work}/build.log" >&2; die "dpkg-buildpackage failed"; }
mkdir -p "${out}"
deb=$(find "${work}" -maxdepth 1 -name "postgresql-${PG_MAJOR}-simhash_*.deb" | head -n 1)
[[ -n ${deb} ]] || die "no .deb was built"
cp "${deb}" "${out}/"
deb=${out}/$(basename "${deb}")
log "built ${deb}:"
dpkg-deb -c "${deb}" | awk '{print "  " $6}' | grep -v '/$' >&2

[[ ${test} -eq 1 ]] || exit 0

log "installing ${deb} (dpkg -i)"
as_root dpkg -i "${deb}" >/dev/null
# shellcheck source=scripts/pgcluster.sh
source "${root}/scripts/pgcluster.sh"
PG_BIN=/usr/lib/postgresql/${PG_MAJOR}/bin
PG_CONFIG=${PG_BIN}/pg_config
pgcluster_start
trap 'pgcluster_stop; as_root dpkg -r "postgresql-${PG_MAJOR}-simhash" >/dev/null; rm -rf "${work}"' EXIT
result=$(psql -X -q -At -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION simhash;
SELECT format('%s %s %s %s', (SELECT extversion FROM pg_extension WHERE extname = 'simhash'),
              hamming(simhash('The quick brown fox jumps over the lazy dog'),
                      simhash('the quick brown fox jumps over the lazy dog!')),
              round(simhash_jaccard('abcdefg', 'abcdefh')::numeric, 2),
              cardinality(simhash_lsh('The quick brown fox jumps over the lazy dog')));
SQL
)
[[ ${result} == "0.2 0 0.50 20" ]] || die "smoke test: expected '0.2 0 0.50 20', got '${result}'"
log "smoke test passed: CREATE EXTENSION simhash (${result%% *}), simhash, hamming, simhash_jaccard, simhash_lsh"
log "removing the package (dpkg -r)"
