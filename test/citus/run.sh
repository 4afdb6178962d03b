#!/usr/bin/env bash
# Probe the simhash extension on a Citus cluster: a coordinator and two workers, each a
# throwaway PostgreSQL server on a Unix socket in a temporary directory, with
# shared_preload_libraries = 'citus' and the extensions citus and simhash in each node.
#
# Usage: test/citus/run.sh [--rows N] [--edits M] [--verbose]
#   --rows N     paragraphs of /usr/share/doc/*/copyright to load (default 5000)
#   --edits M    near-duplicate edits of some of them (default 300)
#   --verbose    show the servers' and psql's chatter, and each check's numbers
#
# Exits 77, after the line "SKIP citus: <why>", when Citus is not installed.
#
# The table `docs (id bigint primary key, body text, fp bigint generated always as
# (simhash(body)) stored)` is distributed by id (citus.shard_count, default 32, shards
# spread over the two workers); every probe is compared with a brute-force answer computed
# on a plain (not distributed) copy of the same rows on the coordinator:
#   a. simhash_create_index('docs', 'fp', 3) and simhash_near(fp, <const>, 3)
#   b. simhash_pairs('SELECT id, fp FROM docs', 3), and the table form
#      simhash_pairs('docs', 'id', 'fp', k) that finds the pairs on the workers (k = 3, 6),
#      and simhash_clusters('docs', 'id', 'fp', 6) joined from them
#   c. a GIN index on lsh = simhash_lsh(body), searched with lsh && simhash_lsh(q) AND
#      simhash_jaccard(body, q) >= 0.8
#   d. simhash_similar_pairs('SELECT id, body FROM docs', 0.8), and the table forms
#      simhash_similar_pairs/_clusters('docs', 'id', 'body', 0.8) that work on the workers
#   e. the simhash_dedupe('body', 'fp', '3', 'reject') trigger on the distributed table
#      (with citus.enable_unsafe_triggers): it runs on each shard and could see only that
#      shard's rows, so it must refuse every insert (0A000) rather than let near duplicates
#      of rows on other shards in; before it refused, 127 of 127 such edits went in
#   f. the trigger on a view of a distributed table, INSTEAD OF INSERT (the supported form):
#      16 concurrent writers insert originals, variants and edits one row a transaction
#      through the view, policy skip, with a distance (3) and with a threshold (0.8); then
#      the same in 20-row COPYs, with the statement form of the trigger beside it; no near
#      pair may be left, every skipped row must have a near duplicate kept, and no writer
#      may fail (a deadlock aborts one)
#   g. the self-join recipe (one side a materialized CTE) and simhash_nearest
#   h. a reference table: simhash_create_index, simhash_near, the trigger on the table
#
# Tested with Citus 13.2.2 (v13.2.2, cc91f4c2), built from source against PostgreSQL
# 15.20 with a one-line fix (Citus's static have_createdb_privilege() clashes with the one
# PostgreSQL 15.20 exports; rename Citus's copy): ./configure && make && make install.
# One line per check: PASS, FAIL, or KNOWN-FAIL (a known limitation, with the reason).
# Exits 0 unless a check that is supposed to pass fails (or the set-up fails); exits 0
# with a message, running nothing, when Citus is not installed.
#
# Needs: PostgreSQL 15 with simhash installed (scripts/setup.sh) and Citus built for it.
# As root, the servers run as the OS user `postgres` (PostgreSQL refuses to run as root).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
}

rows=5000
edits=300
verbose=0
while [[ $# -gt 0 ]]; do
    case $1 in
        --rows) rows=$2; shift 2 ;;
        --edits) edits=$2; shift 2 ;;
        -v|--verbose) verbose=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

sharedir=$("${PG_CONFIG}" --sharedir)
if [[ ! -f ${sharedir}/extension/citus.control ]]; then
    echo "SKIP citus: Citus is not installed (no ${sharedir}/extension/citus.control)"
    exit 77
fi
[[ -f ${sharedir}/extension/simhash.control ]] ||
    die "simhash is not installed in ${sharedir}/extension: run scripts/setup.sh"

# --- a coordinator and two workers -------------------------------------------------------

# shellcheck source=test/citus/cluster.sh
source test/citus/cluster.sh

# --- checks --------------------------------------------------------------------------------

failures=0
known=0
passes=0

# result NAME OK DETAIL [KNOWN_REASON] : print the check's line. OK is 1 when the result
# matched the brute-force answer. With KNOWN_REASON, a mismatch is a known limitation
# (KNOWN-FAIL, not counted as a failure), and a match is news worth a note.
CHECK_START=${SECONDS}
result() {
    local name=$1 ok=$2 reason=${4:-}
    local detail="$3 ($((SECONDS - CHECK_START)) s)"
    CHECK_START=${SECONDS}
    if [[ ${ok} -eq 1 ]]; then
        passes=$((passes + 1))
        if [[ -n ${reason} ]]; then
            echo "PASS ${name}: ${detail} (expected KNOWN-FAIL: ${reason}; update run.sh)"
        else
            echo "PASS ${name}: ${detail}"
        fi
    elif [[ -n ${reason} ]]; then
        known=$((known + 1))
        echo "KNOWN-FAIL ${name}: ${detail} [${reason}]"
    else
        failures=$((failures + 1))
        echo "FAIL ${name}: ${detail}"
    fi
}

# try_sql NAME PSQL-ARGS... : run SQL on the coordinator, its output in TRY_OUT; on error
# print FAIL NAME with psql's message and return 1. (Don't call it in a subshell.)
TRY_OUT=
try_sql() {
    local name=$1
    shift
    if ! TRY_OUT=$(sql "$@" 2>&1); then
        result "${name}" 0 "error: $(grep -m1 'ERROR' <<<"${TRY_OUT}" || head -1 <<<"${TRY_OUT}")"
        return 1
    fi
}

# sum : the sum of the numbers on stdin, one a line.
sum() { awk '{ s += $1 } END { print s + 0 }'; }

# on_workers SQL : the sum over both workers of a count query, shards made visible.
on_workers() {
    local i
    for i in 1 2; do
        node_sql "${i}" -c 'SET citus.override_table_visibility = off' -c "$1"
    done | sum
}

# compare TABLE_A TABLE_B : "|A| |B| |A-B| |B-A|" of two tables with the same columns.
compare() {
    sql -F ' ' -c "SELECT (SELECT count(*) FROM $1), (SELECT count(*) FROM $2),
        (SELECT count(*) FROM (TABLE $1 EXCEPT TABLE $2) x),
        (SELECT count(*) FROM (TABLE $2 EXCEPT TABLE $1) x)"
}

# --- set-up --------------------------------------------------------------------------------

[[ ${verbose} -eq 1 ]] && log "starting a coordinator and 2 workers"
cluster_start
versions=$(sql -c "SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname)
    FROM pg_extension WHERE extname IN ('citus', 'simhash')")
nodes=$(sql -c "SELECT count(*) FROM pg_dist_node WHERE isactive AND noderole = 'primary'")
echo "cluster: ${nodes} nodes (coordinator + 2 workers), ${versions}, in ${CLUSTER_DIR}"

# Rows id<TAB>body: N distinct paragraphs (split on blank lines, white space collapsed,
# 80..4000 bytes, at least 60 ASCII letters), in a fixed pseudo-random order, ids 1..N;
# then M edits of every (N/M)-th one, id 1000000 + the original's id: a word dropped, a
# word upper-cased with a comma, a word inserted, or a sentence appended.
perl - "${rows}" "${edits}" >"${CLUSTER_DIR}/corpus.tsv" <<'PERL'
use strict; use warnings;
use Digest::MD5 qw(md5_hex);
my ($n, $m) = @ARGV;
my (%seen, @paras);
for my $f (sort glob('/usr/share/doc/*/copyright')) {
    open(my $fh, '<:raw', $f) or next;
    local $/ = '';
    while (my $p = <$fh>) {
        $p =~ s/[\x00-\x08\x0b-\x1f\x7f]//g;
        $p =~ s/\s+/ /g; $p =~ s/^ | $//g;
        next unless length($p) >= 80 && length($p) <= 4000 && ($p =~ tr/a-zA-Z//) >= 60;
        next if $seen{$p}++;
        push @paras, $p;
    }
}
@paras = map { $_->[1] } sort { $a->[0] cmp $b->[0] } map { [md5_hex($_), $_] } @paras;
splice(@paras, $n) if @paras > $n;
sub esc { my $s = shift; $s =~ s/\\/\\\\/g; $s =~ s/\t/\\t/g; return $s }
print $_ + 1, "\t", esc($paras[$_]), "\n" for 0 .. $#paras;
my $k = int(@paras / ($m || 1)) || 1;
for (my ($i, $j) = (0, 0); $i < @paras && $j < $m; $i += $k, $j++) {
    my @w = split / /, $paras[$i];
    my $mid = int(@w / 2);
    if    ($j % 4 == 0) { splice(@w, $mid, 1) }
    elsif ($j % 4 == 1) { $w[$mid] = uc($w[$mid]) . ',' }
    elsif ($j % 4 == 2) { splice(@w, $mid, 0, 'indeed') }
    else                { push @w, 'See', 'also', 'the', 'README.' }
    print 1000000 + $i + 1, "\t", esc(join(' ', @w)), "\n";
}
PERL

# docs: distributed; docs_local: the same rows in a plain table, for the brute force;
# queries: the edits (their originals are in the table, near or not).
sql <<SQL
CREATE TABLE docs (id bigint PRIMARY KEY, body text,
                   fp bigint GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_distributed_table('docs', 'id') \\g /dev/null
\\copy docs(id, body) from '${CLUSTER_DIR}/corpus.tsv'
CREATE TABLE docs_local (id bigint PRIMARY KEY, body text,
                         fp bigint GENERATED ALWAYS AS (simhash(body)) STORED);
\\copy docs_local(id, body) from '${CLUSTER_DIR}/corpus.tsv'
CREATE TABLE queries AS SELECT id AS qid, body AS q, fp AS qfp FROM docs_local WHERE id > 1000000;
-- For the brute force of simhash_jaccard: each row's shingle set and its size.
CREATE TABLE sh AS SELECT id, cardinality(s) AS n, s FROM (SELECT id, simhash_shingles(body) AS s FROM docs_local) x;
ALTER TABLE sh ADD PRIMARY KEY (id);
ANALYZE docs_local, queries, sh;
SQL
counts=$(sql -F ' ' -c "SELECT (SELECT count(*) FROM docs), (SELECT count(*) FROM docs WHERE id > 1000000),
    (SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'docs'::regclass),
    (SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'docs'::regclass)")
read -r n_docs n_edits n_shards n_shard_nodes <<<"${counts}"
CHECK_START=${SECONDS}
echo "data: ${n_docs} rows (${n_edits} near-duplicate edits) in docs, ${n_shards} shards on ${n_shard_nodes} workers"

# --- a. block indexes and simhash_near -----------------------------------------------------

if try_sql a-create-index -c "SELECT count(*) FROM simhash_create_index('docs', 'fp', 3)"; then
    # The block indexes must reach every shard (Citus propagates CREATE INDEX).
    n_idx=${TRY_OUT}
    idx_on_shards=$(on_workers "SELECT count(*) FROM pg_class
        WHERE relkind = 'i' AND relname ~ '^docs_fp_simhash3_[0-9]+_[0-9]+\$'")
    expected_idx=$((n_idx * n_shards))
    result a-create-index "$([[ ${idx_on_shards} -eq ${expected_idx} ]] && echo 1 || echo 0)" \
        "${n_idx} block indexes on docs, ${idx_on_shards}/${expected_idx} on its shards"

    # Each edit's fingerprint as a constant; the brute force reads docs_local.
    if try_sql a-near <<'SQL'
CREATE TABLE res_a (qid bigint, id bigint);
SELECT format('INSERT INTO res_a SELECT %s, id FROM docs WHERE simhash_near(fp, %s, 3)', qid, qfp)
FROM queries \gexec
SQL
    then
        sql -c "CREATE TABLE bf_a AS SELECT qid, id FROM queries, docs_local WHERE hamming(fp, qfp) <= 3"
        read -r na nb ab ba <<<"$(compare res_a bf_a)"
        result a-near "$([[ ${ab} -eq 0 && ${ba} -eq 0 ]] && echo 1 || echo 0)" \
            "$(sql -c 'SELECT count(*) FROM queries') queries: ${na} rows found, brute force ${nb}, extra ${ab}, missed ${ba}"
    fi
fi

# simhash_search_plan plans for a shard of average size, with every shard's rows counted
# (the coordinator's own table is an empty shell): the same candidates as the plain table.
sql -c "SELECT count(*) FROM simhash_create_index('docs_local', 'fp', 3)" -c "ANALYZE docs" -c "ANALYZE docs_local" >/dev/null
read -r plan_d plan_l <<<"$(sql -F ' ' -c "SELECT
    (SELECT round(sum(candidates)::numeric, 3) FROM simhash_search_plan('docs', 'fp', 3)),
    (SELECT round(sum(candidates)::numeric, 3) FROM simhash_search_plan('docs_local', 'fp', 3))")"
result a-search-plan "$([[ -n ${plan_d} && ${plan_d} == "${plan_l}" ]] && echo 1 || echo 0)" \
    "simhash_search_plan at k = 3: ${plan_d:-none} candidates expected on the distributed table, ${plan_l:-none} on the plain one"

# --- b. simhash_pairs ----------------------------------------------------------------------

if try_sql b-pairs -c "CREATE TABLE res_b AS
        SELECT id1, id2 FROM simhash_pairs('SELECT id, fp FROM docs', 3)"; then
    sql -c "CREATE TABLE bf_b AS SELECT a.id AS id1, b.id AS id2 FROM docs_local a JOIN docs_local b
            ON a.id < b.id AND hamming(a.fp, b.fp) <= 3"
    read -r na nb ab ba <<<"$(compare res_b bf_b)"
    result b-pairs "$([[ ${ab} -eq 0 && ${ba} -eq 0 ]] && echo 1 || echo 0)" \
        "${na} pairs, brute force ${nb}, extra ${ab}, missed ${ba}"
fi
# The table form works on the workers: the rows repartitioned by block into an intermediate
# table, each worker's parts searched there; every pair once, as brute force, at k = 3 and
# at k = 6; and no intermediate table left behind.
for k in 3 6; do
    if try_sql "b-pairs-workers-k${k}" -c "CREATE TABLE res_b${k} AS
            SELECT id1, id2 FROM simhash_pairs('docs', 'id', 'fp', ${k})"; then
        sql -c "CREATE TABLE bf_b${k} AS SELECT a.id AS id1, b.id AS id2 FROM docs_local a JOIN docs_local b
                ON a.id < b.id AND hamming(a.fp, b.fp) <= ${k}"
        read -r na nb ab ba <<<"$(compare "res_b${k}" "bf_b${k}")"
        left=$(sql -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'simhash_pairs_%'")
        rep=$(sql -c "SELECT count(*) - count(DISTINCT (id1, id2)) FROM res_b${k}")
        result "b-pairs-workers-k${k}" "$([[ ${ab} -eq 0 && ${ba} -eq 0 && ${left} -eq 0 && ${rep} -eq 0 ]] && echo 1 || echo 0)" \
            "simhash_pairs('docs', 'id', 'fp', ${k}): ${na} pairs, brute force ${nb}, extra ${ab}, missed ${ba}, repeated ${rep}; intermediate tables left: ${left}"
    fi
done
# Its clusters, joined on the coordinator from the workers' pairs: the query form's on the
# plain copy, row for row (id, cluster_id, distance).
if try_sql b-clusters-workers -c "CREATE TABLE res_bc AS SELECT * FROM simhash_clusters('docs', 'id', 'fp', 6)"; then
    sql -c "CREATE TABLE ref_bc AS SELECT * FROM simhash_clusters('SELECT id, fp FROM docs_local', 6)"
    read -r na nb ab ba <<<"$(compare res_bc ref_bc)"
    result b-clusters-workers "$([[ ${ab} -eq 0 && ${ba} -eq 0 && ${na} -gt 0 ]] && echo 1 || echo 0)" \
        "simhash_clusters('docs', 'id', 'fp', 6): ${na} rows in clusters, one node ${nb}, differ ${ab} + ${ba}"
fi

# On the workers the ids are checked before any intermediate table: a table distributed by
# another column, an id twice, no unique index: 21000, and nothing left behind.
dup=$(sql 2>&1 <<'SQL' || true
CREATE TABLE docs_dup (g int, id bigint, fp bigint);
SELECT create_distributed_table('docs_dup', 'g') \g /dev/null
INSERT INTO docs_dup VALUES (1, 7, 0), (2, 7, 1), (3, 8, 2);
\set VERBOSITY sqlstate
SELECT count(*) FROM simhash_pairs('docs_dup', 'id', 'fp', 3);
SQL
)
left=$(sql -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'simhash_pairs_%'")
result b-pairs-workers-ids "$([[ ${dup} == *21000* && ${left} -eq 0 ]] && echo 1 || echo 0)" \
    "an id twice in a table distributed by another column: $([[ ${dup} == *21000* ]] && echo 21000 || echo 'no 21000'); intermediate tables left: ${left}"

# --- c. GIN index on simhash_lsh keys -------------------------------------------------------

# The same search on a plain table with the same index is the reference for "distributed
# changes nothing"; the brute force (simhash_jaccard on every row) bounds the LSH recall.
if try_sql c-lsh-gin <<SQL
CREATE TABLE docs_lsh (id bigint PRIMARY KEY, body text,
                       lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED);
SELECT create_distributed_table('docs_lsh', 'id') \\g /dev/null
\\copy docs_lsh(id, body) from '${CLUSTER_DIR}/corpus.tsv'
CREATE INDEX docs_lsh_gin ON docs_lsh USING gin (lsh) WITH (fastupdate = off);
CREATE TABLE docs_lsh_local AS SELECT id, body, lsh FROM docs_lsh;
CREATE INDEX ON docs_lsh_local USING gin (lsh) WITH (fastupdate = off);
CREATE TABLE res_c (qid bigint, id bigint);
CREATE TABLE loc_c (qid bigint, id bigint);
SELECT format('INSERT INTO res_c SELECT %s, id FROM docs_lsh
               WHERE lsh && simhash_lsh(%L) AND simhash_jaccard(body, %L) >= 0.8
               ;INSERT INTO loc_c SELECT %s, id FROM docs_lsh_local
               WHERE lsh && simhash_lsh(%L) AND simhash_jaccard(body, %L) >= 0.8',
              qid, q, q, qid, q, q) FROM queries \\gexec
-- (Jaccard >= t needs t |a| <= |b| <= |a| / t; the queries are rows of docs_local.)
CREATE TABLE bf_c AS SELECT q.id AS qid, s.id FROM sh q JOIN sh s
    ON s.n >= 0.8 * q.n AND 0.8 * s.n <= q.n AND simhash_jaccard(s.s, q.s) >= 0.8
    WHERE q.id IN (SELECT qid FROM queries);
SQL
then
    read -r na nb ab ba <<<"$(compare res_c loc_c)"
    read -r _ nbf fp_c miss_c <<<"$(compare res_c bf_c)"
    gin_shards=$(on_workers "SELECT count(*) FROM pg_class WHERE relname ~ '^docs_lsh_gin_[0-9]+\$'")
    # Pass: the same rows as on a plain table, no row below 0.8, at most 1 % missed (LSH).
    ok=$([[ ${ab} -eq 0 && ${ba} -eq 0 && ${fp_c} -eq 0 && $((miss_c * 100)) -le ${nbf} ]] && echo 1 || echo 0)
    result c-lsh-gin "${ok}" "$(sql -c 'SELECT count(*) FROM queries') queries: ${na} rows (plain table ${nb}, diff ${ab}+${ba}), brute force ${nbf}, extra ${fp_c}, missed ${miss_c} (LSH recall); GIN index on ${gin_shards}/${n_shards} shards"
fi

# --- d. simhash_similar_pairs ----------------------------------------------------------------

if try_sql d-similar-pairs -c "CREATE TABLE res_d AS
        SELECT id1, id2 FROM simhash_similar_pairs('SELECT id, body FROM docs', 0.8)" \
        -c "CREATE TABLE loc_d AS
        SELECT id1, id2 FROM simhash_similar_pairs('SELECT id, body FROM docs_local', 0.8)"
then
    # Brute force with an exact prefix filter: pairs with Jaccard >= t share one of the
    # first |x| - ceil(t |x|) + 1 shingles of each set in a global order (rarest first).
    sql <<'SQL'
CREATE TABLE sh1 AS SELECT id, e FROM sh, unnest(s) e;
CREATE TABLE df AS SELECT e, count(*) AS c FROM sh1 GROUP BY e;
ANALYZE sh1, df;
CREATE TABLE pre AS SELECT id, e FROM (
    SELECT x.id, x.e, sh.n, row_number() OVER (PARTITION BY x.id ORDER BY df.c, x.e) AS r
    FROM sh1 x JOIN df USING (e) JOIN sh USING (id)) y
WHERE r <= n - ceil(0.8 * n)::int + 1;
CREATE TABLE cand AS SELECT DISTINCT a.id AS i1, b.id AS i2 FROM pre a JOIN pre b ON a.e = b.e AND a.id < b.id;
ANALYZE cand;
CREATE TABLE bf_d AS SELECT a.id AS id1, b.id AS id2
FROM cand c JOIN sh a ON a.id = c.i1 JOIN sh b ON b.id = c.i2
WHERE simhash_jaccard(a.s, b.s) >= 0.8;
SQL
    read -r na nb ab ba <<<"$(compare res_d loc_d)"
    read -r _ nbf fp_d miss_d <<<"$(compare res_d bf_d)"
    ok=$([[ ${ab} -eq 0 && ${ba} -eq 0 && ${fp_d} -eq 0 && $((miss_d * 100)) -le ${nbf} ]] && echo 1 || echo 0)
    result d-similar-pairs "${ok}" "${na} pairs (plain table ${nb}, diff ${ab}+${ba}), brute force ${nbf}, extra ${fp_d}, missed ${miss_d} (LSH recall)"
fi
# The table forms find and verify the pairs on the workers: the same pairs and similarities
# as one node, exactly; and the clusters joined from them, row for row.
if try_sql d-similar-workers -c "CREATE TABLE res_dw AS SELECT * FROM simhash_similar_pairs('docs', 'id', 'body', 0.8)" \
        -c "CREATE TABLE loc_dw AS SELECT * FROM simhash_similar_pairs('SELECT id, body FROM docs_local', 0.8)" \
        -c "CREATE TABLE res_dc AS SELECT * FROM simhash_similar_clusters('docs', 'id', 'body', 0.8)" \
        -c "CREATE TABLE loc_dc AS SELECT * FROM simhash_similar_clusters('SELECT id, body FROM docs_local', 0.8)"; then
    read -r na nb ab ba <<<"$(compare res_dw loc_dw)"
    read -r nc ncl cb cl <<<"$(compare res_dc loc_dc)"
    left=$(sql -c "SELECT count(*) FROM pg_class WHERE relname LIKE 'simhash_similar_%'")
    result d-similar-workers "$([[ ${ab} -eq 0 && ${ba} -eq 0 && ${na} -gt 0 && ${cb} -eq 0 && ${cl} -eq 0 && ${left} -eq 0 ]] && echo 1 || echo 0)" \
        "simhash_similar_pairs('docs', 'id', 'body', 0.8): ${na} pairs with their similarity, one node ${nb}, differ ${ab}+${ba}; clusters ${nc} rows, one node ${ncl}, differ ${cb}+${cl}; intermediate tables left: ${left}"
fi

# --- e. the dedupe trigger ---------------------------------------------------------------------

# How Citus takes a row trigger: refused on a distributed table (and a table with triggers
# cannot be distributed) unless citus.enable_unsafe_triggers is on; with it, Citus creates
# the trigger on every shard, where it runs on the worker and sees only that shard's rows.
ddl=$(sql 2>&1 <<'SQL' || true
\set ON_ERROR_STOP 0
CREATE TABLE docs_e (id bigint PRIMARY KEY, body text,
                     fp bigint GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_distributed_table('docs_e', 'id') \g /dev/null
CREATE TRIGGER docs_e_dedupe BEFORE INSERT ON docs_e FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
CREATE TABLE docs_e2 (id bigint PRIMARY KEY, body text,
                      fp bigint GENERATED ALWAYS AS (simhash(body)) STORED);
CREATE TRIGGER docs_e2_dedupe BEFORE INSERT ON docs_e2 FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
SELECT create_distributed_table('docs_e2', 'id') \g /dev/null
SET citus.enable_unsafe_triggers = on;
SELECT create_distributed_table('docs_e2', 'id') \g /dev/null
SQL
)
[[ ${verbose} -eq 1 ]] && printf '%s\n' "${ddl}" >&2
refused=$(grep -c 'ERROR' <<<"${ddl}" || true)
e2_shard_triggers=$(on_workers "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
    WHERE c.relname ~ '^docs_e2_[0-9]+\$' AND t.tgname ~ '^docs_e2_dedupe'")
result e-trigger-ddl "$([[ ${refused} -eq 2 && ${e2_shard_triggers} -eq ${n_shards} ]] && echo 1 || echo 0)" \
    "without citus.enable_unsafe_triggers ${refused}/2 refused (CREATE TRIGGER after, create_distributed_table after CREATE TRIGGER); with it, trigger on ${e2_shard_triggers}/${n_shards} shards"

# Load the originals, then create the trigger and insert each edit in its own statement.
sql -c "INSERT INTO docs_e (id, body) SELECT id, body FROM docs_local WHERE id <= 1000000" \
    -c "SET citus.enable_unsafe_triggers = on" \
    -c "CREATE TRIGGER docs_e_dedupe BEFORE INSERT ON docs_e FOR EACH ROW
        EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject')"
errors=$(sql 2>&1 <<'SQL' || true
\set ON_ERROR_STOP 0
\set VERBOSITY terse
SELECT format('INSERT INTO docs_e (id, body) VALUES (%s, %L)', qid, q) FROM queries ORDER BY qid \gexec
SQL
)
n_23505=$(grep -c '^ERROR: .*near duplicate' <<<"${errors}" || true)
n_other=$(grep '^ERROR' <<<"${errors}" | grep -vc 'near duplicate' || true)
first_other=$(grep '^ERROR' <<<"${errors}" | grep -v -m1 'near duplicate' || true)
# The brute force, from the final table: when edit e was inserted, the table held exactly
# its rows with smaller ids (originals, then the edits inserted before e), so e should
# have been rejected iff one of them lies within 3 bits; "same shard" when one of those
# lies on e's shard.
sql <<'SQL'
CREATE TABLE fin_e AS SELECT id, fp, get_shard_id_for_distribution_column('docs_e', id) AS shard FROM docs_e;
CREATE TABLE exp_e AS
SELECT q.qid, get_shard_id_for_distribution_column('docs_e', q.qid) AS shard,
       EXISTS (SELECT 1 FROM fin_e f WHERE f.id < q.qid AND hamming(f.fp, q.qfp) <= 3) AS dup,
       EXISTS (SELECT 1 FROM fin_e f WHERE f.id < q.qid AND hamming(f.fp, q.qfp) <= 3
               AND f.shard = get_shard_id_for_distribution_column('docs_e', q.qid)) AS dup_same,
       EXISTS (SELECT 1 FROM fin_e f WHERE f.id = q.qid) AS inserted
FROM queries q;
SQL
read -r n_dup n_same same_in cross_total cross_in false_rej <<<"$(sql -F ' ' -c "SELECT
    count(*) FILTER (WHERE dup), count(*) FILTER (WHERE dup_same),
    count(*) FILTER (WHERE dup_same AND inserted),
    count(*) FILTER (WHERE dup AND NOT dup_same), count(*) FILTER (WHERE dup AND NOT dup_same AND inserted),
    count(*) FILTER (WHERE NOT dup AND NOT inserted) FROM exp_e")"
# The trigger on the shards must refuse every insert (0A000) rather than let near
# duplicates of rows on other shards in (before it refused, 127 of 127 such edits went in).
result e-dedupe-refuses "$([[ ${n_other} -eq ${n_edits} && ${n_23505} -eq 0 && ${cross_total} -gt 0 ]] && echo 1 || echo 0)" \
    "${n_other}/${n_edits} inserts refused (${first_other}); ${cross_total} of them had a near duplicate only on another shard"

# --- f. dedupe through a view on the coordinator, 16 concurrent writers ----------------------

# Input: the first F originals; for every third one a variant in capitals with a "!" (the
# same fingerprint, similarity 1); the edits of those originals (a word changed). In the
# order original, variant, edit, dealt round-robin to W writers: a text and its near
# duplicates go to different writers at about the same moment. Each writer inserts its
# rows one statement (one transaction) each, through the view, with policy skip.
writers=16
sql <<SQL
CREATE TABLE input_f AS
SELECT row_number() OVER (ORDER BY o, kind) AS n, body FROM (
    SELECT id AS o, 0 AS kind, body FROM docs_local WHERE id <= ${rows} AND id <= 1500
    UNION ALL SELECT id, 1, upper(body) || '!' FROM docs_local WHERE id <= 1500 AND id % 3 = 0
    UNION ALL SELECT id - 1000000, 2, body FROM docs_local WHERE id > 1000000 AND id - 1000000 <= 1500) x;
SQL
# run_writers VIEW [ROWS] : the W writers' inserts into VIEW, concurrently, one row a
# statement, or with ROWS a COPY of ROWS rows a statement; prints "errors" (deadlocks
# included: PostgreSQL ends one by aborting a writer).
run_writers() {
    local view=$1 per=${2:-0} w pids=()
    for ((w = 0; w < writers; w++)); do
        if [[ ${per} -gt 0 ]]; then
            sql -c "SELECT CASE WHEN r % ${per} = 0 THEN 'COPY ${view} (body) FROM stdin;' || chr(10) ELSE '' END
                        || replace(replace(replace(replace(body, chr(92), chr(92) || chr(92)),
                               chr(10), chr(92) || 'n'), chr(9), chr(92) || 't'), chr(13), chr(92) || 'r')
                        || CASE WHEN r % ${per} = ${per} - 1 OR r = last THEN chr(10) || chr(92) || '.' ELSE '' END
                    FROM (SELECT body, row_number() OVER (ORDER BY n) - 1 AS r, count(*) OVER () - 1 AS last
                          FROM input_f WHERE n % ${writers} = ${w}) x ORDER BY r" >"${CLUSTER_DIR}/writer_${view}_${w}.sql"
        else
            sql -c "SELECT format('INSERT INTO ${view} (body) VALUES (%L);', body) FROM input_f
                    WHERE n % ${writers} = ${w} ORDER BY n" >"${CLUSTER_DIR}/writer_${view}_${w}.sql"
        fi
    done
    for ((w = 0; w < writers; w++)); do
        psql -X -q -At -h "${CLUSTER_DIR}" -p "$(port_of 0)" -U postgres -d postgres \
            -f "${CLUSTER_DIR}/writer_${view}_${w}.sql" >/dev/null 2>"${CLUSTER_DIR}/writer_${view}_${w}.err" &
        pids+=($!)
    done
    wait "${pids[@]}" || true
    cat "${CLUSTER_DIR}"/writer_"${view}"_*.err | grep -c 'ERROR' || true
}
n_input=$(sql -c "SELECT count(*) FROM input_f")

# With ROWS (COPYs of ROWS rows), the view also has the statement form of the trigger
# (AFTER INSERT ... FOR EACH STATEMENT, the same arguments): each COPY takes all its rows'
# lock keys at once, in one order, so no two writers deadlock.
# statement_form VIEW ARGS ROWS : the statement form's DDL when ROWS > 0.
statement_form() {
    [[ $3 -gt 0 ]] && echo "CREATE TRIGGER $1_end AFTER INSERT ON $1 FOR EACH STATEMENT EXECUTE FUNCTION simhash_dedupe($2);"
    return 0
}
what_rows() { [[ $1 -gt 0 ]] && echo "rows in ${1}-row COPYs" || echo "single-row inserts"; }

# f_distance NAME ROWS : Hamming distance 3: block indexes on every shard, fingerprint
# generated.
f_distance() {
    local t=$1 per=$2 start took errors kept near dropped_wrongly shards_used
    sql <<SQL
CREATE TABLE ${t} (id bigserial PRIMARY KEY, body text,
                   fp bigint GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_distributed_table('${t}', 'id') \g /dev/null
SELECT count(*) FROM simhash_create_index('${t}', 'fp', 3) \g /dev/null
CREATE VIEW ${t}_in AS SELECT * FROM ${t};
CREATE TRIGGER ${t}_dedupe INSTEAD OF INSERT ON ${t}_in FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'skip');
$(statement_form "${t}_in" "'body', 'fp', '3', 'skip'" "${per}")
SQL
    start=${SECONDS}
    errors=$(run_writers "${t}_in" "${per}")
    took=$((SECONDS - start))
    read -r kept near dropped_wrongly shards_used <<<"$(sql -F ' ' <<SQL
CREATE TABLE fin_${t} AS SELECT id, body, fp FROM ${t};
SELECT (SELECT count(*) FROM fin_${t}),
       (SELECT count(*) FROM fin_${t} a JOIN fin_${t} b ON a.id < b.id AND hamming(a.fp, b.fp) <= 3),
       (SELECT count(*) FROM input_f i WHERE NOT EXISTS (SELECT 1 FROM fin_${t} f WHERE f.body = i.body)
            AND NOT EXISTS (SELECT 1 FROM fin_${t} f WHERE hamming(f.fp, simhash(i.body)) <= 3)),
       (SELECT count(DISTINCT get_shard_id_for_distribution_column('${t}', id)) FROM fin_${t});
SQL
)"
    result "f-view-dedupe-distance$([[ ${per} -gt 0 ]] && echo "-copy${per}")" \
        "$([[ ${near} -eq 0 && ${dropped_wrongly} -eq 0 && ${errors} -eq 0 && ${kept} -lt ${n_input} ]] && echo 1 || echo 0)" \
        "${writers} writers, ${n_input} $(what_rows "${per}") through the view in ${took} s: ${kept} kept on ${shards_used} shards, $((n_input - kept)) skipped; near pairs (<= 3 bits) left: ${near}; skipped without a near duplicate: ${dropped_wrongly}; errors (deadlocks included): ${errors}"
}

# f_similarity NAME ROWS : similarity threshold 0.8: LSH keys and a GIN index on every shard.
f_similarity() {
    local t=$1 per=$2 start took errors kept similar dropped_wrongly
    sql <<SQL
CREATE TABLE ${t} (id bigserial PRIMARY KEY, body text, lsh bigint[]);
SELECT create_distributed_table('${t}', 'id') \g /dev/null
CREATE INDEX ON ${t} USING gin (lsh) WITH (fastupdate = off);
CREATE VIEW ${t}_in AS SELECT * FROM ${t};
CREATE TRIGGER ${t}_dedupe INSTEAD OF INSERT ON ${t}_in FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'skip');
$(statement_form "${t}_in" "'body', 'lsh', '0.8', 'skip'" "${per}")
SQL
    start=${SECONDS}
    errors=$(run_writers "${t}_in" "${per}")
    took=$((SECONDS - start))
    read -r kept similar dropped_wrongly <<<"$(sql -F ' ' <<SQL
CREATE TABLE fin_${t} AS SELECT id, body, simhash_shingles(body) AS s FROM ${t};
SELECT (SELECT count(*) FROM fin_${t}),
       (SELECT count(*) FROM fin_${t} a JOIN fin_${t} b ON a.id < b.id
            AND cardinality(b.s) >= 0.8 * cardinality(a.s) AND cardinality(a.s) >= 0.8 * cardinality(b.s)
            AND simhash_jaccard(a.s, b.s) >= 0.8),
       (SELECT count(*) FROM input_f i WHERE NOT EXISTS (SELECT 1 FROM fin_${t} f WHERE f.body = i.body)
            AND NOT EXISTS (SELECT 1 FROM fin_${t} f WHERE simhash_jaccard(f.body, i.body) >= 0.8));
SQL
)"
    result "f-view-dedupe-similarity$([[ ${per} -gt 0 ]] && echo "-copy${per}")" \
        "$([[ ${similar} -eq 0 && ${dropped_wrongly} -eq 0 && ${errors} -eq 0 && ${kept} -lt ${n_input} ]] && echo 1 || echo 0)" \
        "${writers} writers, ${n_input} $(what_rows "${per}") through the view in ${took} s: ${kept} kept, $((n_input - kept)) skipped; pairs with similarity >= 0.8 left: ${similar}; skipped without a similar row: ${dropped_wrongly}; errors (deadlocks included): ${errors}"
}

f_distance docs_f 0
f_similarity docs_g 0
f_distance docs_fc 20
f_similarity docs_gc 20

# --- g. the self-join recipe and simhash_nearest ------------------------------------------------

# Citus plans the self-join when one side is a materialized CTE: it is collected once and
# sent to every shard, which joins it with its rows through its own block indexes.
if try_sql g-self-join -c "CREATE TABLE res_g AS
        WITH a AS MATERIALIZED (SELECT id, fp FROM docs)
        SELECT a.id AS id1, b.id AS id2 FROM a JOIN docs b ON simhash_near(b.fp, a.fp, 3) AND a.id < b.id"; then
    read -r na nb ab ba <<<"$(compare res_g bf_b)"
    result g-self-join "$([[ ${ab} -eq 0 && ${ba} -eq 0 ]] && echo 1 || echo 0)" \
        "${na} pairs, brute force ${nb}, extra ${ab}, missed ${ba}"
fi
# The 5 nearest rows of 50 edits: the same distances as on the plain table.
if try_sql g-nearest <<'SQL'
CREATE TABLE queries_n AS SELECT * FROM queries ORDER BY qid LIMIT 50;
CREATE TABLE res_n AS SELECT q.qid, n.distance, row_number() OVER (PARTITION BY q.qid ORDER BY n.distance) AS r
FROM queries_n q, simhash_nearest(NULL::docs, 'fp', q.qfp, 5) n;
CREATE TABLE bf_n AS SELECT qid, distance, r FROM (
    SELECT q.qid, hamming(d.fp, q.qfp) AS distance,
           row_number() OVER (PARTITION BY q.qid ORDER BY hamming(d.fp, q.qfp)) AS r
    FROM queries_n q, docs_local d WHERE d.fp IS NOT NULL) x WHERE r <= 5;
SQL
then
    read -r na nb ab ba <<<"$(compare res_n bf_n)"
    result g-nearest "$([[ ${ab} -eq 0 && ${ba} -eq 0 ]] && echo 1 || echo 0)" \
        "$(sql -c 'SELECT count(*) FROM queries_n') queries, 5 nearest each: ${na} (query, rank, distance) rows, brute force ${nb}, differ ${ab}+${ba}"
fi

# --- h. a reference table (a full copy on every node) ----------------------------------------

# simhash_create_index (whose ANALYZE Citus used to refuse after indexing the coordinator's
# placement locally), radius search and the trigger on the table itself (Citus asks for
# citus.enable_unsafe_triggers; every copy holds all rows, so each placement's trigger
# sees them all. Citus lets INSERTs into a reference table run concurrently, but each
# placement's trigger holds its locks until the two-phase commit of all placements, so two
# writers of near duplicates either meet in the same order on every copy or deadlock, and
# one of them is cancelled: the copies cannot diverge. Only one writer is tested here.)
if try_sql h-reference <<'SQL'
CREATE TABLE docs_ref (id bigint PRIMARY KEY, body text,
                       fp bigint GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_reference_table('docs_ref') \g /dev/null
INSERT INTO docs_ref (id, body) SELECT id, body FROM docs_local WHERE id <= 1000000;
SELECT count(*) FROM simhash_create_index('docs_ref', 'fp', 3) \g /dev/null
CREATE TABLE res_h (qid bigint, id bigint);
SELECT format('INSERT INTO res_h SELECT %s, id FROM docs_ref WHERE simhash_near(fp, %s, 3)', qid, qfp)
FROM queries \gexec
CREATE TABLE bf_h AS SELECT qid, id FROM queries, docs_local WHERE id <= 1000000 AND hamming(fp, qfp) <= 3;
SET citus.enable_unsafe_triggers = on;
CREATE TRIGGER docs_ref_dedupe BEFORE INSERT ON docs_ref FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'skip');
INSERT INTO docs_ref (id, body) SELECT qid, q FROM queries;
CREATE TABLE fin_h AS SELECT id, fp FROM docs_ref;
SQL
then
    read -r na nb ab ba <<<"$(compare res_h bf_h)"
    read -r near_h kept_h <<<"$(sql -F ' ' -c "SELECT
        (SELECT count(*) FROM fin_h a JOIN fin_h b ON a.id < b.id AND hamming(a.fp, b.fp) <= 3 AND b.id > 1000000),
        (SELECT count(*) FROM fin_h WHERE id > 1000000)")"
    result h-reference "$([[ ${ab} -eq 0 && ${ba} -eq 0 && ${near_h} -eq 0 ]] && echo 1 || echo 0)" \
        "block indexes made; simhash_near: ${na} rows, brute force ${nb}, differ ${ab}+${ba}; trigger (skip): ${kept_h} of $(sql -c 'SELECT count(*) FROM queries') edits kept, ${near_h} near pairs with them"
fi

echo "summary: ${passes} passed, ${known} known failures, ${failures} failed"
[[ ${failures} -eq 0 ]]
