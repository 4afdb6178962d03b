# The dedupe trigger on a server with a small shared lock table (max_connections = 10):
# a bulk load in one transaction takes advisory locks for each row until it takes the
# table lock instead, and must do so long before the lock table is full. Before the
# limits followed the size of the lock table, a COPY of 1,000 rows at k = 3 failed with
# "out of shared memory" there (the first try for the table lock came after 4,096 locks).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SimhashTest;
use Test::More;
use Time::HiRes qw(usleep);

my $node = simhash_node('locks');
$node->append_conf('postgresql.conf', 'max_connections = 10');
$node->start;

# The shared lock table: max_locks_per_transaction for each possible backend.
my $slots = scalar_sql($node, q{
SELECT current_setting('max_locks_per_transaction')::int
       * (current_setting('max_connections')::int + current_setting('autovacuum_max_workers')::int + 1
          + current_setting('max_worker_processes')::int + current_setting('max_wal_senders')::int
          + current_setting('max_prepared_transactions')::int)});
note("shared lock table: $slots locks");

$node->safe_psql(
    'postgres', q{
CREATE EXTENSION simhash;
CREATE TABLE docs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER docs_dedupe BEFORE INSERT ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'skip');
SELECT count(*) FROM simhash_create_index('docs', 'fp', 3);
CREATE TABLE docs_sim (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text, lsh bigint[]);
CREATE INDEX ON docs_sim USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER docs_sim_dedupe BEFORE INSERT ON docs_sim FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'skip');
});

# 3,000 unrelated texts: 12,000 lock keys at k = 3, about 60,000 LSH keys.
my $texts = q{SELECT 'document ' || i || ' of the bulk load, with the words ' || md5(i::text) || ' ' || md5((-i)::text)
              FROM generate_series(1, 3000) i};

for my $table (qw(docs docs_sim))
{
    # Alone: the load takes the table lock (nobody else writes) before the lock table fills.
    my $out = psql_ok(
        $node, qq{
BEGIN;
INSERT INTO $table (body) $texts;
SELECT count(*) FILTER (WHERE locktype = 'advisory' AND objsubid = 21320),
       bool_or(relation = '$table'::regclass AND mode = 'ShareRowExclusiveLock')
FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;},
        "$table: a load of 3,000 rows in one transaction succeeds with a lock table of $slots locks");
    my ($advisory, $table_locked) = split /\|/, $out // '0|f';
    is($table_locked, 't', "$table: the load took the table lock");
    cmp_ok($advisory, '<=', $slots / 4, "$table: it held $advisory advisory locks, at most a quarter of the lock table");

    # While another writer holds the table: the load waits for the table lock, holding at
    # most a quarter of the lock table, then finishes once the other writer commits.
    $node->safe_psql('postgres', "TRUNCATE $table");
    my $other = $node->background_psql('postgres');
    $other->query_safe("BEGIN; INSERT INTO $table (body) VALUES ('another writer, in an open transaction')");
    my ($stdout, $stderr) = ('', '');
    my $load = IPC::Run::start(
        [ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') . ' application_name=bulk',
          '-c', "INSERT INTO $table (body) $texts" ],
        '<', \undef, '>', \$stdout, '2>', \$stderr);
    my $waiting = 0;
    for (1 .. 600)
    {
        $waiting = scalar_sql(
            $node, qq{
SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
WHERE a.application_name = 'bulk' AND l.relation = '$table'::regclass
  AND l.mode = 'ShareRowExclusiveLock' AND NOT l.granted}) eq 't';
        $load->pump_nb;
        last if $waiting || !$load->pumpable;
        usleep(100_000);
    }
    ok($waiting, "$table: with another writer, the load waits for the table lock")
      or diag("the load: $stderr");
    my $held = scalar_sql($node, q{
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
WHERE a.application_name = 'bulk' AND l.locktype = 'advisory' AND l.objsubid = 21320});
    cmp_ok($held, '<=', $slots / 4 + 64, "$table: waiting, it holds $held advisory locks, about a quarter of the lock table at most");
    $other->query_safe('COMMIT');
    $other->quit;
    ok($load->finish, "$table: the load finishes once the other writer has committed")
      or diag($stderr);
    is(scalar_sql($node, "SELECT count(*) FROM $table"), 3001, "$table: all 3,001 rows are there");
}

# Many tables in one transaction: the budget is the transaction's, not each table's. 20
# tables (more than the 16 whose counts the trigger keeps apart, so counted per table
# their counts kept restarting from 0), 150 rows each, written round-robin: 12,000 lock
# keys would fill the lock table.
$node->safe_psql(
    'postgres', q{
SET client_min_messages = warning;
DO $$
BEGIN
    FOR i IN 1..20 LOOP
        EXECUTE format('CREATE TABLE many%s (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text, fp bigint)', i);
        EXECUTE format('CREATE TRIGGER d BEFORE INSERT ON many%s FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L)',
                       i, 'body', 'fp', '3', 'skip');
        PERFORM simhash_create_index(format('many%s', i)::regclass, 'fp', 3);
    END LOOP;
END $$;});
my $out = psql_ok(
    $node, q{
BEGIN;
DO $$
BEGIN
    FOR r IN 1..150 LOOP
        FOR i IN 1..20 LOOP
            EXECUTE format('INSERT INTO many%s (body) VALUES (%L)', i,
                           'row ' || r || ' of table ' || i || ': ' || md5(r::text) || ' ' || md5((r * i)::text));
        END LOOP;
    END LOOP;
END $$;
SELECT count(*) FILTER (WHERE locktype = 'advisory' AND objsubid = 21320),
       count(*) FILTER (WHERE mode = 'ShareRowExclusiveLock' AND relation::regclass::text LIKE 'many%')
FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;},
    "20 tables, 3,000 rows round-robin in one transaction, succeed with a lock table of $slots locks");
my ($advisory, $locked) = split /\|/, $out // '0|0';
cmp_ok($advisory, '<=', $slots / 4 + 64, "20 tables: $advisory advisory locks held, about a quarter of the lock table at most");
cmp_ok($locked, '>', 0, "20 tables: $locked of them were written under their table lock once the budget was reached");

$node->stop;
done_testing();
