#!/usr/bin/env bash
# Re-measures the default fingerprint of several commits in one session, so that their
# figures can be compared (README, "How the fingerprint got faster").
#
# Usage: bench/bench_history.sh [--rounds N] [--corpus DIR] COMMIT...
#   --rounds N    rounds over all commits, interleaved (default 3)
#   --corpus DIR  a corpus from scripts/make_corpus.sh (default $SIMHASH_CORPUS)
#
# Each commit's core is built from `git archive` with CMake in a temporary directory and
# bench/history_harness.cpp (from this working tree) is linked against it. Every round runs
# every commit on every language (7 runs, their median) and on the English lines (5 runs);
# the table at the end has the median of the rounds, in MB/s of CPU time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

rounds=3
corpus=${SIMHASH_CORPUS:-}
commits=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --corpus) corpus=$2; shift 2 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) commits+=("$1"); shift ;;
    esac
done
[[ -n ${corpus} && -d ${corpus} ]] || { echo "give --corpus DIR or set SIMHASH_CORPUS" >&2; exit 2; }
[[ ${#commits[@]} -gt 0 ]] || { echo "give at least one commit" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT
harness=$(pwd)/bench/history_harness.cpp
for c in "${commits[@]}"; do
    d=${work}/${c}
    mkdir -p "${d}"
    git archive "${c}" | tar -x -C "${d}"
    cmake -S "${d}" -B "${d}/build" -DCMAKE_BUILD_TYPE=Release -DSIMHASH_BENCH=OFF >/dev/null
    cmake --build "${d}/build" -j2 --target simhash_core >/dev/null
    g++ -O2 -std=c++17 -I"${d}/src" "${harness}" "${d}/build/libsimhash_core.a" -o "${d}/harness"
    echo "built ${c}" >&2
done

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
langs=()
for l in "${corpus}"/*/; do langs+=("$(basename "${l}")"); done
results=${work}/results
for round in $(seq "${rounds}"); do
    for c in "${commits[@]}"; do
        for l in "${langs[@]}"; do
            echo "${c} ${l} $("${work}/${c}/harness" "${corpus}/${l}" 7 2>/dev/null | median)" >>"${results}"
        done
        if [[ -d ${corpus}/en ]]; then
            echo "${c} en_lines $("${work}/${c}/harness" "${corpus}/en" 5 lines 2>/dev/null | median)" >>"${results}"
        fi
    done
    echo "round ${round} done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done

columns=("${langs[@]}")
[[ -d ${corpus}/en ]] && columns+=(en_lines)
printf '%-12s' commit
printf ' %9s' "${columns[@]}"
printf '\n'
for c in "${commits[@]}"; do
    printf '%-12s' "${c}"
    for l in "${columns[@]}"; do
        printf ' %9.0f' "$(awk -v c="${c}" -v l="${l}" '$1 == c && $2 == l {print $3}' "${results}" | median)"
    done
    printf '\n'
done
