# A streaming replica of a table loaded through the dedupe trigger: the standby replays the
# block indexes' creation and the load, answers near-duplicate searches while in recovery,
# and once promoted its block indexes answer exactly as the primary's did (the same rows
# for 120 searches), pass amcheck, and serve the trigger. Rows: SIMHASH_TAP_ROWS.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use SimhashTest;
use Test::More;
use Time::HiRes qw(time);

my $rows = tap_rows();
my $chunks = 10;
my $k = 3;

my $primary = simhash_node('primary', allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION simhash; CREATE EXTENSION amcheck;');
# The standby starts from a base backup taken before the table exists: it replays the
# creation of the indexes and the whole load.
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

my $files = write_input($PostgreSQL::Test::Utils::tmp_check, $rows, $chunks);
$primary->safe_psql(
    'postgres', qq{
CREATE TABLE docs (
    id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chunk integer NOT NULL,
    line  integer NOT NULL,
    body  text NOT NULL,
    fp    bigint);
CREATE TRIGGER docs_dedupe BEFORE INSERT OR UPDATE OF body, fp ON docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '$k', 'skip');
SELECT count(*) FROM simhash_create_index('docs', 'fp', $k);
});
my $t0 = time();
$primary->safe_psql('postgres', join '', map { "COPY docs (chunk, line, body) FROM '$_';\n" } @$files);
my $load = time() - $t0;
# Queries: fingerprints of 100 rows with 0 to 3 bits flipped, and 20 random ones.
$primary->safe_psql(
    'postgres', q{
CREATE TABLE queries AS
SELECT row_number() OVER () AS qid, q FROM (
    SELECT fp # (CASE WHEN id % 4 > 0 THEN 1::bigint << (id % 61)::integer ELSE 0 END)
              # (CASE WHEN id % 4 > 1 THEN 1::bigint << (id % 59)::integer ELSE 0 END)
              # (CASE WHEN id % 4 > 2 THEN 1::bigint << (id % 53)::integer ELSE 0 END) AS q
    FROM (SELECT id, fp FROM docs WHERE fp IS NOT NULL ORDER BY hashint8(id) LIMIT 100) s
    UNION ALL
    SELECT (hashint8(i)::bigint << 32) | (hashint8(-i)::bigint & 4294967295) FROM generate_series(1, 20) i) q;
ANALYZE docs, queries;
});
my $kept = scalar_sql($primary, 'SELECT count(*) FROM docs');
my $near = scalar_sql($primary, near_pairs_sql('docs', $k));
is($near, 0, "primary: no two of the $kept rows kept are within k = $k");

$t0 = time();
$primary->wait_for_catchup($standby);
my $catchup = time() - $t0;

my $plan = "EXPLAIN (COSTS OFF) SELECT q.qid, d.id FROM queries q JOIN docs d ON simhash_near(d.fp, q.q, $k)";
my $on_primary = scalar_sql($primary, block_answers_sql('docs', 'queries', $k, 1));
is($on_primary, scalar_sql($primary, block_answers_sql('docs', 'queries', $k, 0)),
    'primary: the block indexes answer 120 searches as a scan does');
my ($answers) = split / /, $on_primary;
cmp_ok($answers, '>=', 100, "primary: the searches found rows ($answers)");

like(scalar_sql($standby, "SET enable_seqscan = off; $plan"), qr/docs_fp_simhash\d+_\d/,
    'standby in recovery: the searches go through the block indexes');
is(scalar_sql($standby, block_answers_sql('docs', 'queries', $k, 1)), $on_primary,
    'standby in recovery: the same rows for the 120 searches as the primary');

# Verified near duplicates read the table on the standby too, in memory and past work_mem
# (temporary files, no temporary table), and answer as the primary.
my $similar = "SELECT count(*) || ' ' || coalesce(sum(hashint8(id1 * 1000003 + id2)), 0) || ' ' || "
  . "coalesce(round(sum(similarity)::numeric, 6), 0) FROM simhash_similar_pairs('SELECT id, body FROM docs', 0.7)";
my $similar_on_primary = scalar_sql($primary, "SET work_mem = '1GB'; $similar");
is(scalar_sql($standby, "SET work_mem = '1GB'; $similar"), $similar_on_primary,
    'standby in recovery: simhash_similar_pairs gives the primary\'s pairs');
is(scalar_sql($standby, "SET work_mem = '1GB'; SELECT count(*) FROM simhash_similar_clusters('SELECT id, body FROM docs', 0.7)"),
    scalar_sql($primary, "SET work_mem = '1GB'; SELECT count(*) FROM simhash_similar_clusters('SELECT id, body FROM docs', 0.7)"),
    'standby in recovery: simhash_similar_clusters gives the primary\'s rows');
# Past work_mem the shingle sets go to temporary files, which a standby may write.
is(scalar_sql($standby, "SET work_mem = '64kB'; $similar"), $similar_on_primary,
    'standby in recovery: simhash_similar_pairs in temporary files (64kB) gives the primary\'s pairs');

$t0 = time();
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby did not finish its promotion';
my $promotion = time() - $t0;
$primary->stop;

is(scalar_sql($standby, "SELECT max_distance || '/' || blocks FROM simhash_layouts WHERE tbl = 'docs'::regclass"),
    scalar_sql($standby, "SELECT '$k/' || count(*) FROM simhash_block_indexes('docs', 'fp')"),
    'promoted standby: the layout row and its block indexes are there');
like(scalar_sql($standby, "SET enable_seqscan = off; $plan"), qr/docs_fp_simhash\d+_\d/,
    'promoted standby: the searches go through the block indexes');
is(scalar_sql($standby, block_answers_sql('docs', 'queries', $k, 1)), $on_primary,
    'promoted standby: the same rows for the 120 searches as the primary');
my $indexes = amcheck_table($standby, 'docs');
is(scalar_sql($standby, near_pairs_sql('docs', $k)), 0, 'promoted standby: no near pairs');

# The trigger on the promoted standby: a copy of a row with its case changed is a near
# duplicate (skipped), a new text is not.
is(scalar_sql($standby, q{
WITH i AS (INSERT INTO docs (chunk, line, body)
           SELECT 0, 0, upper(body) FROM docs ORDER BY id LIMIT 1 RETURNING 1)
SELECT count(*) FROM i}), 0, 'promoted standby: the trigger skips a near duplicate');
is(scalar_sql($standby, q{
WITH i AS (INSERT INTO docs (chunk, line, body)
           VALUES (0, 0, 'A sentence written after the promotion, found nowhere else in the table.') RETURNING 1)
SELECT count(*) FROM i}), 1, 'promoted standby: the trigger keeps a new text');
amcheck_table($standby, 'docs');

figure('streaming replica',
    sprintf('%d rows offered, %d kept, loaded in %.0f s; standby caught up %.1f s later; '
          . 'promoted in %.2f s; same rows as the primary for 120 searches; amcheck: %d B-tree indexes clean; near pairs: 0',
        $rows, $kept, $load, $catchup, $promotion, $indexes));

$standby->stop;
done_testing();
