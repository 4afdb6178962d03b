#!/usr/bin/env bash
# Compiles the PostgreSQL glue (src/pg/*.c, the only files that include server headers)
# against the server headers of other PostgreSQL versions, with the warning flags of a PGXS
# build and -Werror, to check the PG_VERSION_NUM guards of src/pg/compat.h; each file
# twice, as built and with -DSIMHASH_FORCE_FALLBACKS (see compat.h). It compiles, it does
# not run: only the PostgreSQL installed here (15) runs the tests.
#
# Usage: scripts/check_pg_versions.sh [--no-local] [--pg-src DIR]... [--pg-include DIR]...
#                                     [TREES_DIR]...
#   --pg-src DIR      a PostgreSQL source tree (a release tarball unpacked, or
#                     `git archive REL_16_4` of the postgres repository); configured here if
#                     it is not yet (./configure --without-readline --without-zlib
#                     --without-icu --without-openssl) and its generated headers made
#                     (make -C src/backend generated-headers; needs perl, bison and flex)
#   --pg-include DIR  installed server headers, as `pg_config --includedir-server` prints
#                     them: for instance usr/include/postgresql/17/server of a
#                     postgresql-server-dev-17 package unpacked with `dpkg -x`
#   TREES_DIR         a directory whose subdirectories are source trees (each one with a
#                     configure script) or server include directories (each with a
#                     pg_config.h): the same as --pg-src or --pg-include for each
#   --no-local        leave out the headers of the PostgreSQL the Makefile builds against
#                     (pg_config, PostgreSQL 15 here), which are checked by default
# Prints one line per version and ends with "versions: N passed, M failed"; exits 1 when
# one failed, 2 when there was nothing to check. The compiler's messages of a failed file
# are printed in full. Takes about 10 s per version (plus about 1 min to configure a tree).
# How the trees of docs/testing.md were found: see "Other PostgreSQL versions" there.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root=$(repo_root)
local_headers=1
srcs=()
includes=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --pg-src) [[ $# -ge 2 ]] || die "--pg-src needs a directory"; srcs+=("$2"); shift 2 ;;
        --pg-include) [[ $# -ge 2 ]] || die "--pg-include needs a directory"; includes+=("$2"); shift 2 ;;
        --no-local) local_headers=0; shift ;;
        -h | --help) sed -n '2,26s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) die "unknown option: $1 (try --help)" ;;
        *)
            [[ -d $1 ]] || die "not a directory: $1"
            found=0
            for d in "$1"/*/; do
                d=${d%/}
                if [[ -x ${d}/configure ]]; then
                    srcs+=("${d}"); found=1
                elif [[ -f ${d}/pg_config.h ]]; then
                    includes+=("${d}"); found=1
                fi
            done
            [[ ${found} -eq 1 ]] || die "$1 has no PostgreSQL source tree or include directory in it"
            shift
            ;;
    esac
done

if [[ ${local_headers} -eq 1 ]]; then
    if [[ -x ${PG_CONFIG} ]]; then
        includes=("$("${PG_CONFIG}" --includedir-server)" "${includes[@]}")
    else
        log "no ${PG_CONFIG}: leaving out the local headers"
    fi
fi
if [[ ${#srcs[@]} -eq 0 && ${#includes[@]} -eq 0 ]]; then
    cat >&2 <<'EOF'
check_pg_versions.sh: nothing to check. It needs the server headers of the versions to
check, which this script does not download:
  - a source tree per version (--pg-src DIR): a release tarball of PostgreSQL unpacked, or
    `git --git-dir=POSTGRES.git archive REL_16_4 | tar -x -C DIR` from a clone of the
    postgres repository; configure and the generated headers are made here (needs perl,
    bison, flex: apt-get install bison flex);
  - or installed server headers (--pg-include DIR): for instance
    `apt-get download postgresql-server-dev-17` from a Debian release that has it, then
    `dpkg -x postgresql-server-dev-17_*.deb ROOT` and
    --pg-include ROOT/usr/include/postgresql/17/server.
See docs/testing.md, "Other PostgreSQL versions".
EOF
    exit 2
fi

# The warning flags of the Makefile's PGXS build here, plus -Werror: a declaration missing
# in some version is only a warning in C (implicit declaration), so it must fail the check.
base_flags=(-Wall -Wmissing-prototypes -Wpointer-arith -Wdeclaration-after-statement
    -Werror=vla -Wendif-labels -Wmissing-format-attribute -Wimplicit-fallthrough=3
    -Wcast-function-type -Wformat-security -fno-strict-aliasing -fwrapv
    -fexcess-precision=standard -Wno-format-truncation -Wno-stringop-truncation)
if [[ -x ${PG_CONFIG} ]]; then
    read -r -a base_flags <<<"$("${PG_CONFIG}" --cflags | tr ' ' '\n' |
        grep -E '^-W|^-f(no-strict-aliasing|wrapv|excess-precision)' | tr '\n' ' ')"
fi
base_flags+=(-O2 -Werror -D_GNU_SOURCE)

# prepare_tree DIR : configure a source tree and make its generated headers, if needed.
prepare_tree() {
    local dir=$1
    if [[ ! -f ${dir}/src/include/pg_config.h ]]; then
        if ! command -v bison >/dev/null || ! command -v flex >/dev/null; then
            die "configuring ${dir} needs bison and flex (apt-get install bison flex)"
        fi
        log "configuring ${dir} (log: ${dir}/config-simhash.log)"
        (cd "${dir}" && ./configure --without-readline --without-zlib --without-icu \
            --without-openssl) >"${dir}/config-simhash.log" 2>&1 ||
            die "configure failed in ${dir}; see ${dir}/config-simhash.log"
    fi
    if [[ ! -f ${dir}/src/include/utils/fmgroids.h || ! -f ${dir}/src/include/catalog/pg_type_d.h ]]; then
        log "generated headers of ${dir} (log: ${dir}/headers-simhash.log)"
        make -C "${dir}/src/backend" generated-headers >"${dir}/headers-simhash.log" 2>&1 ||
            die "make generated-headers failed in ${dir}; see ${dir}/headers-simhash.log"
    fi
}

# version_of INCLUDE_DIR : the PG_VERSION string of those headers.
version_of() {
    sed -n 's/^#define PG_VERSION "\(.*\)"$/\1/p' "$1/pg_config.h"
}

# check INCLUDE_DIR [EXTRA_FLAGS...] : compile every glue file; print the result line.
passed=0
failed=0
check() {
    local inc=$1
    shift
    local version f out ok=1 obj
    version=$(version_of "${inc}")
    obj=$(mktemp)
    for f in "${root}"/src/pg/*.c; do
        # As built, and with the replacements of compat.h forced wherever they can be.
        for forced in "" -DSIMHASH_FORCE_FALLBACKS; do
            if ! out=$(gcc "${base_flags[@]}" "$@" ${forced:+"${forced}"} -I"${root}/src" \
                -I"${inc}" -c -o "${obj}" "${f}" 2>&1); then
                ok=0
                printf '%s\n' "${out}" >&2
                log "PostgreSQL ${version}: ${f#"${root}"/} does not compile ${forced:+with ${forced}}"
            elif [[ -n ${out} ]]; then
                printf '%s\n' "${out}" >&2
            fi
        done
    done
    rm -f "${obj}"
    if [[ ${ok} -eq 1 ]]; then
        printf 'PostgreSQL %-12s ok      (%s)\n' "${version}" "${inc}"
        passed=$((passed + 1))
    else
        printf 'PostgreSQL %-12s FAILED  (%s)\n' "${version}" "${inc}"
        failed=$((failed + 1))
    fi
}

for inc in "${includes[@]}"; do
    [[ -f ${inc}/pg_config.h ]] || die "${inc} has no pg_config.h: not a server include directory"
    check "${inc}"
done
for dir in "${srcs[@]}"; do
    [[ -x ${dir}/configure ]] || die "${dir} is not a PostgreSQL source tree (no configure)"
    prepare_tree "${dir}"
    # The tree's own warning flags too (PostgreSQL 16 added -Wshadow=compatible-local).
    read -r -a own <<<"$(sed -n 's/^CFLAGS = //p' "${dir}/src/Makefile.global" | tr ' ' '\n' |
        grep -E '^-W' | tr '\n' ' ')"
    check "${dir}/src/include" "${own[@]}"
done
echo "versions: ${passed} passed, ${failed} failed"
[[ ${failed} -eq 0 ]]
