#!/usr/bin/env bash
# Pictures of the benchmark and evaluation results, made with gnuplot from the tables in
# bench/results/ (written by the commands each table names), into docs/img/:
#   lsh_recall.png    candidate recall of the MinHash LSH band shapes against the
#                     threshold, lowest over the collections (eval_natural.md)
#   raw_labels.png    pooled recall and precision against a raw-text label, by verified
#                     threshold, candidates from the LSH keys (eval_natural.md)
#   dedupe_copy.png   COPY of 200,000 rows with the threshold trigger, by policy
#                     (bench_dedupe_08.md)
#
# Usage: bench/plot.sh        (installs gnuplot-nox when missing)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
need_packages gnuplot-nox >/dev/null

out=docs/img
mkdir -p "${out}"
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
eval_md=bench/results/eval_natural.md

# LSH: one line per band shape; columns t, lowest recall (thresholds 0.5 .. 0.9).
sed -n '/^## MinHash LSH candidates/,/^Per collection/p' "${eval_md}" | grep '^| [0-9]' |
    awk -F'|' '{
        name = $2; gsub(/^ +| +$/, "", name); gsub(/ /, "", name)
        for (t = 0; t < 5; t++) printf "%s %.1f %s\n", name, 0.5 + t / 10, $(4 + 3 * t)
    }' >"${tmp}/lsh.dat"
shapes=$(awk '{print $1}' "${tmp}/lsh.dat" | uniq)
plot=""
for s in ${shapes}; do
    grep "^${s} " "${tmp}/lsh.dat" | awk '{print $2, $3}' >"${tmp}/lsh_${s}.dat"
    plot+="${plot:+, }'${tmp}/lsh_${s}.dat' using 1:2 with linespoints title '${s//x/ × }'"
done
gnuplot <<GP
set terminal pngcairo size 800,500 font ',11' noenhanced
set output '${out}/lsh_recall.png'
set title 'MinHash LSH: candidate recall, lowest over the collections (natural near duplicates)'
set xlabel 'Jaccard threshold t'
set ylabel 'share of pairs with J >= t that share a key'
set key bottom right
set grid
set yrange [0:1.02]
plot ${plot}
GP

# Raw labels: the "LSH keys" rows of the verified-threshold table; pooled R and P.
sed -n '/^## Verified threshold against the raw labels/,/^## MinHash/p' "${eval_md}" |
    grep '| LSH keys |' | awk -F'|' '{
        p = $(NF - 2); sub(/ *\(.*/, "", p)
        printf "%s %s %s\n", $2, $(NF - 3), p
    }' >"${tmp}/raw.dat"
gnuplot <<GP
set terminal pngcairo size 800,500 font ',11' noenhanced
set output '${out}/raw_labels.png'
set title 'Against a raw-text label (J >= 0.8 near duplicates; J >= 0.7 counts as right), pooled'
set xlabel 'min_similarity (normalized shingles)'
set ylabel 'share'
set key bottom left
set grid
set yrange [0.4:1.02]
plot '${tmp}/raw.dat' using 1:2 with linespoints title 'recall', \
     '${tmp}/raw.dat' using 1:3 with linespoints title 'precision'
GP

# Dedupe COPY: the rows of the result table (kind, seconds).
grep '| *[0-9.]* *| *[0-9]* *| *[0-9]* *| *[0-9.]* *$' bench/results/bench_dedupe_08.md |
    awk -F'|' '{ k = $2; gsub(/^ +| +$/, "", k); printf "\"%s\" %s\n", k, $3 }' >"${tmp}/copy.dat"
gnuplot <<GP
set terminal pngcairo size 700,450 font ',11' noenhanced
set output '${out}/dedupe_copy.png'
set title 'COPY of 200,000 real rows, similarity threshold 0.8 (GIN index on the LSH keys)'
set ylabel 'seconds'
set style fill solid 0.6
set boxwidth 0.6
set grid ytics
set yrange [0:*]
plot '${tmp}/copy.dat' using 0:2:xtic(1) with boxes notitle
GP
log "wrote ${out}/lsh_recall.png, ${out}/raw_labels.png, ${out}/dedupe_copy.png"
