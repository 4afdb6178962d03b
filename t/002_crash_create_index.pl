# kill -9 of the server while simhash_create_index builds the block indexes of a large
# table: while it builds the first index, a later one, and while it analyzes the table at
# the end; first with no layout, then while it replaces a layout. After each restart the
# column has either its whole layout (the simhash_layouts row and every one of its
# indexes, valid and amcheck-clean, answering as a scan does) or none of it, and it is the
# state from before the killed call; simhash_create_index then succeeds.
# Rows: 4 x SIMHASH_TAP_ROWS.
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

my $rows = 4 * tap_rows();
my $node = simhash_node('index');
$node->start;

# Random fingerprints, every fifth one a single bit away from the one before it.
$node->safe_psql(
    'postgres', qq{
CREATE EXTENSION simhash;
CREATE EXTENSION amcheck;
CREATE TABLE fps AS
SELECT i AS id,
       CASE WHEN i % 5 = 0
            THEN ((hashint8(i - 1)::bigint << 32) | (hashint8(1 - i)::bigint & 4294967295))
                 # (1::bigint << (i % 61)::integer)
            ELSE (hashint8(i)::bigint << 32) | (hashint8(-i)::bigint & 4294967295) END AS fp
FROM generate_series(1, $rows) i;
ANALYZE fps;
-- Queries: 100 fingerprints of the table with up to 3 bits flipped, 20 random ones.
CREATE TABLE queries AS
SELECT row_number() OVER () AS qid, q FROM (
    SELECT fp # (CASE WHEN id % 4 > 0 THEN 1::bigint << (id % 59)::integer ELSE 0 END)
              # (CASE WHEN id % 4 > 1 THEN 1::bigint << (id % 53)::integer ELSE 0 END)
              # (CASE WHEN id % 4 > 2 THEN 1::bigint << (id % 47)::integer ELSE 0 END) AS q
    FROM fps WHERE id % ($rows / 100) = 1
    UNION ALL
    SELECT (hashint8(-i)::bigint << 32) | (hashint8(i)::bigint & 4294967295) FROM generate_series(1, 20) i) q;
ANALYZE queries;
});

# The state of fps.fp's layout: "none", or "k/blocks" when the layout row and all its
# indexes are there and valid; anything else (a half state) is spelled out.
sub layout_state
{
    my ($layout, $indexes, $invalid, $block_indexes) = split /\|/, scalar_sql(
        $node, q{
SELECT coalesce((SELECT max_distance || '/' || blocks FROM simhash_layouts WHERE tbl = 'fps'::regclass), 'none'),
       (SELECT count(*) FROM pg_index WHERE indrelid = 'fps'::regclass),
       (SELECT count(*) FROM pg_index WHERE indrelid = 'fps'::regclass
                                        AND NOT (indisvalid AND indisready AND indislive)),
       (SELECT count(*) FROM simhash_block_indexes('fps', 'fp'))});
    my $blocks = $layout eq 'none' ? 0 : (split m{/}, $layout)[1];
    return $layout if $indexes == $blocks && $block_indexes == $blocks && $invalid == 0;
    return "HALF: layout $layout, $indexes indexes ($invalid not valid, $block_indexes block indexes)";
}

# check_layout WHEN, K : amcheck and the answers of the layout's indexes against a scan.
sub check_layout
{
    my ($when, $k) = @_;
    my $indexes = amcheck_table($node, 'fps');
    like(scalar_sql($node, "SET enable_seqscan = off; EXPLAIN (COSTS OFF) SELECT q.qid, d.id FROM queries q JOIN fps d ON simhash_near(d.fp, q.q, $k)"),
        qr/fps_fp_simhash\d+_\d/, "$when: the search within $k goes through the block indexes");
    is(scalar_sql($node, block_answers_sql('fps', 'queries', $k, 1)),
        scalar_sql($node, block_answers_sql('fps', 'queries', $k, 0)),
        "$when: the block indexes answer 120 searches within $k as a scan does");
    return $indexes;
}

# crash_round NAME, K, AT : call simhash_create_index(fps, fp, K) and kill the server
# when it has reached AT ("index N": the N-th index it builds; "analyze": the ANALYZE at
# its end); after recovery the layout must be what it was before the call.
sub crash_round
{
    my ($name, $k, $at) = @_;
    my $before = layout_state();
    my $poll = $node->background_psql('postgres');
    $poll->set_query_timer_restart;
    # A serial build, and a larger statistics target for the ANALYZE at the end, make each
    # step long enough to be caught.
    my ($out, $err) = ('', '');
    my $h = IPC::Run::start(
        [ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres') . ' application_name=create_index',
          '-c', 'SET max_parallel_maintenance_workers = 0',
          '-c', 'SET default_statistics_target = 1000',
          '-c', "SELECT count(*) FROM simhash_create_index('fps', 'fp', $k)" ],
        '<', \undef, '>', \$out, '2>', \$err);
    my $t0 = time();
    my $phase;
    while (1)
    {
        # The indexes made so far: relations the call holds locked that the catalog does not
        # show yet (not committed).
        my ($made, $index_phase, $analyze) = map { $_ // '' } split /\|/, $poll->query_safe(q{
SELECT (SELECT count(*) FROM pg_locks l
        WHERE l.pid = s.pid AND l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock'
          AND NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = l.relation)),
       p.phase, a.phase
FROM pg_stat_activity s
LEFT JOIN pg_stat_progress_create_index p ON p.pid = s.pid
LEFT JOIN pg_stat_progress_analyze a ON a.pid = s.pid
WHERE s.application_name = 'create_index' AND s.backend_type = 'client backend' AND s.state = 'active'}), -1;
        my ($nth) = $at =~ /^index ([0-9]+)$/;
        if (defined $nth && $made eq $nth && $index_phase =~ /building/)
        {
            $phase = "$index_phase, index $nth";
            last;
        }
        if ($at eq 'analyze' && $analyze ne '')
        {
            $phase = "ANALYZE: $analyze";
            last;
        }
        $h->pump_nb;
        if (!$h->pumpable)
        {
            $h->finish;
            fail("$name: simhash_create_index ended before the kill ($at); raise SIMHASH_TAP_ROWS");
            $poll->quit;
            return;
        }
        usleep(10_000);
    }
    $poll->quit;
    my $seconds = time() - $t0;
    kill9_server($node);
    $h->finish;
    my ($recovery, $redo) = restart_timed($node);
    my $after = layout_state();
    is($after, $before, "$name: after the crash the layout is as before the call ($before)");
    my $indexes = $after eq 'none' ? 0 : check_layout("$name, after the crash", (split m{/}, $after)[0]);
    figure("crash during simhash_create_index ($name)",
        sprintf('killed after %.2f s in "%s"; recovery %.2f s (%s); layout after: %s (as before); %s',
            $seconds, $phase, $recovery, $redo, $after,
            $indexes ? "amcheck: $indexes B-tree indexes clean" : 'no index left'));
    return;
}

# create K : simhash_create_index without a crash, and the checks of the new layout.
sub create
{
    my ($k, $name) = @_;
    my $t0 = time();
    my $made = psql_ok($node, "SELECT count(*) FROM simhash_create_index('fps', 'fp', $k)",
        "$name: simhash_create_index(fps, fp, $k) succeeds");
    my $seconds = time() - $t0;
    my $state = layout_state();
    like($state, qr{^$k/[0-9]+$}, "$name: the layout is whole ($state)");
    my $indexes = check_layout($name, $k);
    figure("simhash_create_index ($name)",
        sprintf('%s indexes on %d rows in %.1f s; layout %s; amcheck: %d B-tree indexes clean', $made // '?', $rows, $seconds, $state, $indexes));
    return;
}

my $blocks = scalar_sql($node, 'SELECT simhash_layout_blocks(3, 1e6)');
crash_round('no layout yet, first index', 3, 'index 1');
crash_round('no layout yet, last index', 3, "index $blocks");
crash_round('no layout yet, ANALYZE', 3, 'analyze');
create(3, 'no layout yet, after three crashes');
crash_round('replacing layout 3 by 6, second index', 6, 'index 2');
crash_round('replacing layout 3 by 6, ANALYZE', 6, 'analyze');
create(6, 'replacing layout 3 by 6, after two crashes');

# What the killed builds left: PostgreSQL does not remove the files of relations created
# by a transaction that a crash interrupted. A figure, not a test.
my $db = scalar_sql($node, "SELECT oid FROM pg_database WHERE datname = current_database()");
my %live = map { $_ => 1 } split /\n/, scalar_sql($node,
    'SELECT pg_relation_filenode(oid) FROM pg_class WHERE pg_relation_filenode(oid) IS NOT NULL');
my ($orphans, $bytes) = (0, 0);
opendir my $dir, $node->data_dir . "/base/$db" or die "cannot list base/$db: $!";
for my $file (readdir $dir)
{
    next unless $file =~ /^([0-9]+)(?:_(?:fsm|vm|init))?(?:\.[0-9]+)?$/ && !$live{$1};
    $orphans++;
    $bytes += -s $node->data_dir . "/base/$db/$file";
}
closedir $dir;
figure('files left by the killed builds', sprintf('%d files, %.1f MB (not removed by crash recovery)', $orphans, $bytes / 1048576));

$node->stop;
done_testing();
