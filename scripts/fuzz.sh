#!/usr/bin/env bash
# Fuzzing: the libFuzzer targets of the PostgreSQL-free core and its C ABI (test/fuzz/,
# under AddressSanitizer and UndefinedBehaviorSanitizer), and the SQL-level fuzzer
# (test/fuzz/sql_fuzz.sh).
#
# Usage: scripts/fuzz.sh [--smoke | --long | --seconds N] [--target NAME]... [--sql | --sql-only]
#                        [--verbose]
#   --smoke      about 60 s of fuzzing in all, 7 s a target (the default; scripts/test.sh)
#   --long       at least 10 million executions in all (each target a number of runs in
#                proportion to its speed, at most 40 minutes each; one to two hours on
#                2 shared cores); prints the total
#   --seconds N  N seconds a target
#   --target T   only fuzz_T (tokenizer, fingerprint, features, tsvector, convert,
#                similarity, pairs, blocks); may be repeated
#   --sql        then the SQL-level fuzzer too, at the smoke size (--long: the long size)
#   --sql-only   only the SQL-level fuzzer
#   --verbose    show the build's output (default: build-fuzz/build.log)
#
# Builds build-fuzz/ with clang (clang-14 and libclang-rt-14-dev are installed when
# missing), makes the seed corpora from text on this machine (test/fuzz/make_seeds.pl:
# copyright files, man pages, locale definitions, plus test/fuzz/seeds/), and runs each
# target in turn from its seeds and the corpus earlier runs left in build-fuzz/corpus/T/
# (--smoke: from the seeds alone).
# Prints one table: target, executions, crashes, seconds. An input that crashes, fails a
# check or runs longer than 30 s is kept in build-fuzz/crashes/T/ and the script exits
# non-zero; reproduce it with build-fuzz/fuzz_T build-fuzz/crashes/T/FILE.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(repo_root)"

mode=smoke
seconds=
sql=none
verbose=0
selected=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --smoke) mode=smoke; shift ;;
        --long) mode=long; shift ;;
        --seconds)
            [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || die "--seconds needs a positive number"
            mode=seconds; seconds=$2; shift 2 ;;
        --target)
            [[ $# -ge 2 ]] || die "--target needs a name"
            selected+=("${2#fuzz_}"); shift 2 ;;
        --sql) sql=also; shift ;;
        --sql-only) sql=only; shift ;;
        --verbose) verbose=1; shift ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done

# The targets: name, the longest input, and the runs of --long: 10.4 million in all, in
# proportion to each target's speed so that each gets about the same time (convert, the
# cheapest, gets half of them; the targets that run a reference tokenizer or brute force
# on every input run at a few hundred to a few thousand inputs a second).
all_targets=(tokenizer fingerprint features tsvector convert similarity pairs blocks)
declare -A max_len=([tokenizer]=1500 [fingerprint]=1500 [features]=1500 [tsvector]=1500
    [convert]=256 [similarity]=2500 [pairs]=1024 [blocks]=64)
declare -A long_runs=([tokenizer]=600000 [fingerprint]=400000 [features]=1500000
    [tsvector]=1000000 [convert]=5350000 [similarity]=250000 [pairs]=100000 [blocks]=1200000)
[[ ${#selected[@]} -gt 0 ]] || selected=("${all_targets[@]}")
for t in "${selected[@]}"; do
    [[ -n ${max_len[${t}]:-} ]] || die "unknown target: ${t} (one of: ${all_targets[*]})"
done

out=build-fuzz
status=0

# --- Build ---------------------------------------------------------------------------

# quiet CMD... : run a build step; its output goes to build-fuzz/build.log unless --verbose.
quiet() {
    if [[ ${verbose} -eq 1 ]]; then
        "$@"
        return
    fi
    "$@" >>"${out}/build.log" 2>&1 || {
        log "failed: $*; the last lines of ${out}/build.log:"
        tail -n 40 "${out}/build.log" >&2
        return 1
    }
}

build() {
    need_packages clang-14 libclang-rt-14-dev cmake make libxxhash-dev perl || return 1
    mkdir -p "${out}"
    log "building the fuzz targets with clang, ASan and UBSan (${out}/)"
    quiet cmake -S . -B "${out}" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIMHASH_FUZZ=ON &&
        quiet cmake --build "${out}" -j"$(nproc)"
}

# The seed corpora, made again when the seed maker or the committed seeds change.
seeds() {
    local stamp
    stamp=$(cat test/fuzz/make_seeds.pl test/fuzz/seeds/* | md5sum | cut -c1-32)
    if [[ -f ${out}/seeds/.stamp && $(cat "${out}/seeds/.stamp") == "${stamp}" ]]; then
        return 0
    fi
    log "making the seed corpora from text on this machine (test/fuzz/make_seeds.pl)"
    test/fuzz/make_seeds.pl --out "${out}" --per-script 24 || return 1
    echo "${stamp}" >"${out}/seeds/.stamp"
}

# --- Running -------------------------------------------------------------------------

# 12345678 -> 12,345,678
grouped() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }

rows=()
total_execs=0
total_crashes=0
total_seconds=0

# run_target T : fuzz one target; adds a row to the table.
run_target() {
    local t=$1 bin=${out}/fuzz_$1 corpus=${out}/corpus/$1 crashes=${out}/crashes/$1
    local logfile=${out}/logs/$1.log
    # The smoke run starts from the seeds alone, so that it takes the same short time
    # however large the corpus of the long runs has grown.
    if [[ ${mode} == smoke ]]; then
        corpus=${out}/corpus-smoke/$1
        rm -rf -- "${corpus}"
    fi
    mkdir -p "${corpus}" "${crashes}" "${out}/logs"
    local -a limit
    case ${mode} in
        smoke) limit=(-max_total_time=7) ;;
        seconds) limit=(-max_total_time="${seconds}") ;;
        long) limit=(-runs="${long_runs[${t}]}" -max_total_time=2400) ;;
    esac
    local -a extra=()
    [[ -f test/fuzz/$1.dict ]] && extra+=(-dict="test/fuzz/$1.dict")
    local before after start=${SECONDS} rc=0
    before=$(find "${crashes}" -type f | wc -l)
    log "fuzz_${t}: ${limit[*]}"
    "${bin}" "${limit[@]}" "${extra[@]}" -max_len="${max_len[${t}]}" -timeout=30 \
        -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="${crashes}/" \
        "${corpus}" "${out}/seeds/${t}" >"${logfile}" 2>&1 || rc=$?
    local secs=$((SECONDS - start))
    after=$(find "${crashes}" -type f | wc -l)
    local execs
    execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "${logfile}" | tail -n 1)
    if [[ -z ${execs} ]]; then  # stopped early: the last progress line
        execs=$(grep -oE '^#[0-9]+' "${logfile}" | tail -n 1 | tr -d '#')
    fi
    execs=${execs:-0}
    local crashed=$((after - before))
    if [[ ${rc} -ne 0 && ${crashed} -eq 0 ]]; then crashed=1; fi
    if [[ ${crashed} -gt 0 ]]; then
        status=1
        log "fuzz_${t} FAILED (exit ${rc}); the input is kept in ${crashes}/; the end of ${logfile}:"
        grep -E 'FUZZ CHECK|ERROR|SUMMARY|runtime error|Test unit written' "${logfile}" | head -n 20 >&2 || true
        tail -n 30 "${logfile}" >&2
    fi
    rows+=("$(printf '| %s | %s | %d | %d |' "fuzz_${t}" "$(grouped "${execs}")" "${crashed}" "${secs}")")
    total_execs=$((total_execs + execs))
    total_crashes=$((total_crashes + crashed))
    total_seconds=$((total_seconds + secs))
}

if [[ ${sql} != only ]]; then
    build || die "the fuzz targets did not build"
    seeds || die "the seed corpora could not be made"
    for t in "${selected[@]}"; do
        run_target "${t}"
    done
    printf '\n| target | executions | crashes | seconds |\n|---|---|---|---|\n'
    printf '%s\n' "${rows[@]}"
    printf '| total | %s | %d | %d |\n' "$(grouped "${total_execs}")" "${total_crashes}" "${total_seconds}"
    if [[ ${mode} == long && ${#selected[@]} -eq ${#all_targets[@]} && ${total_execs} -lt 10000000 ]]; then
        log "warning: ${total_execs} executions, fewer than the 10 million of --long (targets hit their time limit)"
    fi
fi

if [[ ${sql} != none ]]; then
    sql_size=smoke
    [[ ${mode} == long ]] && sql_size=long
    test/fuzz/sql_fuzz.sh "--${sql_size}" || status=1
fi
exit "${status}"
