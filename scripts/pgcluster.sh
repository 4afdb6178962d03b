# shellcheck shell=bash
# A throwaway PostgreSQL cluster for tests and the demo. Source it, don't run it:
#
#   source scripts/pgcluster.sh
#   pgcluster_start
#   trap pgcluster_stop EXIT
#   psql -c 'select 1'          # PGHOST, PGPORT, PGUSER, PGDATABASE point at the cluster
#
# Each start makes a fresh temporary directory holding the data directory, the Unix
# socket (no TCP) and the server log, so runs never collide with each other, with a
# system PostgreSQL, or with the leftovers of a run that was killed.
#
# PostgreSQL refuses to run as root, so when we are root the server runs as the OS user
# `postgres` (or, if that user does not exist, as a system user `simhash` created here).

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# State of the running cluster; empty when none is running.
PGCLUSTER_DIR=
PGCLUSTER_USER=

# _pgcluster_run CMD... : run a command as the user the server belongs to.
_pgcluster_run() {
    if [[ ${EUID} -eq 0 ]]; then
        # Start in the cluster's directory: the server user may not be able to read ours.
        (cd "${PGCLUSTER_DIR}" && runuser -u "${PGCLUSTER_USER}" -- "$@")
    else
        "$@"
    fi
}

# _pgcluster_pick_user : set PGCLUSTER_USER to the OS user that will own the server.
_pgcluster_pick_user() {
    if [[ ${EUID} -ne 0 ]]; then
        PGCLUSTER_USER=$(id -un)
    elif id -u postgres >/dev/null 2>&1; then
        PGCLUSTER_USER=postgres
    else
        if ! id -u simhash >/dev/null 2>&1; then
            log "creating system user 'simhash' to run the PostgreSQL server"
            useradd --system --no-create-home --shell /usr/sbin/nologin simhash
        fi
        PGCLUSTER_USER=simhash
    fi
}

# pgcluster_start : create and start a cluster, and export PGHOST, PGPORT, PGUSER,
# PGDATABASE (and PGCLIENTENCODING=UTF8) for psql, pg_regress and friends. Settings in
# PGCLUSTER_SETTINGS (lines of postgresql.conf, e.g. "shared_buffers = '2GB'") are added
# to the configuration.
pgcluster_start() {
    if [[ -n ${PGCLUSTER_DIR} ]]; then
        log "error: a cluster is already running in ${PGCLUSTER_DIR}"
        return 1
    fi
    [[ -x ${PG_BIN}/initdb ]] ||
        { log "error: ${PG_BIN}/initdb not found: run scripts/setup.sh --no-build"; return 1; }

    _pgcluster_pick_user || return 1
    # As root, use /tmp rather than $TMPDIR: the server user must be able to reach it.
    local tmp=${TMPDIR:-/tmp}
    [[ ${EUID} -eq 0 ]] && tmp=/tmp
    # (Each step checks for failure itself: callers may run this where errexit is off.)
    PGCLUSTER_DIR=$(mktemp -d "${tmp}/simhash-pg.XXXXXX") || return 1
    if [[ ${EUID} -eq 0 ]]; then
        chown "${PGCLUSTER_USER}:" "${PGCLUSTER_DIR}" || { _pgcluster_cleanup; return 1; }
    fi

    local data=${PGCLUSTER_DIR}/data
    local logfile=${PGCLUSTER_DIR}/server.log
    # With no TCP listener the port only names the socket file in our private directory,
    # so any number will do; a random one just makes the socket names differ.
    local port=$((5400 + RANDOM % 100))

    log "initdb in ${data} (server user ${PGCLUSTER_USER})"
    if ! _pgcluster_run "${PG_BIN}/initdb" -D "${data}" -E UTF8 --locale=C.UTF-8 \
        --auth=trust --username=postgres -N >"${PGCLUSTER_DIR}/initdb.log" 2>&1; then
        cat "${PGCLUSTER_DIR}/initdb.log" >&2
        _pgcluster_cleanup
        log "error: initdb failed"
        return 1
    fi

    # Settings for a fast, private, disposable server. Appending keeps the file's owner.
    if ! cat >>"${data}/postgresql.conf" <<EOF

# Added by scripts/pgcluster.sh: a throwaway test cluster.
listen_addresses = ''
unix_socket_directories = '${PGCLUSTER_DIR}'
port = ${port}
fsync = off
synchronous_commit = off
full_page_writes = off
${PGCLUSTER_SETTINGS:-}
EOF
    then
        _pgcluster_cleanup
        return 1
    fi

    if ! _pgcluster_run "${PG_BIN}/pg_ctl" -D "${data}" -l "${logfile}" -w -t 60 start \
        >/dev/null; then
        log "error: the server did not start; its log follows"
        cat "${logfile}" >&2 || true
        # It may have started after all, too slowly: don't leave it running.
        _pgcluster_run "${PG_BIN}/pg_ctl" -D "${data}" -m immediate stop >/dev/null 2>&1 || true
        _pgcluster_cleanup
        return 1
    fi

    export PGHOST=${PGCLUSTER_DIR}
    export PGPORT=${port}
    export PGUSER=postgres
    export PGDATABASE=postgres
    export PGCLIENTENCODING=UTF8
    log "PostgreSQL ${PG_MAJOR} running: PGHOST=${PGHOST} PGPORT=${PGPORT}"
}

# pgcluster_stop : stop the cluster and delete its directory. Does nothing when no
# cluster is running, so it is safe in an EXIT trap and safe to call twice.
pgcluster_stop() {
    [[ -n ${PGCLUSTER_DIR} ]] || return 0
    if [[ -f ${PGCLUSTER_DIR}/data/postmaster.pid ]]; then
        _pgcluster_run "${PG_BIN}/pg_ctl" -D "${PGCLUSTER_DIR}/data" -m fast -w stop \
            >/dev/null || log "warning: pg_ctl stop failed"
    fi
    _pgcluster_cleanup
    unset PGHOST PGPORT PGUSER PGDATABASE PGCLIENTENCODING
}

# _pgcluster_cleanup : delete the cluster's directory and forget it.
_pgcluster_cleanup() {
    rm -rf -- "${PGCLUSTER_DIR}"
    PGCLUSTER_DIR=
}
