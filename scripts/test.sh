#!/usr/bin/env bash
# The project's one test command: installs what is missing, builds, and runs every test.
#
# Usage: scripts/test.sh [--verbose]
#   --verbose  show the set-up's apt, CMake and compiler output (default: build/setup.log)
#
# Stages, in order (each runs even when an earlier one failed, so the summary is whole):
#   setup          scripts/setup.sh --private-pg --quiet: packages, Release build (build/), the
#                  extension installed into a private copy of PostgreSQL (build/pg): the
#                  system's PostgreSQL files are left alone
#   ctest-release  the C++ unit tests of the Release build
#   ctest-asan     a Debug build with AddressSanitizer + UBSan (build-asan/) and its tests
#   pg_regress     `make installcheck` against a throwaway PostgreSQL cluster: the
#                  pg_regress files, then the isolation specs (pg_isolation_regress);
#                  then each pg_regress file alone, in a fresh database
#   hostile        test/hostile/run.sh: the pg_regress files again, in a database where a
#                  role that is not a superuser planted overloads of every function of the
#                  extension in its schema and in public (test/hostile/plant.sql), installed
#                  once by a superuser and once by that role (trusted); none may run inside
#                  the extension's own calls
#   tap            scripts/tap.sh: the TAP tests (t/, PostgreSQL::Test::Cluster) as the server
#                  user: kill -9 during a COPY through the dedupe trigger and during
#                  simhash_create_index, a promoted streaming replica, a small lock table;
#                  50,000 rows (SIMHASH_TAP_ROWS; scripts/reliability.sh runs 500,000)
#   stress         test/stress/dedupe_stress.sh: 16 concurrent writers of near duplicates,
#                  one row a transaction, then loads through simhash_dedupe_insert (the
#                  filter, the plan): 16 writers of 40-row loads (lock keys) and of
#                  400-row loads (the table lock); 16 writers of one 400-row INSERT each
#                  after LOCK TABLE (the trigger's table filter, k = 3, and its table
#                  index, 0.8); no deadlock allowed
#   dump           test/dump/dump_restore.sh: pg_dump and restore keep layouts, indexes,
#                  the dedupe trigger and the answers
#   examples       examples/run.sh: the example programs with real drivers, Python
#                  (psycopg 3) and Node.js (node-postgres, `npm ci` from the lock file on
#                  the first run), each checking its answers: the dedupe trigger's 23505 and
#                  the key in its DETAIL, a parameterized threshold search against brute
#                  force, a dedupe job with simhash_similar_clusters and its NOTICEs
#   fuzz           scripts/fuzz.sh --smoke --sql: each libFuzzer target of the core and
#                  its C ABI for 7 s under ASan + UBSan (build-fuzz/, clang), then the SQL
#                  fuzzer at its smoke size in five database encodings
#   citus          test/citus/run.sh: a coordinator and two workers; Citus is built first
#                  from ../shared/citus (or SIMHASH_CITUS_SRC) when it is missing; without
#                  that source and without Citus the stage is skipped
#   system-untouched  the system's simhash files (library, control file, SQL scripts) are
#                  byte for byte what they were before the run, or still absent
#
# Ends with a summary, a line a stage (setup included): PASS, FAIL, or SKIP with the reason
# (a stage that had nothing to run: citus without Citus); a passing stage that left some
# checks out (unit tests that need SIMHASH_CORPUS) gets a SKIP line for them too. Then the
# line "N passed, N failed" (", N skipped" when a stage was skipped) counting the stages,
# the setup included; exits non-zero when any of them failed.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/pgcluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/pgcluster.sh"

cd "$(repo_root)"
trap pgcluster_stop EXIT

setup_args=(--private-pg --quiet)
for arg in "$@"; do
    case ${arg} in
        --verbose) setup_args=(--private-pg) ;;
        -h | --help) sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: ${arg} (scripts/test.sh [--verbose])" ;;
    esac
done

jobs=$(nproc)
passed=0
failed=0
setup_ok=1
summary=()

# record NAME STATUS SECONDS [WHY] : count a stage's result and remember it for the
# summary. Status 0 passed, SKIPPED (with WHY) skipped, anything else failed.
SKIPPED=77
skipped=0
record() {
    local name=$1 status=$2 seconds=$3 why=${4:-}
    if [[ ${status} -eq 0 ]]; then
        passed=$((passed + 1))
        summary+=("PASS  ${name} (${seconds} s)")
    elif [[ ${status} -eq ${SKIPPED} ]]; then
        skipped=$((skipped + 1))
        summary+=("SKIP  ${name}: ${why}")
    else
        failed=$((failed + 1))
        summary+=("FAIL  ${name} (${seconds} s)")
    fi
}

# skipped_checks LOG : the checks a passing stage left out, from its output: ctest's list
# of tests that did not run (GTEST_SKIP), and lines "SKIP <what>: <why>" of our scripts.
skipped_checks() {
    local out=$1
    sed -n '/The following tests did not run:/,/^$/s/^[[:space:]]*[0-9]* - \([^ ]*\).* (Skipped)$/\1/p' "${out}" |
        awk '{ n++; names = names (n > 1 ? ", " : "") $0; other += $0 !~ /RealCorpus/ }
             END { if (n) printf "%d unit tests skipped (%s): %s\n", n, names,
                   other ? "see ctest --output-on-failure -V" : "they need SIMHASH_CORPUS, a corpus from scripts/make_corpus.sh" }'
    sed -n 's/^SKIP \(.*\)$/\1/p' "${out}"
}

# run_stage NAME FUNCTION : run a test stage and record it. The stage functions chain
# their steps with && (errexit is off in a function called before `||`), and return
# non-zero on failure, or SKIPPED (77) after printing "SKIP <name>: <why>" when they had
# nothing to run; checks a passing stage skipped get a SKIP line of their own in the summary.
run_stage() {
    local name=$1 fn=$2 start=${SECONDS} status=0 out why line
    out=$(mktemp)
    log "===== ${name}"
    "${fn}" > >(tee "${out}") 2>&1 || status=$?
    wait $! || true
    why=$(skipped_checks "${out}")
    if [[ ${status} -eq ${SKIPPED} ]]; then
        why=$(sed -n "s/^${name}: //p" <<<"${why}" | head -n 1)
        record "${name}" "${SKIPPED}" $((SECONDS - start)) "${why:-no reason given}"
    else
        record "${name}" "${status}" $((SECONDS - start))
        if [[ ${status} -eq 0 && -n ${why} ]]; then
            while IFS= read -r line; do summary+=("SKIP  ${name}, in part: ${line}"); done <<<"${why}"
        fi
    fi
    rm -f "${out}"
    case ${status} in
        0) ;;
        "${SKIPPED}") log "===== ${name} skipped" ;;
        *) log "===== ${name} FAILED (status ${status})" ;;
    esac
}

stage_ctest_release() {
    ctest --test-dir build --output-on-failure --no-tests=error -j"${jobs}"
}

stage_ctest_asan() {
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSIMHASH_SANITIZE=ON &&
        cmake --build build-asan -j"${jobs}" &&
        ctest --test-dir build-asan --output-on-failure --no-tests=error -j"${jobs}"
}

stage_pg_regress() {
    local status=0
    pgcluster_start || return 1
    # TAP_TESTS= : the TAP tests start servers of their own, as another user (stage tap).
    make PG_CONFIG="${PG_CONFIG}" installcheck TAP_TESTS= || status=$?
    # Each file alone too, in a fresh database: none may depend on another having run.
    if [[ ${status} -eq 0 ]]; then
        local t
        for t in $(make -s print-regress); do
            make PG_CONFIG="${PG_CONFIG}" installcheck REGRESS="${t}" ISOLATION= TAP_TESTS= >/dev/null ||
                { log "${t} fails when run alone"; status=1; break; }
        done
    fi
    if [[ ${status} -ne 0 ]]; then
        local diffs
        for diffs in regression.diffs output_iso/regression.diffs; do
            if [[ -f ${diffs} ]]; then
                log "${diffs}:"
                cat "${diffs}" >&2
            fi
        done
        log "last lines of the server log:"
        tail -n 40 "${PGCLUSTER_DIR}/server.log" >&2 || true
    fi
    pgcluster_stop
    return "${status}"
}

stage_hostile() {
    test/hostile/run.sh
}

stage_tap() {
    scripts/tap.sh --rows "${SIMHASH_TAP_ROWS:-50000}"
}

stage_stress() {
    test/stress/dedupe_stress.sh &&
        test/stress/dedupe_stress.sh --mode bulk --rows-per-client 400 --batch 40 &&
        test/stress/dedupe_stress.sh --mode bulk --rows-per-client 400 --batch 400 &&
        test/stress/dedupe_stress.sh --mode locked --rows-per-client 400 --batch 400 --limits "3 0.8"
}

stage_dump() {
    test/dump/dump_restore.sh
}

stage_examples() {
    examples/run.sh
}

stage_fuzz() {
    scripts/fuzz.sh --smoke --sql
}

# Citus is not in Debian's archive: its source travels in ../shared/citus beside the
# project (SIMHASH_CITUS_SRC elsewhere), built into the PostgreSQL the tests use when
# missing (about 10 minutes on 2 cores, once). Without that source the stage is skipped.
stage_citus() {
    local src=${SIMHASH_CITUS_SRC:-$(repo_root)/../shared/citus}
    if [[ ! -f $("${PG_CONFIG}" --pkglibdir)/citus.so && -x ${src}/build.sh ]]; then
        log "building Citus from ${src} into $("${PG_CONFIG}" --pkglibdir)"
        "${src}/build.sh" "${PG_CONFIG}" || return 1
    fi
    test/citus/run.sh
}

# A stage that needs what setup builds or installs is failed, not run, when setup failed:
# its result would be about stale or missing files.
needs_setup() {
    local name=$1 fn=$2
    if [[ ${setup_ok} -eq 1 ]]; then
        run_stage "${name}" "${fn}"
    else
        log "===== ${name}: not run, because the setup failed"
        record "${name}" 1 0
    fi
}

# The system's files of the extension, before: a checksum each, or "absent".
system_files() {
    local f
    for f in "/usr/lib/postgresql/${PG_MAJOR}/lib/simhash.so" \
        "/usr/share/postgresql/${PG_MAJOR}/extension/simhash.control" \
        "/usr/share/postgresql/${PG_MAJOR}/extension/"simhash--*.sql; do
        if [[ -e ${f} ]]; then sha256sum "${f}"; else echo "absent ${f}"; fi
    done
}
system_before=$(system_files)

stage_system_untouched() {
    local now
    now=$(system_files)
    [[ ${now} == "${system_before}" ]] ||
        { log "the system's PostgreSQL files changed:"; diff <(echo "${system_before}") <(echo "${now}") >&2; return 1; }
}

start=${SECONDS}
log "===== setup"
if scripts/setup.sh "${setup_args[@]}" && use_private_pg; then
    record setup 0 $((SECONDS - start))
else
    setup_ok=0
    record setup 1 $((SECONDS - start))
    log "===== setup FAILED"
fi

needs_setup ctest-release stage_ctest_release
run_stage ctest-asan stage_ctest_asan
needs_setup pg_regress stage_pg_regress
needs_setup hostile stage_hostile
needs_setup tap stage_tap
needs_setup stress stage_stress
needs_setup dump stage_dump
needs_setup examples stage_examples
needs_setup fuzz stage_fuzz
needs_setup citus stage_citus
run_stage system-untouched stage_system_untouched

printf '\n' >&2
printf '%s\n' "${summary[@]}" >&2
if [[ ${skipped} -gt 0 ]]; then
    printf '%d passed, %d failed, %d skipped\n' "${passed}" "${failed}" "${skipped}"
else
    printf '%d passed, %d failed\n' "${passed}" "${failed}"
fi
[[ ${failed} -eq 0 && ${setup_ok} -eq 1 ]]
