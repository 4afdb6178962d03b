#!/usr/bin/env bash
# The main job in miniature: fingerprint real text inside PostgreSQL and print its
# near-duplicate groups.
#
# Usage: scripts/demo.sh [--k N] [--verbose] [PATH...]
#   PATH   files or directories of text to load (default: every /usr/share/doc/*/copyright,
#          hundreds of licences, many of them near-identical)
#   --k N  largest Hamming distance that counts as a near duplicate (default 6, where the evaluation's pooled F1 peaks)
#   --verbose  show the set-up's apt, CMake and compiler output (default: one line a stage)
#
# Installs what is missing and builds the extension (scripts/setup.sh) into a private copy
# of PostgreSQL (the system's files are left alone), starts a throwaway PostgreSQL cluster
# of that copy, loads the texts, prints the report (scripts/demo.sql) and stops the
# cluster.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/pgcluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/pgcluster.sh"

k=6
verbose=0
paths=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --k) [[ $# -ge 2 ]] || die "--k needs a number"; k=$2; shift 2 ;;
        --verbose) verbose=1; shift ;;
        -h | --help) sed -n '2,14s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) die "unknown option: $1 (try --help)" ;;
        *) paths+=("$1"); shift ;;
    esac
done
[[ ${k} =~ ^[0-9]+$ && ${k} -le 16 ]] || die "--k takes a whole number from 0 to 16 (the range of simhash_clusters)"

root=$(repo_root)
# Build chatter goes to stderr: stdout is the report.
if [[ ${verbose} -eq 1 ]]; then
    "${root}/scripts/setup.sh" --private-pg >&2
else
    "${root}/scripts/setup.sh" --private-pg --quiet >&2
fi
use_private_pg

pgcluster_start
trap pgcluster_stop EXIT

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION simhash;
CREATE TABLE docs (
    id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL,
    body text NOT NULL,
    fp   bigint GENERATED ALWAYS AS (simhash(body)) STORED
);
SQL

list_files() {
    if [[ ${#paths[@]} -eq 0 ]]; then
        find /usr/share/doc -mindepth 2 -maxdepth 2 -name copyright -type f
    else
        find "${paths[@]}" -type f
    fi
}
log "loading and fingerprinting"
start=${SECONDS}
list_files | sort | perl "${root}/scripts/copy_docs.pl" |
    psql -X -q -v ON_ERROR_STOP=1 -c '\copy docs(name, body) from stdin'
log "loaded in $((SECONDS - start)) s"

psql -X -q -v ON_ERROR_STOP=1 -v k="${k}" -f "${root}/scripts/demo.sql"
