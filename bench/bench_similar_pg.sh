#!/usr/bin/env bash
# Verified near duplicates inside PostgreSQL: simhash_similar_pairs() and
# simhash_similar_clusters() over paragraphs of real text, against count(md5(body)) over the
# same table in the same run, on a throwaway cluster. Prints a markdown table of medians.
#
# Usage: bench/bench_similar_pg.sh [--corpus DIR] [--docs N] [--thresholds T,T...]
#                                  [--rounds N] [--work-mem SIZE]
#   --corpus      a corpus made by scripts/make_corpus.sh (default /tmp/simhash-corpus; made
#                 there when missing)
#   --docs        paragraphs to load (default 64000): the blocks between blank lines of the
#                 corpus files, in file order, with at least 30 characters, every language
#   --thresholds  min_similarity values (default 0.5,0.7,0.8,0.9)
#   --rounds      runs of each measurement, the median is printed (default 3)
#   --work-mem    work_mem of the measured sessions (default 4MB, PostgreSQL's default)
#
# Conditions: one backend, no parallel workers, no JIT, shared_buffers 1GB. Each
# measurement runs in a fresh session and times `SELECT count(*) FROM f(...)`: reading the
# rows, fingerprints, candidates, shingle sets, verification and the result.
# Needs the extension installed (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

corpus=/tmp/simhash-corpus
docs=64000
thresholds=0.5,0.7,0.8,0.9
rounds=3
work_mem=4MB
while [[ $# -gt 0 ]]; do
    case $1 in
        --corpus) corpus=$2; shift 2 ;;
        --docs) docs=$2; shift 2 ;;
        --thresholds) thresholds=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --work-mem) work_mem=$2; shift 2 ;;
        -h | --help) sed -n '2,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done
[[ ${docs} =~ ^[1-9][0-9]*$ ]] || die "--docs needs a positive number"
[[ ${rounds} =~ ^[1-9][0-9]*$ ]] || die "--rounds needs a positive number"
IFS=, read -r -a threshold_list <<<"${thresholds}"
if [[ ! -d ${corpus} ]]; then
    log "making the corpus in ${corpus}"
    scripts/make_corpus.sh "${corpus}" >&2
fi

export PGCLUSTER_SETTINGS="shared_buffers = '1GB'
max_parallel_workers_per_gather = 0
jit = off"
pgcluster_start
trap pgcluster_stop EXIT

psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash' \
    -c 'CREATE TABLE docs (id bigint PRIMARY KEY, body text NOT NULL)'
# Paragraphs as COPY rows: id, the block's lines joined by single spaces.
(cd "${corpus}" && find . -type f -name '*.txt' | LC_ALL=C sort) |
    (cd "${corpus}" && perl -Mstrict -we '
        my ($n, $max) = (0, shift);
        binmode STDOUT, ":raw";
        FILE: while (my $f = <STDIN>) {
            chomp $f;
            open(my $fh, "<:raw", $f) or next;
            local $/ = "";
            while (my $p = <$fh>) {
                $p =~ s/\s+/ /g; $p =~ s/^ | $//g;
                $p =~ tr/\0//d; $p =~ s/\\/\\\\/g;
                next if length($p) < 30;
                print ++$n, "\t", $p, "\n";
                last FILE if $n >= $max;
            }
        }' "${docs}") |
    psql -X -q -v ON_ERROR_STOP=1 -c '\copy docs FROM STDIN'
psql -X -q -v ON_ERROR_STOP=1 -c 'VACUUM ANALYZE docs'
read -r rows mbytes < <(psql -X -At -F ' ' -c \
    "SELECT count(*), round(sum(octet_length(body)) / 1e6, 1) FROM docs")
log "loaded ${rows} paragraphs, ${mbytes} MB"

# median_ms SQL : the median over --rounds fresh sessions of SQL's run time, in ms.
median_ms() {
    local sql=$1 i times=()
    for ((i = 0; i < rounds; i++)); do
        times+=("$(psql -X -At -v ON_ERROR_STOP=1 \
            -c "SET work_mem = '${work_mem}'" -c '\timing on' -c "${sql}" |
            sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n 1)")
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

md5_ms=$(median_ms 'SELECT count(md5(body)) FROM docs')
printf '\n%s paragraphs, %s MB, work_mem %s, median of %s runs\n\n' "${rows}" "${mbytes}" "${work_mem}" "${rounds}"
printf '| call | min_similarity | pairs | time | ratio to count(md5(body)) |\n|---|---|---|---|---|\n'
printf '| `count(md5(body))` | | | %.0f ms | 1 |\n' "${md5_ms}"
for t in "${threshold_list[@]}"; do
    for fn in simhash_similar_pairs simhash_similar_clusters; do
        n=$(psql -X -At -c "SET work_mem = '${work_mem}'" \
            -c "SELECT count(*) FROM ${fn}('SELECT id, body FROM docs', ${t})" | tail -n 1)
        ms=$(median_ms "SELECT count(*) FROM ${fn}('SELECT id, body FROM docs', ${t})")
        printf '| `%s` | %s | %s | %.2f s | %.0f |\n' "${fn}" "${t}" "${n}" \
            "$(awk -v m="${ms}" 'BEGIN { print m / 1000 }')" \
            "$(awk -v m="${ms}" -v b="${md5_ms}" 'BEGIN { print m / b }')"
    done
done
