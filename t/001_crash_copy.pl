# kill -9 of the server in the middle of a COPY through the dedupe trigger.
#
# Two tables, each loaded by a series of COPYs (one transaction per chunk of rows) of real
# text with near duplicates, each killed half-way through its load:
#   docs      the trigger with a Hamming distance (k = 3, skip) and its block indexes;
#   docs_sim  the trigger with a similarity threshold (0.8, skip), its LSH keys in a GIN
#             index, its stored shingle sets ('sets=sets'), and block indexes on a
#             generated fingerprint column.
# After the restart (crash recovery), and again after the load is resumed from the first
# chunk that had not committed: every B-tree index passes amcheck with heapallindexed, the
# block indexes and the GIN index answer exactly as a scan of the table, the committed
# chunks are all there, and no two rows are near duplicates (within k; with a similarity
# of at least 0.8 among the rows that share an LSH key). At the end, each table holds
# exactly the rows that a load of the same input without a crash keeps.
# Rows: SIMHASH_TAP_ROWS. With SIMHASH_TAP_BULK=1, every chunk is loaded through the bulk
# path instead, simhash_dedupe_insert() (each chunk COPYed into a temporary table, then
# loaded from it in one transaction): the crash comes in the middle of its COPY FROM.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SimhashTest;
use Test::More;
use Time::HiRes qw(time usleep);

my $rows = tap_rows();
my $chunks = 10;
my $k = 3;
my $t = 0.8;

my $node = simhash_node('copy');
$node->start;

my $t0 = time();
my $files = write_input($PostgreSQL::Test::Utils::tmp_check, $rows, $chunks);
note(sprintf('input: %d rows in %d files, written in %.1f s', $rows, scalar @$files, time() - $t0));

# create_tables SUFFIX : docs and docs_sim (with SUFFIX appended to their names).
sub create_tables
{
    my ($suffix) = @_;
    $node->safe_psql(
        'postgres', qq{
SET client_min_messages = warning;
CREATE TABLE docs$suffix (
    id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chunk integer NOT NULL,
    line  integer NOT NULL,
    body  text NOT NULL,
    fp    bigint);
CREATE TRIGGER docs_dedupe BEFORE INSERT OR UPDATE OF body, fp ON docs$suffix FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '$k', 'skip');
SELECT count(*) FROM simhash_create_index('docs$suffix', 'fp', $k);

CREATE TABLE docs_sim$suffix (
    id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chunk integer NOT NULL,
    line  integer NOT NULL,
    body  text NOT NULL,
    lsh   bigint[],
    sets  bytea,
    fp    bigint GENERATED ALWAYS AS (simhash(body)) STORED);
CREATE INDEX docs_sim${suffix}_lsh ON docs_sim$suffix USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER docs_sim_dedupe BEFORE INSERT OR UPDATE OF body, lsh ON docs_sim$suffix FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '$t', 'skip', 'sets=sets');
SELECT count(*) FROM simhash_create_index('docs_sim$suffix', 'fp', $k);});
    return;
}

$node->safe_psql('postgres', 'CREATE EXTENSION simhash; CREATE EXTENSION amcheck;');
create_tables('');
$node->safe_psql(
    'postgres', qq{
-- The first 3,000 rows offered, to show that the checks below do find near duplicates.
CREATE TABLE offered (chunk integer, line integer, body text);
COPY offered FROM '$files->[0]';
DELETE FROM offered WHERE line > 3000;
ALTER TABLE offered ADD COLUMN id bigint GENERATED ALWAYS AS (line) STORED,
    ADD COLUMN fp bigint GENERATED ALWAYS AS (simhash(body)) STORED,
    ADD COLUMN lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED;
ANALYZE offered;
});

# The checks must see near duplicates where there are some: on the rows offered, the
# exact pigeonhole join finds what a full self-join finds.
my $offered_near = scalar_sql($node, near_pairs_sql('offered', $k));
my $offered_brute = scalar_sql($node,
    "SELECT count(*) FROM offered x JOIN offered y ON y.id > x.id WHERE hamming(x.fp, y.fp) <= $k");
is($offered_near, $offered_brute,
    'near-pair check: the pigeonhole join finds what the full self-join finds');
cmp_ok($offered_near, '>', 0, 'the input holds near duplicates');
my $offered_similar = scalar_sql($node, similar_pairs_sql('offered', $t));
cmp_ok($offered_similar, '>', 0, 'the input holds pairs with a similarity of at least 0.8');
figure('COPY input', "$rows rows offered in $chunks COPYs; among the first 3000, $offered_near pairs within k = $k, $offered_similar with similarity >= $t");

# load TABLE, FIRST : COPY the chunks FIRST.. into TABLE, one transaction each, in a
# background psql; returns the IPC::Run handle.
sub load
{
    my ($table, $first) = @_;
    my $script = "$PostgreSQL::Test::Utils::tmp_check/load_$table.sql";
    open my $fh, '>', $script or die "cannot write $script: $!";
    for my $i ($first .. @$files)
    {
        if ($ENV{SIMHASH_TAP_BULK})
        {
            print $fh "BEGIN;\n"
              . "CREATE TEMP TABLE chunk_rows (chunk integer, line integer, body text) ON COMMIT DROP;\n"
              . "COPY chunk_rows FROM '$files->[$i - 1]';\n"
              . "SELECT simhash_dedupe_insert('$table', 'SELECT chunk, line, body FROM chunk_rows ORDER BY line') \\g /dev/null\n"
              . "COMMIT;\n";
        }
        else
        {
            print $fh "COPY $table (chunk, line, body) FROM '$files->[$i - 1]';\n";
        }
    }
    close $fh;
    my ($out, $err) = ('', '');
    return IPC::Run::start(
        [ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-f', $script ],
        '<', \undef, '>', \$out, '2>', \$err);
}

# check TABLE, WHEN : the checks after a crash (WHEN says which moment, for the names).
sub check
{
    my ($table, $when) = @_;
    my $indexes = amcheck_table($node, $table);
    my $blocks = scalar_sql($node, "SELECT blocks FROM simhash_layouts WHERE tbl = '$table'::regclass");
    cmp_ok($indexes, '>=', $blocks + 1, "$when: amcheck covered the $blocks block indexes of $table and its primary key");

    # Queries: fingerprints of 100 rows with 0 to 3 bits flipped, and 20 random ones.
    $node->safe_psql(
        'postgres', qq{
DROP TABLE IF EXISTS queries;
CREATE TABLE queries AS
SELECT row_number() OVER () AS qid, q FROM (
    SELECT fp # (CASE WHEN id % 4 > 0 THEN 1::bigint << (id % 61)::integer ELSE 0 END)
              # (CASE WHEN id % 4 > 1 THEN 1::bigint << (id % 59)::integer ELSE 0 END)
              # (CASE WHEN id % 4 > 2 THEN 1::bigint << (id % 53)::integer ELSE 0 END) AS q
    FROM (SELECT id, fp FROM $table WHERE fp IS NOT NULL ORDER BY hashint8(id) LIMIT 100) s
    UNION ALL
    SELECT (hashint8(i)::bigint << 32) | (hashint8(-i)::bigint & 4294967295) FROM generate_series(1, 20) i) q;
ANALYZE queries;});
    my $plan = scalar_sql($node,
        "SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT q.qid, d.id FROM queries q JOIN $table d ON simhash_near(d.fp, q.q, $k)");
    like($plan, qr/simhash\d+_\d/, "$when: the near-duplicate search on $table goes through the block indexes");
    my $through_index = scalar_sql($node, block_answers_sql($table, 'queries', $k, 1));
    my $through_scan = scalar_sql($node, block_answers_sql($table, 'queries', $k, 0));
    is($through_index, $through_scan, "$when: the block indexes of $table answer 120 searches as a scan does");

    if ($table eq 'docs_sim')
    {
        # The GIN index (gin_index_check is not in PostgreSQL 15): the rows holding each of
        # 200 keys, through the index and through a scan.
        my $keys = q{(SELECT k FROM (SELECT DISTINCT k FROM docs_sim, unnest(lsh) k) u
                      ORDER BY hashint8(k) LIMIT 200)};
        my $through_gin = qq{
SELECT count(*) || ' ' || md5(string_agg(q.k || ':' || d.id, ',' ORDER BY q.k, d.id))
FROM $keys q JOIN LATERAL (SELECT id FROM docs_sim WHERE lsh \@> ARRAY[q.k]) d ON true};
        like(scalar_sql($node, "SET enable_seqscan = off; EXPLAIN (COSTS OFF) $through_gin"),
            qr/Bitmap Index Scan on docs_sim_lsh/, "$when: the search by LSH key uses the GIN index");
        my $gin = scalar_sql($node, "SET enable_seqscan = off; $through_gin");
        my $scan = scalar_sql($node, qq{
SELECT count(*) || ' ' || md5(string_agg(q.k || ':' || d.id, ',' ORDER BY q.k, d.id))
FROM $keys q JOIN (SELECT id, k FROM docs_sim, unnest(lsh) k) d ON d.k = q.k});
        is($gin, $scan, "$when: the GIN index of docs_sim finds the rows of 200 keys as a scan does");
    }

    my $count = scalar_sql($node, "SELECT count(*) FROM $table");
    my $pairs;
    if ($table eq 'docs')
    {
        $pairs = scalar_sql($node, near_pairs_sql($table, $k));
        is($pairs, 0, "$when: no two of the $count rows of docs are within k = $k");
    }
    else
    {
        $pairs = scalar_sql($node, similar_pairs_sql($table, $t));
        is($pairs, 0, "$when: no two of the $count rows of docs_sim sharing an LSH key have a similarity >= $t");
        is(scalar_sql($node, "SELECT count(*) FROM docs_sim WHERE sets IS DISTINCT FROM '\\x01'::bytea || "
                . "(SELECT coalesce(string_agg((SELECT string_agg(substring(int8send(h) FROM 9 - i FOR 1), ''::bytea ORDER BY i) "
                . "FROM generate_series(1, 8) i), ''::bytea ORDER BY o), '') FROM unnest(simhash_shingles(body)) WITH ORDINALITY u(h, o))"),
            0, "$when: every row of docs_sim holds its shingle set as stored format 1");
    }
    return ($indexes, $pairs, $count);
}

for my $table (qw(docs docs_sim))
{
    # Load, and crash half-way: once half of the chunks have committed and the COPY of
    # the next one has reached a third of its rows. So that the crash comes at that
    # point whatever the machine's speed, a trigger that fires after the dedupe trigger
    # (triggers fire in name order) holds the COPY at that row: it waits for an advisory
    # lock that the polling session holds.
    my $per_chunk = int(($rows + $chunks - 1) / $chunks);
    my $target = int($chunks / 2);
    my $pause_line = $target * $per_chunk + int($per_chunk / 3) + 1;
    my $poll = $node->background_psql('postgres');
    $poll->set_query_timer_restart;
    $poll->query_safe('SELECT pg_advisory_lock(4242)');
    $node->safe_psql(
        'postgres', qq{
CREATE OR REPLACE FUNCTION pause_load() RETURNS trigger LANGUAGE plpgsql
    AS \$\$ BEGIN PERFORM pg_advisory_lock(4242); RETURN NEW; END \$\$;
CREATE TRIGGER zz_pause BEFORE INSERT ON $table FOR EACH ROW
    WHEN (NEW.line = $pause_line) EXECUTE FUNCTION pause_load();});
    my $h = load($table, 1);
    my $t_load = time();
    my ($committed_chunks, $in_copy) = (0, 0);
    while (1)
    {
        my $paused;
        ($committed_chunks, $in_copy, $paused) = split /\|/, $poll->query_safe(qq{
SELECT coalesce((SELECT max(chunk) FROM $table), 0),
       coalesce((SELECT tuples_processed FROM pg_stat_progress_copy WHERE relid = '$table'::regclass), -1),
       EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = 4242
               AND objsubid = 1 AND NOT granted)});
        last if $committed_chunks >= $target && $paused eq 't';
        if (!$h->pumpable)
        {
            $h->finish;
            BAIL_OUT("the load of $table ended before the crash point");
        }
        $h->pump_nb;
        usleep(100_000);
    }
    my $committed = $poll->query_safe("SELECT count(*) FROM $table");
    $poll->quit;
    my $load_seconds = time() - $t_load;
    my $killed = kill9_server($node);
    $h->finish;    # psql lost its connection
    note("killed $killed server processes after $load_seconds s of load");

    my ($recovery, $redo) = restart_timed($node);
    $node->safe_psql('postgres', "DROP TRIGGER zz_pause ON $table");
    my $after = scalar_sql($node, "SELECT count(*) FROM $table");
    cmp_ok($after, '>=', $committed, "$table: the $committed rows committed before the crash are there");
    my ($max_chunk, $distinct) = split /\|/,
      scalar_sql($node, "SELECT max(chunk), count(DISTINCT chunk) FROM $table");
    is($distinct, $max_chunk, "$table: chunks 1 to $max_chunk are there, no later one");
    cmp_ok($max_chunk, '<', $chunks, "$table: the crash came before the last chunk");

    my ($indexes) = check($table, "$table after recovery");
    figure("crash during COPY into $table",
        sprintf('%d rows committed before the kill (chunks 1-%d, %d rows into chunk %d); '
              . 'recovery %.2f s (%s); amcheck: %d B-tree indexes clean; near pairs: 0',
            $committed, $committed_chunks, $in_copy, $committed_chunks + 1, $recovery, $redo, $indexes));

    # Resume the load where it stopped: through the recovered indexes, the trigger must
    # still keep every near duplicate out.
    $t_load = time();
    $h = load($table, $max_chunk + 1);
    ok($h->finish, "$table: the load resumed from chunk " . ($max_chunk + 1) . ' and ended');
    my ($indexes2, $pairs2, $final) = check($table, "$table after the resumed load");
    figure("$table after the resumed load",
        sprintf('%d of %d rows kept (the rest near duplicates, skipped) in %.0f s; amcheck: %d B-tree indexes clean; near pairs: %d',
            $final, $rows, time() - $t_load, $indexes2, $pairs2));
}

# The same input loaded without a crash: the same rows must be kept (the trigger decides
# each row from the rows before it, so a crash and a resumed load change nothing).
create_tables('_ref');
for my $table (qw(docs docs_sim))
{
    my $t_load = time();
    $node->safe_psql('postgres', join '', map { "COPY ${table}_ref (chunk, line, body) FROM '$_';\n" } @$files);
    my $kept = q{count(*) || ' rows, lines ' || md5(string_agg(line::text, ',' ORDER BY line))};
    my $reference = scalar_sql($node, "SELECT $kept FROM ${table}_ref");
    is(scalar_sql($node, "SELECT $kept FROM $table"), $reference,
        "$table: the crash and the resumed load kept the same rows as a load without a crash");
    figure("$table against a load without a crash",
        sprintf('the same %d rows kept (that load: %.0f s)', (split / /, $reference)[0], time() - $t_load));
}

$node->stop;
done_testing();
