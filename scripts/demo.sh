#!/usr/bin/env bash
# The main job in miniature: load real texts into PostgreSQL and show their near duplicates,
# verified by their similarity, then search with a threshold and dedupe on insert.
#
# Usage: scripts/demo.sh [--min-similarity T] [--k N] [--verbose] [PATH...]
#   PATH   files or directories of text to load (default: every /usr/share/doc/*/copyright,
#          hundreds of licences, many of them near-identical)
#   --min-similarity T  share of 5-character shingles two texts must share to be near
#          duplicates, 0.7 to 1.0, with a decimal point (default 0.8)
#   --k N  Hamming radius of the fast, approximate layer shown at the end, 0 to 16 (default 6,
#          where the evaluation's pooled F1 peaks)
#   --verbose  show the set-up's apt and compiler output (default: one line a stage)
#
# Builds only the extension (scripts/setup.sh --extension-only: no unit tests or benchmarks)
# into a private copy of PostgreSQL (the system's files are left alone), starts a throwaway
# PostgreSQL cluster of that copy, loads the texts, prints the report (scripts/demo.sql) and
# stops the cluster. About 35 seconds the first time on 2 cores (most of it building), 15
# seconds after, besides installing missing Debian packages.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/pgcluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/pgcluster.sh"

k=6
t=0.8
verbose=0
paths=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --k) [[ $# -ge 2 ]] || die "--k needs a number"; k=$2; shift 2 ;;
        --min-similarity) [[ $# -ge 2 ]] || die "--min-similarity needs a number"; t=$2; shift 2 ;;
        --verbose) verbose=1; shift ;;
        -h | --help) sed -n '2,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) die "unknown option: $1 (try --help)" ;;
        *) paths+=("$1"); shift ;;
    esac
done
[[ ${k} =~ ^[0-9]+$ && ${k} -le 16 ]] || die "--k takes a whole number from 0 to 16 (the range of simhash_pairs)"
if ! [[ ${t} =~ ^(0\.[0-9]+|1\.0+)$ ]] || ! awk -v t="${t}" 'BEGIN { exit !(t >= 0.7 && t <= 1) }'; then
    die "--min-similarity takes a number from 0.7 to 1, with a decimal point (the range of the threshold trigger)"
fi

# stage N MSG : announce a stage of the run, with the time so far.
demo_start=${SECONDS}
stage() {
    log "[$1/4] $2 ($((SECONDS - demo_start)) s so far)"
}
log "about 35 s the first time on 2 cores (building the extension), 15 s after, plus any missing Debian packages; the report follows on stdout"

root=$(repo_root)
# Build chatter goes to stderr: stdout is the report.
stage 1 "set-up: Debian packages, then the extension alone, built and installed into build/pg"
if [[ ${verbose} -eq 1 ]]; then
    "${root}/scripts/setup.sh" --private-pg --extension-only >&2
else
    "${root}/scripts/setup.sh" --private-pg --extension-only --quiet >&2
fi
use_private_pg

stage 2 "starting a throwaway PostgreSQL cluster"
pgcluster_start
trap pgcluster_stop EXIT

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION simhash;
CREATE TABLE docs (
    id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL,
    body text NOT NULL,
    fp   bigint GENERATED ALWAYS AS (simhash(body)) STORED,         -- SimHash fingerprint
    lsh  bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED    -- LSH keys, for thresholds
);
SQL

list_files() {
    if [[ ${#paths[@]} -eq 0 ]]; then
        find /usr/share/doc -mindepth 2 -maxdepth 2 -name copyright -type f
    else
        find "${paths[@]}" -type f
    fi
}
stage 3 "loading the texts, with their fingerprints and LSH keys"
start=${SECONDS}
list_files | sort | perl "${root}/scripts/copy_docs.pl" |
    psql -X -q -v ON_ERROR_STOP=1 -c '\copy docs(name, body) from stdin'
log "loaded in $((SECONDS - start)) s"

stage 4 "finding the near duplicates (the report)"
psql -X -q -v ON_ERROR_STOP=1 -v k="${k}" -v t="${t}" -f "${root}/scripts/demo.sql"
log "done in $((SECONDS - demo_start)) s"
