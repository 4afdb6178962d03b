# shellcheck shell=bash
# Helpers shared by the project's shell scripts. Source it, don't run it:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Provides: log, die, as_root, need_packages, repo_root, use_private_pg, and PG_BIN /
# PG_CONFIG.

# The PostgreSQL major version the extension is built for, and where Debian puts it.
# SIMHASH_PG_BIN may point at another installation's bin directory (for instance a private,
# relocated copy made by scripts/pg_private_copy.sh, so that several checkouts can install
# and test their own builds side by side without root).
PG_MAJOR=15
PG_BIN=${SIMHASH_PG_BIN:-/usr/lib/postgresql/${PG_MAJOR}/bin}
# shellcheck disable=SC2034  # used by the scripts that source this file
PG_CONFIG=${PG_BIN}/pg_config

# log MSG... : print a message to stderr, prefixed with the calling script's name.
log() {
    printf '[%s] %s\n' "$(basename "${0}")" "$*" >&2
}

# die MSG... : log the message and exit with status 1.
die() {
    log "error: $*"
    exit 1
}

# repo_root : print the absolute path of the repository (the parent of scripts/).
repo_root() {
    (cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
}

# as_root CMD... : run a command as root: directly when we are root, else through sudo.
as_root() {
    if [[ ${EUID} -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        log "error: '$*' must run as root, but you are not root and sudo is not installed"
        return 1
    fi
}

# package_installed PKG : true when dpkg says PKG is fully installed.
package_installed() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [[ ${status} == "install ok installed" ]]
}

# Set once `apt-get update` has run in this shell, so that it runs at most once.
_SIMHASH_APT_UPDATED=${_SIMHASH_APT_UPDATED:-}

# apt_update_once : refresh apt's package lists, at most once per shell.
apt_update_once() {
    if [[ -z ${_SIMHASH_APT_UPDATED} ]]; then
        log "apt-get update"
        as_root env DEBIAN_FRONTEND=noninteractive \
            apt-get -o DPkg::Lock::Timeout=300 update -q || return 1
        _SIMHASH_APT_UPDATED=1
    fi
}

# need_packages PKG... : install whichever of the Debian packages are not installed yet.
# Does nothing (and needs no root) when all of them are already installed.
need_packages() {
    local pkg
    local -a missing=()
    for pkg in "$@"; do
        package_installed "${pkg}" || missing+=("${pkg}")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        return 0
    fi
    log "installing: ${missing[*]}"
    # (Failures are checked here too, as callers may run this where errexit is off.)
    apt_update_once || return 1
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"
}

# use_private_pg : unless SIMHASH_PG_BIN already names an installation, point PG_BIN,
# PG_CONFIG and SIMHASH_PG_BIN (exported, for the scripts this one runs) at a private copy
# of PostgreSQL made by scripts/pg_private_copy.sh, so that `make install` and the
# throwaway clusters never touch the system's PostgreSQL files. The copy lives in
# build/pg, or under /var/tmp when the server's user could not read the checkout; it is
# made again when the system's PostgreSQL is newer. Needs PostgreSQL and its server headers
# installed (scripts/setup.sh --no-build).
use_private_pg() {
    [[ -n ${SIMHASH_PG_BIN:-} ]] && return 0
    local root dest server_bin
    root=$(repo_root)
    dest=${root}/build/pg
    if [[ ${EUID} -eq 0 ]] && id postgres >/dev/null 2>&1 &&
        ! runuser -u postgres -- test -x "${root}/scripts" 2>/dev/null; then
        dest=/var/tmp/simhash-pg-$(printf '%s' "${root}" | md5sum | cut -c1-12)
    fi
    server_bin=/usr/lib/postgresql/${PG_MAJOR}/bin/postgres
    if [[ ! -x ${dest}/lib/postgresql/${PG_MAJOR}/bin/pg_config ||
        ${server_bin} -nt ${dest}/lib/postgresql/${PG_MAJOR}/bin/postgres ]]; then
        log "making a private copy of PostgreSQL ${PG_MAJOR} in ${dest} (the system's stays untouched)"
        "${root}/scripts/pg_private_copy.sh" "${dest}" >/dev/null
    fi
    SIMHASH_PG_BIN=$(cd "${dest}/lib/postgresql/${PG_MAJOR}/bin" && pwd -P)
    export SIMHASH_PG_BIN
    PG_BIN=${SIMHASH_PG_BIN}
    PG_CONFIG=${PG_BIN}/pg_config
}
