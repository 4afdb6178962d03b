# Helpers of the TAP tests in t/ (PostgreSQL::Test::Cluster): the input text with near
# duplicates, a kill -9 of every process of a server, its restart with the recovery time,
# and the checks run after a crash (amcheck, near-duplicate pairs, answers through the
# indexes against a sequential scan).
#
# The size of the tests is SIMHASH_TAP_ROWS (default 50000): the rows offered to the
# COPY of t/001, to the standby of t/003, and a quarter of the table of t/002.
package SimhashTest;

use strict;
use warnings;

use Encode qw(decode encode FB_CROAK);
use Exporter 'import';
use IO::Uncompress::Gunzip;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(tap_rows simhash_node write_input kill9_server restart_timed
  figure amcheck_table near_pairs_sql similar_pairs_sql block_answers_sql
  psql_ok scalar_sql);

# tap_rows : the size of the tests, from SIMHASH_TAP_ROWS. Below 20,000 rows a COPY of a
# tenth of them is over too soon to be killed half-way.
sub tap_rows
{
    my $rows = $ENV{SIMHASH_TAP_ROWS} // 50000;
    die "SIMHASH_TAP_ROWS must be a whole number of at least 20000, not '$rows'\n"
      unless $rows =~ /^[0-9]+$/ && $rows >= 20000;
    return $rows;
}

# simhash_node NAME, INIT_PARAMS... : a new node, initialised and configured for bulk
# loads (not started). The settings undo those of init(allows_streaming => 1) that would
# make a load of 500k rows crawl (shared_buffers = 1MB).
sub simhash_node
{
    my ($name, %params) = @_;
    my $node = PostgreSQL::Test::Cluster->new($name);
    $node->init(%params);
    $node->append_conf(
        'postgresql.conf', q{
shared_buffers = 128MB
max_wal_size = 1GB
jit = off
max_parallel_workers_per_gather = 0
});
    return $node;
}

# figure NAME, VALUE : print a measured figure (prove shows it; scripts/tap.sh collects
# the lines that start with "figure:").
sub figure
{
    my ($name, $value) = @_;
    diag("figure: $name: $value");
    return;
}

# scalar_sql NODE, SQL : the output of a query that must succeed, without its newline.
sub scalar_sql
{
    my ($node, $sql) = @_;
    my $out = $node->safe_psql('postgres', $sql);
    chomp $out;
    return $out;
}

# psql_ok NODE, SQL, NAME : run SQL as one test; returns its output (undef on failure,
# with the error shown).
sub psql_ok
{
    my ($node, $sql, $name) = @_;
    my ($out, $err);
    my $ret = $node->psql('postgres', $sql, stdout => \$out, stderr => \$err,
        on_error_stop => 1);
    ok($ret == 0, $name) or diag("psql failed ($ret): $err");
    return $ret == 0 ? $out : undef;
}

# ---------------------------------------------------------------------------------------
# The input: real sentences, and near duplicates of earlier rows.

# Up to WANT sentences of real text, each once, in a fixed order: those of the Debian
# copyright files (licences and notices, many of them near copies of each other), then
# those of the packages' changelogs (changelog.Debian.gz) while more are wanted. On a
# machine with fewer than 2,000 of them, made-up ones: random words of a small vocabulary.
sub sentences
{
    my ($want) = @_;
    my (%seen, @sentences);
    my $add = sub {
        my ($bytes) = @_;
        my $text = eval { decode('UTF-8', $bytes, FB_CROAK) } // decode('ISO-8859-1', $bytes);
        $text =~ s/[\x00-\x20\x7f\x{85}\x{a0}\x{2028}\x{2029}]+/ /g;
        for my $s (split /(?<=[.;:!?]) | \* | -- /, $text)
        {
            $s =~ s/^[ *-]+| +$//g;
            my $words = () = $s =~ / /g;
            next if $words < 5 || $words > 60 || $seen{$s}++;
            push @sentences, $s;
        }
    };
    for my $file (sort glob('/usr/share/doc/*/copyright'))
    {
        open my $fh, '<:raw', $file or next;
        local $/ = '';    # paragraph mode
        while (my $para = <$fh>) { $add->($para); }
    }
    for my $file (sort glob('/usr/share/doc/*/changelog.Debian.gz'))
    {
        last if @sentences >= $want;
        my $fh = IO::Uncompress::Gunzip->new($file) or next;
        local $/ = '';
        while (my $para = <$fh>) { $add->($para); }
        close $fh;
    }
    my @vocabulary = qw(software licence copy permission granted notice warranty
      holder author distribute modify source binary form file package program
      library terms conditions merchantability fitness release upload bug fix);
    while (@sentences < 2000)
    {
        push @sentences, join(' ', map { $vocabulary[ int(rand(@vocabulary)) ] } 1 .. 8 + int(rand(12))) . '.';
    }
    return \@sentences;
}

# One or two small edits of a text, such as people make: a word deleted, inserted,
# repeated, swapped with its neighbour, upper-cased, or its punctuation dropped.
sub edit_text
{
    my ($text) = @_;
    my @w = split / /, $text;
    for (1 .. 1 + int(rand(2)))
    {
        my $i = int(rand(scalar @w));
        my $e = int(rand(6));
        if    ($e == 0 && @w > 4) { splice @w, $i, 1; }
        elsif ($e == 1)           { $w[$i] = uc $w[$i]; }
        elsif ($e == 2)           { $w[$i] =~ tr/,.;:()"//d; }
        elsif ($e == 3) { splice @w, $i, 0, (qw(the new and also now 2024))[ int(rand(6)) ]; }
        elsif ($e == 4) { splice @w, $i, 0, $w[$i]; }
        elsif ($i + 1 < @w) { @w[ $i, $i + 1 ] = @w[ $i + 1, $i ]; }
    }
    return join ' ', grep { $_ ne '' } @w;
}

# write_input DIR, ROWS, CHUNKS : write ROWS rows of COPY text format (chunk, line, body)
# into CHUNKS files DIR/input_ROWS/N.copy (N = 1..CHUNKS, in line order), or find them
# there from an earlier test of the same run; returns the list of files. Deterministic for a
# given machine: 70 % of the rows are one to three sentences drawn at random (from as many
# sentences as there are rows, or all there are: then each comes back in several rows), 30 %
# are an earlier row (one of the last 50 half of the time, else one of the last 20,000)
# with one or two small edits, so that many are near duplicates.
sub write_input
{
    my ($dir, $rows, $chunks) = @_;
    $dir = "$dir/input_${rows}_$chunks";
    my $per_chunk = int(($rows + $chunks - 1) / $chunks);
    my @files = map { "$dir/$_.copy" } 1 .. int(($rows + $per_chunk - 1) / $per_chunk);
    return \@files if -e "$dir/complete";
    mkdir $dir or -d $dir or die "cannot make $dir: $!";
    srand(20261124);
    my $sentences = sentences($rows);
    my (@recent, $fh);
    for my $line (1 .. $rows)
    {
        if (($line - 1) % $per_chunk == 0)
        {
            close $fh if $fh;
            my $file = $files[ int(($line - 1) / $per_chunk) ];
            open $fh, '>:raw', $file or die "cannot write $file: $!";
        }
        my $chunk = 1 + int(($line - 1) / $per_chunk);
        my $text;
        if (@recent && rand() < 0.3)
        {
            my $window = rand() < 0.5 ? 50 : 20000;
            $window = @recent if $window > @recent;
            $text = edit_text($recent[ -1 - int(rand($window)) ]);
        }
        else
        {
            $text = join ' ',
              map { $sentences->[ int(rand(scalar @$sentences)) ] } 1 .. 1 + int(rand(3));
        }
        push @recent, $text;
        shift @recent if @recent > 20000;
        (my $field = encode('UTF-8', $text)) =~ s/\\/\\\\/g;
        print $fh "$chunk\t$line\t$field\n";
    }
    close $fh;
    open my $done, '>', "$dir/complete" or die "cannot write $dir/complete: $!";
    close $done;
    return \@files;
}

# ---------------------------------------------------------------------------------------
# Crash and restart.

# The parent process of PID, from /proc; undef when PID is a zombie or gone.
sub parent_of
{
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return undef;
    my $stat = <$fh>;
    close $fh;
    return undef unless defined $stat && $stat =~ /\)\s+(\S)\s+(\d+)/;
    return $1 eq 'Z' ? undef : $2;
}

# kill9_server NODE : kill -9 the postmaster and every one of its processes at once, so
# that none of them can write anything more (no shutdown checkpoint, no orderly crash
# handling by the postmaster). The postmaster is stopped first (SIGSTOP) so that it forks
# no process between the listing of its children and the kill. Returns when all are gone.
sub kill9_server
{
    my ($node) = @_;
    my $pidfile = $node->data_dir . '/postmaster.pid';
    my ($postmaster) = split /\n/, slurp_file($pidfile);
    die "no postmaster pid in $pidfile" unless $postmaster && $postmaster =~ /^[0-9]+$/;
    kill 'STOP', $postmaster or die "cannot stop postmaster $postmaster: $!";
    opendir my $proc, '/proc' or die "cannot read /proc: $!";
    my @children = grep { /^[0-9]+$/ && (parent_of($_) // -1) == $postmaster } readdir $proc;
    closedir $proc;
    kill 'KILL', @children if @children;
    $node->kill9;    # the postmaster; the node then knows it is down
    # Until they are reaped: a new postmaster refuses to start while the old one's PID
    # exists, even as a zombie.
    my $deadline = time() + 60;
    while (grep { -e "/proc/$_" } $postmaster, @children)
    {
        die "server processes still there 60 s after kill -9" if time() > $deadline;
        usleep(20_000);
    }
    return scalar(@children) + 1;
}

# restart_timed NODE : start a node that crashed; returns the seconds pg_ctl start took
# (crash recovery included) and the redo figures of the server log ("redo done at ...
# elapsed: 0.52 s" and the amount of WAL replayed).
sub restart_timed
{
    my ($node) = @_;
    my $log_before = -s $node->logfile // 0;
    my $t0 = time();
    $node->start;
    my $seconds = time() - $t0;
    my $log = slurp_file($node->logfile);
    $log = substr($log, $log_before) if length($log) >= $log_before;
    my ($start) = $log =~ /redo starts at ([0-9A-F]+\/[0-9A-F]+)/;
    my ($done, $elapsed) = $log =~ /redo done at ([0-9A-F]+\/[0-9A-F]+).*?elapsed: ([0-9.]+) s/;
    my $redo = 'no redo';
    if (defined $start && defined $done)
    {
        my $mb = (lsn_bytes($done) - lsn_bytes($start)) / 1048576;
        $redo = sprintf('%.1f MB of WAL replayed in %s s', $mb, $elapsed // '?');
    }
    ok($log =~ /database system was interrupted|was not properly shut down/,
        'the server went through crash recovery');
    return ($seconds, $redo);
}

sub lsn_bytes
{
    my ($lsn) = @_;
    my ($hi, $lo) = split '/', $lsn;
    return hex($hi) * 4294967296 + hex($lo);
}

# ---------------------------------------------------------------------------------------
# Checks.

# amcheck_table NODE, TABLE : bt_index_check(heapallindexed => true) on every B-tree index
# of TABLE, as one test; returns the number of indexes checked.
sub amcheck_table
{
    my ($node, $table) = @_;
    my $out = psql_ok(
        $node, qq{
SELECT count(*) FROM (
    SELECT bt_index_check(i.indexrelid, true)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
    WHERE i.indrelid = '$table'::regclass AND a.amname = 'btree'
    ORDER BY i.indexrelid) s},
        "amcheck: every B-tree index of $table is clean (heapallindexed)");
    return $out // 0;
}

# near_pairs_sql REL, K : a query counting the pairs of rows of REL (id, fp) within
# Hamming distance K (1..63). It is exact, as the full self-join would be, but costs a
# hash join instead of n^2 / 2 hamming() calls: of k + 1 disjoint blocks of the 64 bits,
# two fingerprints within k agree on at least one (pigeonhole), so every such pair is among
# the pairs that share a block value, and each of those is checked with hamming(). The
# blocks are cut with plain shifts and masks, independently of the extension's own
# simhash_block.
sub near_pairs_sql
{
    my ($rel, $k) = @_;
    my $n = $k + 1;
    return qq{
WITH blocks AS (
    SELECT r.id, r.fp, b,
           (r.fp >> (b * 64 / $n)) & ((1::bigint << ((b + 1) * 64 / $n - b * 64 / $n)) - 1) AS v
    FROM $rel r, generate_series(0, $k) b
    WHERE r.fp IS NOT NULL)
SELECT count(*) FROM (
    SELECT DISTINCT x.id, y.id
    FROM blocks x JOIN blocks y ON y.b = x.b AND y.v = x.v AND y.id > x.id
    WHERE hamming(x.fp, y.fp) <= $k) p};
}

# similar_pairs_sql REL, T : a query counting the pairs of rows of REL (id, body, lsh)
# that share an LSH key and have a simhash_jaccard of at least T: the pairs the dedupe
# trigger with threshold T must keep out (see docs/dedupe.md: it guarantees the pairs that
# share a key). The pairs sharing a key are found first; OFFSET 0 keeps the planner from
# computing the similarity of every pair of rows instead.
sub similar_pairs_sql
{
    my ($rel, $t) = @_;
    return qq{
WITH keys AS (SELECT r.id, k FROM $rel r, unnest(r.lsh) k),
cand AS MATERIALIZED (
    SELECT DISTINCT x.id AS a, y.id AS b FROM keys x JOIN keys y ON y.k = x.k AND y.id > x.id)
SELECT count(*) FROM (
    SELECT simhash_jaccard(x.body, y.body) AS j
    FROM cand JOIN $rel x ON x.id = cand.a JOIN $rel y ON y.id = cand.b
    OFFSET 0) s
WHERE j >= $t};
}

# block_answers_sql TABLE, QUERIES, K : the rows of TABLE (id, fp) within K of each query
# fingerprint of QUERIES (qid, q), as one text; with enable_seqscan = off they come from
# the block indexes, with index scans off from a scan of the table.
sub block_answers_sql
{
    my ($table, $queries, $k, $through_index) = @_;
    my $settings =
      $through_index
      ? 'SET enable_seqscan = off;'
      : 'SET enable_indexscan = off; SET enable_bitmapscan = off;';
    my $cond = $through_index ? "simhash_near(d.fp, q.q, $k)" : "hamming(d.fp, q.q) <= $k";
    return qq{$settings
SELECT count(*) || ' ' || coalesce(md5(string_agg(q.qid || ':' || d.id, ',' ORDER BY q.qid, d.id)), '-')
FROM $queries q JOIN $table d ON $cond;};
}

1;
