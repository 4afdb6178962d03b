#!/usr/bin/env bash
# Pictures of the benchmark and evaluation results, made with gnuplot from the tables in
# bench/results/ (written by the commands each table names), into docs/img/:
#   lsh_recall.png    candidate recall of the MinHash LSH band shapes against the
#                     threshold, lowest over the collections (eval_natural.md)
#   raw_labels.png    pooled recall and precision against a raw-text label, by verified
#                     threshold, candidates from the LSH keys (eval_natural.md)
#   dedupe_copy.png   COPY of 200,000 rows with the threshold trigger, by policy
#                     (bench_dedupe_08.md)
#   throughput.png    fingerprint MB/s by language against md5 of the same run: the core
#                     (bench_core.txt) and inside PostgreSQL (bench_pg.md)
#   search_latency.png  p50/p99 of simhash_near() against k, one line per table size
#                     (bench_search_64k.md, bench_search_1m.md, bench_search_10m.md)
#   pr_by_k.png       precision and recall of hamming <= k, default fingerprint, per
#                     language (eval_defaults.md)
#   pr_by_threshold.png  recall and precision against a raw-text label by verified
#                     threshold, LSH-key candidates, per language (eval_natural.md)
# A picture whose tables are missing is left out, with a message.
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
wrote=("${out}/lsh_recall.png" "${out}/raw_labels.png" "${out}/dedupe_copy.png")

# The colours of the languages, the same in every picture.
lang_colour() {
    case $1 in
        en) echo '#1f77b4' ;; de) echo '#ff7f0e' ;; fr) echo '#2ca02c' ;;
        ja) echo '#d62728' ;; zh) echo '#9467bd' ;; *) echo '#000000' ;;
    esac
}

# Throughput: the core's summary (lang md5 xxh3 default ...) and bench_pg's man_LANG rows.
core_txt=bench/results/bench_core.txt
pg_md=bench/results/bench_pg.md
if [[ -f ${core_txt} && -f ${pg_md} ]]; then
    awk '/^lang +md5 +xxh3 +default/ { on = 1; next } on && NF == 0 { on = 0 }
         on { printf "%s %s %s\n", $1, $2, $4 }' "${core_txt}" >"${tmp}/core.dat"
    # Columns of the psql table by their titles, then the man_LANG rows.
    awk -F'|' '
        function trim(x) { gsub(/^ +| +$/, "", x); return x }
        /simhash MB\/s/ && !h { for (i = 1; i <= NF; i++) col[trim($i)] = i; h = 1; next }
        h && $0 ~ /^ *man_/ {
            t = trim($col["table"]); sub(/^man_/, "", t)
            printf "%s %s %s %s\n", t, trim($col["md5 MB/s"]), trim($col["simhash MB/s"]), trim($col["simhash/md5"])
        }' "${pg_md}" >"${tmp}/pg.dat"
    [[ -s ${tmp}/core.dat && -s ${tmp}/pg.dat ]] || die "no throughput rows in ${core_txt} or ${pg_md}"
    gnuplot <<GP
set terminal pngcairo size 1000,480 font ',11' noenhanced
set output '${out}/throughput.png'
set multiplot layout 1,2 title 'Fingerprint throughput against md5 in the same run, one core (above the bars: simhash MB/s / md5 MB/s)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.7 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set ylabel 'MB/s'
set offsets 0, 0, graph 0.12, 0
set key outside bottom center horizontal
set title 'C++ core: bench_core (CPU time)'
plot '${tmp}/core.dat' using 2:xtic(1) title 'MD5' lc rgb '#999999', \
     '' using 3 title 'simhash default' lc rgb '#1f77b4', \
     '' using 0:(\$3 > \$2 ? \$3 : \$2):(sprintf('%.2f', \$3 / \$2)) with labels offset 0,0.8 notitle
set title 'In PostgreSQL: count(f(body)), wall clock (bench_pg.sh)'
plot '${tmp}/pg.dat' using 2:xtic(1) title 'md5()' lc rgb '#999999', \
     '' using 3 title 'simhash()' lc rgb '#1f77b4', \
     '' using 0:(\$3 > \$2 ? \$3 : \$2):(sprintf('%.2f', \$3 / \$2)) with labels offset 0,0.8 notitle
unset multiplot
GP
    wrote+=("${out}/throughput.png")
else
    log "left out throughput.png: no ${core_txt} or ${pg_md} (see docs/benchmarks.md)"
fi

# Search latency: planted queries on the max_distance 8 layout, per table size.
plot=""
sizes=0
for size in 64k 1m 10m; do
    f=bench/results/bench_search_${size}.md
    [[ -f ${f} ]] || continue
    grep -q '^Load average at the end' "${f}" || { log "left out ${f}: the run did not finish"; continue; }
    rows=$(sed -n 's/^== Block indexes ( *\([0-9]*\) rows)/\1/p' "${f}")
    awk -F'|' '$1 ~ /max_distance 8/ && $3 ~ /planted/ { gsub(/ /, ""); print $2, $4, $5, $7 }' "${f}" \
        >"${tmp}/search_${size}.dat"
    [[ -s ${tmp}/search_${size}.dat ]] || die "no rows of the max_distance 8 layout in ${f}"
    colour=$(case ${size} in 64k) echo '#2ca02c' ;; 1m) echo '#1f77b4' ;; *) echo '#d62728' ;; esac)
    label="$(sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"${rows}") rows"
    plot+="${plot:+, }'${tmp}/search_${size}.dat' using 1:2 with linespoints lw 2 pt 7 lc rgb '${colour}' title '${label}'"
    plot+=", '${tmp}/search_${size}.dat' using 1:3 with linespoints lw 1 dt 2 pt 6 lc rgb '${colour}' notitle"
    plot+=", '${tmp}/search_${size}.dat' using 1:4 with lines lw 1 dt 3 lc rgb '${colour}' notitle"
    sizes=$((sizes + 1))
done
if [[ ${sizes} -gt 0 ]]; then
    gnuplot <<GP
set terminal pngcairo size 850,560 font ',11' noenhanced
set output '${out}/search_latency.png'
set title "simhash_near(fp, q, k), block indexes of max_distance => 8, queries that have near duplicates:\np50 (solid), p99 (dashed) of each query planned and run; dotted: a sequential scan, same run"
set xlabel 'k (Hamming radius)'
set ylabel 'ms (log scale)'
set logscale y
set xtics 1
set grid
set key bottom right
plot ${plot}
GP
    wrote+=("${out}/search_latency.png")
else
    log "left out search_latency.png: no bench/results/bench_search_*.md"
fi

# Precision and recall by k: the default recipe's row of each language's strict table.
awk '
    /^## / { sec = $2; if ($0 ~ /All languages/) sec = "all"; seen = 0; next }
    /^\| ours shingle=3 bigrams=off \(default\) \|/ && !seen {
        n = split($0, c, "|")
        if (c[3] !~ /^ *[0-9.]+\/[0-9.]+ *$/) next
        seen = 1
        for (i = 3; i < n; i++) { split(c[i], pr, "/"); printf "%s %d %s %s\n", sec, i - 3, pr[1] + 0, pr[2] + 0 }
    }' bench/results/eval_defaults.md >"${tmp}/prk.dat"
plot_p=""
plot_r=""
for lang in de en fr ja zh all; do
    grep "^${lang} " "${tmp}/prk.dat" | awk '{print $2, $3, $4}' >"${tmp}/prk_${lang}.dat"
    [[ -s ${tmp}/prk_${lang}.dat ]] || die "no precision/recall rows for ${lang} in eval_defaults.md"
    style="lw 2 pt 7 lc rgb '$(lang_colour "${lang}")'"
    [[ ${lang} == all ]] && style="lw 3 dt 2 pt 5 lc rgb '#000000'"
    plot_p+="${plot_p:+, }'${tmp}/prk_${lang}.dat' using 1:2 with linespoints ${style} title '${lang}'"
    plot_r+="${plot_r:+, }'${tmp}/prk_${lang}.dat' using 1:3 with linespoints ${style} title '${lang}'"
done
gnuplot <<GP
set terminal pngcairo size 1000,450 font ',11' noenhanced
set output '${out}/pr_by_k.png'
set multiplot layout 1,2 title 'simhash(body), hamming <= k against Jaccard >= 0.8 of token 3-shingles (synthetic edits, strict)'
set xlabel 'k'
set xtics 2
set grid
set yrange [0:1.02]
set key bottom left
set title 'precision'
plot ${plot_p}
set key bottom right
set title 'recall'
plot ${plot_r}
unset multiplot
GP
wrote+=("${out}/pr_by_k.png")

# Precision and recall by verified threshold, per collection: the "LSH keys" rows.
sed -n '/^## Verified threshold against the raw labels/,/^## MinHash/p' "${eval_md}" |
    grep '| LSH keys |' | awk -F'|' '
        function first(x) { sub(/^ +/, "", x); sub(/ .*/, "", x); return x }
        { printf "%s", first($2)
          for (i = 4; i <= 17; i++) printf " %s", first($i)
          printf "\n" }' >"${tmp}/prt.dat"
[[ -s ${tmp}/prt.dat ]] || die "no LSH keys rows in the verified-threshold table of ${eval_md}"
plot_p=""
plot_r=""
column=2
for lang in en de fr ja zh en-copyright-files pooled; do
    if [[ ${lang} != en-copyright-files ]]; then
        style="lw 2 pt 7 lc rgb '$(lang_colour "${lang}")'"
        [[ ${lang} == pooled ]] && style="lw 3 dt 2 pt 5 lc rgb '#000000'"
        plot_r+="${plot_r:+, }'${tmp}/prt.dat' using 1:${column} with linespoints ${style} title '${lang}'"
        plot_p+="${plot_p:+, }'${tmp}/prt.dat' using 1:$((column + 1)) with linespoints ${style} title '${lang}'"
    fi
    column=$((column + 2))
done
gnuplot <<GP
set terminal pngcairo size 1000,450 font ',11' noenhanced
set output '${out}/pr_by_threshold.png'
set xtics 0.05
set multiplot layout 1,2 title 'simhash_lsh candidates verified at min_similarity, against a raw-text label (natural near duplicates)'
set xlabel 'min_similarity (normalized shingles)'
set grid
set yrange [0:1.02]
set key bottom left
set title 'recall of the raw J >= 0.8 pairs'
plot ${plot_r}
set title 'precision (raw J >= 0.7 counts as right)'
plot ${plot_p}
unset multiplot
GP
wrote+=("${out}/pr_by_threshold.png")
log "wrote ${wrote[*]}"
