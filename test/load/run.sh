#!/usr/bin/env bash
# Load: pgbench drives a mix of writes through the dedupe trigger and searches, with many
# clients at once, on a throwaway cluster; then checks that no near duplicate got in.
#
# Usage: test/load/run.sh [--clients N] [--seconds S] [--pool P]
#   --clients N  pgbench clients (default 32; two pgbench threads)
#   --seconds S  run time (default 300)
#   --pool P     texts to draw from (default 20000): paragraphs of /usr/share/doc/*/copyright
#                and, for a third of them, a copy in capitals with a "!" (a near duplicate
#                at distance 0), so that many inserts are rejected
#
# Table docs (id bigserial, body, fp) with simhash_create_index(docs, fp, 6) and the
# trigger simhash_dedupe('body', 'fp', '3', 'reject'). The scripts, by weight:
#   insert   50  one text of the pool, through the trigger (a 23505 is caught and counted;
#                any other error fails the run)
#   search   30  count of rows within 6 bits of a pool text's fingerprint (simhash_near)
#   nearest  15  its 5 nearest rows (simhash_nearest)
#   pairs     5  every pair within 3 bits of the whole table (simhash_pairs)
# Prints one table: transactions per second, and per script the count, p50 and p99 latency
# (from pgbench's per-transaction log); then errors (pgbench's failed transactions and
# aborted clients: must be 0), inserts kept and rejected, and the near pairs left in docs
# (simhash_pairs at 3: must be 0). Exits non-zero when either check fails.
# Needs the extension installed (scripts/setup.sh; run here with --private-pg --quiet).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

clients=32
seconds=300
pool=20000
while [[ $# -gt 0 ]]; do
    case $1 in
        --clients) clients=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --pool) pool=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done
[[ ${clients} =~ ^[1-9][0-9]*$ && ${seconds} =~ ^[1-9][0-9]*$ && ${pool} =~ ^[1-9][0-9]*$ ]] ||
    die "--clients, --seconds and --pool take positive numbers"

export PGCLUSTER_SETTINGS="max_connections = $((clients + 20))
max_parallel_workers_per_gather = 0
jit = off"
pgcluster_start
trap pgcluster_stop EXIT
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }
work=$(mktemp -d "${PGCLUSTER_DIR}/load.XXXXXX")


# The pool: distinct paragraphs (white space collapsed, 80..4000 bytes), in a fixed order.
perl - "${pool}" >"${work}/pool.tsv" <<'PERL'
use strict; use warnings;
my ($n) = @ARGV;
my (%seen, @p);
for my $f (sort glob('/usr/share/doc/*/copyright')) {
    open(my $fh, '<:raw', $f) or next;
    local $/ = '';
    while (my $t = <$fh>) {
        $t =~ s/[\x00-\x08\x0b-\x1f\x7f\\]//g; $t =~ s/\s+/ /g; $t =~ s/^ | $//g;
        next unless length($t) >= 80 && length($t) <= 4000 && !$seen{$t}++;
        push @p, $t;
    }
}
my $i = 0;
for my $t (@p) {
    last if $i >= $n;
    print ++$i, "\t$t\n";
    print ++$i, "\t", uc($t), "!\n" if $i % 3 == 1 && $i < $n;
}
PERL
psql <<SQL
CREATE EXTENSION simhash;
CREATE TABLE pool (n integer PRIMARY KEY, body text, fp bigint);
\\copy pool (n, body) from '${work}/pool.tsv'
UPDATE pool SET fp = simhash(body);
CREATE TABLE docs (id bigserial PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER docs_dedupe BEFORE INSERT OR UPDATE OF body, fp ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
SELECT count(*) FROM simhash_create_index('docs', 'fp', 6) \\g /dev/null
CREATE TABLE rejected (n integer);
-- One insert of pool text n; a near duplicate (23505) is the policy at work: counted.
CREATE FUNCTION insert_doc(n integer) RETURNS boolean LANGUAGE plpgsql AS \$\$
BEGIN
    INSERT INTO docs (body) SELECT body FROM pool WHERE pool.n = insert_doc.n;
    RETURN true;
EXCEPTION WHEN unique_violation THEN
    INSERT INTO rejected VALUES (n);
    RETURN false;
END \$\$;
ANALYZE pool;
SQL
n_pool=$(psql -At -c 'SELECT count(*) FROM pool')

cat >"${work}/insert.sql" <<EOF2
\\set n random(1, ${n_pool})
SELECT insert_doc(:n);
EOF2
cat >"${work}/search.sql" <<EOF2
\\set n random(1, ${n_pool})
SELECT count(*) FROM docs WHERE simhash_near(fp, (SELECT fp FROM pool WHERE n = :n), 6);
EOF2
cat >"${work}/nearest.sql" <<EOF2
\\set n random(1, ${n_pool})
SELECT count(*) FROM simhash_nearest(NULL::docs, 'fp', (SELECT fp FROM pool WHERE n = :n), 5);
EOF2
cat >"${work}/pairs.sql" <<'EOF2'
SELECT count(*) FROM simhash_pairs('SELECT id, fp FROM docs', 3);
EOF2


log "pgbench: ${clients} clients for ${seconds} s (pool of ${n_pool} texts)"
status=0
(cd "${work}" && "${PG_BIN}/pgbench" -n -c "${clients}" -j 2 -T "${seconds}" \
    -h "${PGHOST}" -p "${PGPORT}" -U "${PGUSER}" -l --log-prefix=tx \
    -f insert.sql@50 -f search.sql@30 -f nearest.sql@15 -f pairs.sql@5 postgres) \
    >"${work}/pgbench.out" 2>&1 || status=$?
tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "${work}/pgbench.out" | head -1)
[[ -n ${tps} ]] && tps=$(printf '%.1f' "${tps}")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "${work}/pgbench.out")
aborted=$(grep -c 'client [0-9]* aborted' "${work}/pgbench.out" || true)
[[ ${status} -eq 0 ]] || { cat "${work}/pgbench.out" >&2; log "pgbench exited with ${status}"; }

# Per-transaction log lines: client tx latency_us script_no epoch epoch_us.
cat "${work}"/tx.* | awk '{ print $4 "\t" $3 }' >"${work}/latency.tsv"
psql <<SQL
CREATE TABLE latency (script integer, us bigint);
\\copy latency from '${work}/latency.tsv'
SQL
printf '\n| load | figure |\n|---|---|\n'
printf '| clients, seconds | %s, %s |\n' "${clients}" "${seconds}"
printf '| transactions per second | %s |\n' "${tps:-?}"
psql -At -F ' ' -c "SELECT (ARRAY['insert', 'search', 'nearest', 'pairs'])[script + 1], count(*),
        round((percentile_cont(0.5) WITHIN GROUP (ORDER BY us) / 1000)::numeric, 2),
        round((percentile_cont(0.99) WITHIN GROUP (ORDER BY us) / 1000)::numeric, 2)
    FROM latency GROUP BY script ORDER BY script" |
    while read -r name count p50 p99; do
        printf '| %s: transactions, p50 / p99 ms | %s, %s / %s |\n' "${name}" "${count}" "${p50}" "${p99}"
    done
read -r kept rejected near <<<"$(psql -At -F ' ' -c "SELECT (SELECT count(*) FROM docs), (SELECT count(*) FROM rejected),
    (SELECT count(*) FROM simhash_pairs('SELECT id, fp FROM docs', 3))")"
printf '| errors (failed transactions, aborted clients) | %s, %s |\n' "${failed:-?}" "${aborted}"
printf '| inserts kept, rejected as near duplicates (23505) | %s, %s |\n' "${kept}" "${rejected}"
printf '| near pairs (<= 3 bits) left in the table | %s |\n' "${near}"
[[ ${status} -eq 0 && ${failed:-1} -eq 0 && ${aborted} -eq 0 && ${near} -eq 0 ]]
