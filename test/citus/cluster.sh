# A throwaway Citus cluster for test/citus/run.sh and bench/bench_citus.sh: a coordinator
# and two workers, each a PostgreSQL server on a Unix socket in a temporary directory, with
# shared_preload_libraries = 'citus' and the extensions citus and simhash in each node.
# Source it (after scripts/lib.sh, which sets PG_BIN), then:
#   cluster_start            start the three nodes and register the workers (EXIT trap: cluster_stop)
#   sql PSQL-ARGS...         psql on the coordinator; node_sql I ... on node I (0, 1, 2)
#   port_of I, CLUSTER_DIR   where node I listens
# Settings: CITUS_EXTRA_CONF (lines added to every node's postgresql.conf), verbose (1:
# notices shown).
# As root, the servers run as the OS user `postgres` (PostgreSQL refuses to run as root).
verbose=${verbose:-0}

NODES=(coord worker1 worker2)
CLUSTER_DIR=
SERVER_USER=

# as_server CMD... : run a command as the user the servers belong to, in CLUSTER_DIR.
as_server() {
    if [[ ${EUID} -eq 0 ]]; then
        (cd "${CLUSTER_DIR}" && runuser -u "${SERVER_USER}" -- "$@")
    else
        (cd "${CLUSTER_DIR}" && "$@")
    fi
}

# port_of I : the port (the socket file's name) of node I.
port_of() { echo $((BASE_PORT + $1)); }

cluster_stop() {
    [[ -n ${CLUSTER_DIR} ]] || return 0
    local i
    for i in "${!NODES[@]}"; do
        if [[ -f ${CLUSTER_DIR}/${NODES[i]}/postmaster.pid ]]; then
            as_server "${PG_BIN}/pg_ctl" -D "${CLUSTER_DIR}/${NODES[i]}" -m fast -w stop \
                >/dev/null 2>&1 || log "warning: could not stop ${NODES[i]}"
        fi
    done
    rm -rf -- "${CLUSTER_DIR}"
    CLUSTER_DIR=
}
trap cluster_stop EXIT

cluster_start() {
    if [[ ${EUID} -eq 0 ]]; then
        id -u postgres >/dev/null 2>&1 || die "as root, the OS user 'postgres' must exist"
        SERVER_USER=postgres
        CLUSTER_DIR=$(mktemp -d /tmp/simhash-citus.XXXXXX)
        chown "${SERVER_USER}:" "${CLUSTER_DIR}"
    else
        SERVER_USER=$(id -un)
        CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/simhash-citus.XXXXXX")
    fi
    # No TCP listener: a port only names a socket file in our private directory.
    BASE_PORT=$((5500 + RANDOM % 100 * 3))
    local i data
    for i in "${!NODES[@]}"; do
        data=${CLUSTER_DIR}/${NODES[i]}
        as_server "${PG_BIN}/initdb" -D "${data}" -E UTF8 --locale=C.UTF-8 --auth=trust \
            --username=postgres -N >"${CLUSTER_DIR}/initdb-${NODES[i]}.log" 2>&1 ||
            { cat "${CLUSTER_DIR}/initdb-${NODES[i]}.log" >&2; die "initdb failed"; }
        cat >>"${data}/postgresql.conf" <<EOF

# Added by test/citus/run.sh: a throwaway Citus node.
listen_addresses = ''
unix_socket_directories = '${CLUSTER_DIR}'
port = $(port_of "${i}")
fsync = off
synchronous_commit = off
full_page_writes = off
jit = off
shared_preload_libraries = 'citus'
# Nodes reach each other over the Unix socket, where SSL does not apply.
citus.node_conninfo = 'sslmode=disable'
${CITUS_EXTRA_CONF:-}
EOF
        as_server "${PG_BIN}/pg_ctl" -D "${data}" -l "${CLUSTER_DIR}/${NODES[i]}.log" -w -t 60 \
            start >/dev/null ||
            { cat "${CLUSTER_DIR}/${NODES[i]}.log" >&2; die "${NODES[i]} did not start"; }
        node_sql "${i}" -c 'CREATE EXTENSION citus' -c 'CREATE EXTENSION simhash'
    done
    sql -c "SELECT citus_set_coordinator_host('${CLUSTER_DIR}', $(port_of 0))" \
        -c "SELECT citus_add_node('${CLUSTER_DIR}', $(port_of 1))" \
        -c "SELECT citus_add_node('${CLUSTER_DIR}', $(port_of 2))" >/dev/null
}

# node_sql I PSQL-ARGS... : psql on node I, unaligned, stopping at the first error.
node_sql() {
    local i=$1
    shift
    PGOPTIONS="-c client_min_messages=$([[ ${verbose} -eq 1 ]] && echo notice || echo warning)" \
        psql -X -q -At -v ON_ERROR_STOP=1 -h "${CLUSTER_DIR}" -p "$(port_of "${i}")" \
        -U postgres -d postgres "$@"
}

# sql PSQL-ARGS... : psql on the coordinator.
sql() { node_sql 0 "$@"; }
