#!/usr/bin/env perl
# Random SQL for the SQL-level fuzzer (test/fuzz/sql_fuzz.sh): calls of every SQL function
# of the extension with random arguments, one statement a line, for a database in a given
# encoding.
#
#   test/fuzz/sql_gen.pl --setup --encoding ENC --text DIR        the tables the calls use
#   test/fuzz/sql_gen.pl --encoding ENC --text DIR --calls N --seed S   N statements
#
# ENC is the database encoding (UTF8, SQL_ASCII, LATIN1, EUC_CN, EUC_JP). Every text
# argument is written as convert_from('\x...'::bytea, 'ENC'), so the script itself is
# ASCII and the server decides what is valid: real text from DIR (build-fuzz/text, made
# by make_seeds.pl) re-encoded into ENC, random code points of many scripts, random bytes
# and broken sequences (errors in every encoding but SQL_ASCII, where they reach the
# extension), huge tokens, empty and blank strings. The other arguments: NaN, Infinity,
# huge, negative and subnormal weights and thresholds; random and extreme integers;
# tsvectors built and typed in (random lexemes and positions); hex and numeric strings;
# option names right, wrong and random; queries right, wrong and hostile; arrays with
# NULLs, of two dimensions, of different lengths; the dedupe trigger with random arguments
# and rows inserted and updated through it.
use strict;
use warnings;
use Encode qw(decode encode);
use Getopt::Long;

my ($encoding, $dir, $calls, $seed, $setup) = ('UTF8', 'build-fuzz/text', 100, 1, 0);
GetOptions('encoding=s' => \$encoding, 'text=s' => \$dir, 'calls=i' => \$calls,
           'seed=i' => \$seed, 'setup' => \$setup) or die "bad arguments\n";
my %perl_enc = (UTF8 => 'UTF-8', LATIN1 => 'iso-8859-1', EUC_CN => 'euc-cn',
                EUC_JP => 'euc-jp', SQL_ASCII => undef);
die "unknown encoding $encoding\n" unless exists $perl_enc{$encoding};
srand($seed);

# Real text: the chunks, as characters where they are valid UTF-8, else as bytes.
my (@texts, @broken);
for my $f (sort glob("$dir/*.txt")) {
    open(my $fh, '<:raw', $f) or die "$f: $!";
    local $/;
    my $raw = <$fh>;
    $raw =~ tr/\0//d;
    my $t = eval { decode('UTF-8', $raw, Encode::FB_CROAK) };
    if (defined $t) { push @texts, $t } else { push @broken, $raw }
}
push @texts, 'Permission is hereby granted, free of charge, to any person' unless @texts;
push @broken, "bad \xff\xfe utf8 \xe4\xb8 trunc" unless @broken;

sub pick { return $_[int(rand(@_))] }
sub chance { return rand() < $_[0] }

# --- Values ------------------------------------------------------------------------------

# Characters -> bytes in the database encoding (unencodable characters become '?').
sub to_db {
    my ($chars) = @_;
    my $e = $perl_enc{$encoding};
    return encode('UTF-8', $chars) unless defined $e;    # SQL_ASCII: the UTF-8 bytes
    return encode($e, $chars, sub { '?' });
}

# An SQL text expression holding these bytes (in the database encoding).
sub text_of_bytes {
    my ($bytes) = @_;
    $bytes =~ tr/\0//d;
    return "convert_from('\\x" . unpack('H*', $bytes) . "'::bytea, '$encoding')";
}

my @ranges = ([0x20, 0x7E], [0xA0, 0xFF], [0x300, 0x36F], [0x370, 0x3FF], [0x400, 0x4FF],
    [0x590, 0x5FF], [0x600, 0x6FF], [0x900, 0x97F], [0xE00, 0xE7F], [0x1100, 0x11FF],
    [0x2000, 0x206F], [0x3000, 0x30FF], [0x4E00, 0x9FFF], [0xAC00, 0xD7A3], [0xFB00, 0xFB4F],
    [0xFDF0, 0xFDFF], [0xFE00, 0xFE0F], [0xFF00, 0xFFEF], [0x1F300, 0x1FAFF], [0xE0000, 0xE007F],
    [0xF0000, 0xF00FF], [0x10FFF0, 0x10FFFF]);

sub random_chars {
    my ($n) = @_;
    my $s = '';
    for (1 .. $n) {
        my $r = pick(@ranges);
        my $cp = $r->[0] + int(rand($r->[1] - $r->[0] + 1));
        next if $cp >= 0xD800 && $cp <= 0xDFFF;
        $s .= chr($cp);
        $s .= ' ' if chance(0.2);
    }
    return $s;
}

# A random text value: an SQL expression of type text.
sub text_value {
    my $r = rand();
    if ($r < 0.40) {    # real text, a piece of a chunk
        my $t = pick(@texts);
        my $from = int(rand(length $t));
        my $len = chance(0.5) ? length($t) : 1 + int(rand(200));
        return text_of_bytes(to_db(substr($t, chance(0.3) ? $from : 0, $len)));
    }
    return text_of_bytes(to_db(random_chars(1 + int(rand(60))))) if $r < 0.60;
    if ($r < 0.70) {    # bytes: broken UTF-8, random bytes, damaged real text
        my $b = chance(0.5) ? pick(@broken) : join('', map { chr(1 + int(rand(255))) } 1 .. 1 + int(rand(80)));
        if (chance(0.3)) {
            my $t = to_db(pick(@texts));
            substr($t, int(rand(length $t)), 0) = pick("\xff", "\x80", "\xc3", "\xe4\xb8", "\xed\xa0\x80", "\xc0\xaf");
            $b = $t;
        }
        return text_of_bytes(substr($b, 0, 300));
    }
    if ($r < 0.78) {    # huge tokens
        my $unit = pick('x', 'Ab9', "\x{E9}", "\x{4E2D}", "\x{FDFA}", "a\x{301}", "\x{1F44D}\x{1F3FD}", "\x{E01}\x{E34}");
        my $n = pick(130, 1000, 20000, 200000, 2000000);
        return "repeat(" . text_of_bytes(to_db($unit)) . ", $n)";
    }
    return pick("''", "' '", "'  \t\n'", "'...,;!?'", "NULL", "'a'", "'A'", "'0'") if $r < 0.86;
    if ($r < 0.93) {    # stored rows
        return pick('(SELECT body FROM fz_docs ORDER BY random() LIMIT 1)',
            '(SELECT string_agg(body, \' \') FROM (SELECT body FROM fz_docs ORDER BY random() LIMIT 5) s)');
    }
    # two real texts glued
    return text_of_bytes(to_db(substr(pick(@texts), 0, 300) . pick(' ', '', "\n") . substr(pick(@texts), 0, 300)));
}

sub int_value {
    return pick(0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 20, 64, 65, 100, -1, -2, -2147483648, 2147483647,
        int(rand(20)), int(rand(1000)) - 500, 'NULL');
}
sub small_int { return pick(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -1, 'NULL') }
sub bigint_value {
    my $r = rand();
    return pick('0', '-1', '9223372036854775807', '(-9223372036854775808)', 'NULL') if $r < 0.15;
    return '(SELECT fp FROM fz_fps ORDER BY random() LIMIT 1)' if $r < 0.3;
    return 'simhash(' . text_value() . ')' if $r < 0.45;
    my $s = sprintf('%d', int(rand(2**31)) * (chance(0.5) ? 1 : -1)) . sprintf('%09d', int(rand(1e9)));
    $s =~ s/^(-?)0+(\d)/$1$2/;
    return "($s)::bigint";
}
sub float_value {
    return pick("'NaN'::float8", "'Infinity'::float8", "'-Infinity'::float8", '0', "'-0'::float8", '1',
        '0.5', '0.7', '0.69999', '0.8', '0.95', '1.0000001', '1e308', '-1', '4.9e-324', '1e-300',
        '2.5', '1e15', rand() * 2, -rand() * 10, 'NULL');
}
sub weight_value {
    return pick("'NaN'", "'Infinity'", "'-Infinity'", '0', '-0', '1', '0.5', '1e308', '1.7976931348623157e308',
        '-1', '4.9e-324', '1e-300', '2.5', '1e15', sprintf('%.6g', rand() * 100), 'NULL', '3', '1');
}
# Options: mostly valid, so that most calls get past the checks; sometimes anything.
sub tokenizer_value {
    return pick("'word'", "'char'") if chance(0.8);
    return pick("'WORD'", "'Char'", "''", "'words'", "'char '", "'idf'", 'NULL', text_of_bytes(to_db(random_chars(3))));
}
sub weighting_value {
    return pick("'tf'", "'binary'", "'log'") if chance(0.8);
    return pick("'idf'", "'TF'", "''", "'tfidf'", 'NULL', text_of_bytes(to_db(random_chars(2))));
}
sub n_value { return chance(0.85) ? pick(0 .. 8) : int_value() }
sub min_value { return chance(0.85) ? pick(1, 1, 1, 2, 3, 5, 10, 100) : int_value() }
sub text_array {
    my $r = rand();
    return "'{}'::text[]" if $r < 0.05;
    return "'{{a,b},{c,d}}'::text[]" if $r < 0.08;
    return "ARRAY['a', NULL]::text[]" if $r < 0.11;
    return 'tsvector_to_array(to_tsvector(\'simple\', ' . text_value() . '))' if $r < 0.2;
    my $n = int(rand(12));
    return 'ARRAY[' . join(', ', map { text_value() } 0 .. $n) . ']::text[]';
}
sub float_array {
    my ($n) = @_;
    my $r = rand();
    return "'{{1,2},{3,4}}'::float8[]" if $r < 0.04;
    return "'{}'::float8[]" if $r < 0.07;
    $n = int(rand(12)) + 1 if $r < 0.15 || !defined $n;    # a different length, sometimes
    return 'ARRAY[' . join(', ', map { weight_value() } 1 .. $n) . ']::float8[]';
}
sub shingle_array {
    my $r = rand();
    return 'simhash_shingles(' . text_value() . ')' if $r < 0.5;
    return "'{}'::bigint[]" if $r < 0.55;
    return "'{{1,2},{3,4}}'::bigint[]" if $r < 0.6;
    return 'ARRAY[1, NULL]::bigint[]' if $r < 0.63;
    return 'ARRAY[3, 2, 1]::bigint[]' if $r < 0.68;
    return 'ARRAY[1, 1]::bigint[]' if $r < 0.71;
    return 'ARRAY[' . join(', ', map { bigint_value() } 0 .. int(rand(8))) . ']::bigint[]';
}
sub tsvector_value {
    my $r = rand();
    return "to_tsvector('simple', " . text_value() . ')' if $r < 0.3;
    return "to_tsvector('english', " . text_value() . ')' if $r < 0.4;
    return "strip(to_tsvector('simple', " . text_value() . '))' if $r < 0.5;
    return "setweight(to_tsvector('simple', " . text_value() . "), 'A')" if $r < 0.55;
    return 'array_to_tsvector(' . text_array() . ')' if $r < 0.62;
    return "''::tsvector" if $r < 0.65;
    # Typed in: random lexemes (real words, random characters, quotes) with random
    # positions (0, 1..16383, beyond) and weights; some without positions.
    my @lex;
    for (0 .. int(rand(15))) {
        my $w = chance(0.5) ? (split /\s+/, pick(@texts))[0] // 'w' : random_chars(1 + int(rand(6)));
        $w =~ s/[\\']//g;
        $w = 'x' if $w eq '';
        my $pos = chance(0.2) ? '' : ':' . join(',', map { pick(0, 1, 2, 3, 5, 16383, 16384, 99999, int(rand(200))) . pick('', 'A', 'B', 'C', 'D') } 0 .. int(rand(4)));
        push @lex, "'" . $w . "'" . $pos;
    }
    my $lit = join(' ', @lex);
    $lit =~ s/'/''/g;    # the literal's own quotes (lexemes are quoted inside it)
    return text_of_bytes(to_db($lit)) . '::tsvector';
}
sub hex_value {
    my $r = rand();
    my @d = ('0' .. '9', 'a' .. 'f', 'A' .. 'F');
    return "'" . (chance(0.3) ? pick('0x', '0X') : '') . join('', map { pick(@d) } 1 .. int(rand(20))) . "'" if $r < 0.6;
    return pick("'0x'", "''", "' 1'", "'-1'", "'ffffffffffffffff'", "'10000000000000000'", "'0xG'", 'NULL') if $r < 0.8;
    return text_value();
}
sub numeric_value {
    my $r = rand();
    return "'" . pick('18446744073709551615', '18446744073709551616', '9223372036854775808', '0', '-0',
        '-1', '1.5', '1.000', '0.0000001', 'NaN', 'Infinity', '-Infinity', '1e19', '1e20', '123456789012345678901234567890') . "'::numeric" if $r < 0.5;
    return "'" . join('', map { int(rand(10)) } 1 .. 1 + int(rand(25))) . (chance(0.2) ? '.' . int(rand(100)) : '') . "'::numeric" if $r < 0.85;
    return 'simhash_to_numeric(' . bigint_value() . ')';
}
sub query_pairs {
    return pick("'SELECT id, fp FROM fz_fps'", "'SELECT id, fp FROM fz_fps LIMIT 7'",
        "'SELECT id, NULL::bigint FROM fz_fps'", "'SELECT 1::bigint, fp FROM fz_fps'",
        "'SELECT id, fp FROM fz_fps UNION ALL SELECT id, NULL FROM fz_fps WHERE id < 3'",
        "'SELECT id FROM fz_fps'", "'SELECT id, fp, fp FROM fz_fps'", "'SELECT body, fp FROM fz_docs, fz_fps LIMIT 3'",
        "'SELECT i, (hashint8(i)::bigint << 32) | (hashint8(-i)::bigint & 4294967295) FROM generate_series(1, 30000) i'",
        "'SELECT i, (i % 7)::bigint FROM generate_series(1, 3000) i'", "'SELECT id, fp FROM fz_fps WHERE false'",
        "'SELEC id'", "''", "'SELECT id, fp FROM fz_fps; DROP TABLE fz_fps'", "'SELECT NULL::bigint, NULL::bigint'",
        "'SELECT id::int, fp FROM fz_fps'", "'SELECT id, fp::numeric FROM fz_fps'", text_value());
}
sub query_texts {
    return pick("'SELECT id, body FROM fz_docs'", "'SELECT id, body FROM fz_docs LIMIT 5'",
        "'SELECT id, body FROM fz_dd'", "'SELECT id, NULL::text FROM fz_docs'", "'SELECT 1::bigint, body FROM fz_docs'",
        "'SELECT id FROM fz_docs'", "'SELECT body, id FROM fz_docs'", "'SELECT id, body || body FROM fz_docs'",
        "'SELECT i, repeat(''ab '', i % 50) FROM generate_series(1, 2000) i'", "'SELEC'", text_value());
}
sub query_bodies {
    return pick("'SELECT body FROM fz_docs'", "'SELECT body FROM fz_dd'", "'SELECT NULL::text'",
        "'SELECT id FROM fz_docs'", "'SELECT body, body FROM fz_docs'", "'SELECT 1 WHERE false'", "'bad sql'", text_value());
}
sub ident { return pick("'fz_fps'", "'fz_docs'", "'fz_dd'", "'fz_nope'", "'pg_class'", "'fz_fps'", text_value()) }
sub col { return pick("'fp'", "'id'", "'body'", "'keys'", "'nope'", "'fp'", "''", "'f\"p'", text_value()) }

# --- Calls ---------------------------------------------------------------------------------

my @calls = (
    [8, sub { 'SELECT simhash(' . text_value() . ')' }],
    [10, sub { 'SELECT simhash(' . join(', ', text_value(), tokenizer_value(), n_value(), weighting_value(), min_value()) . ')' }],
    [3, sub { 'SELECT simhash(' . text_value() . ', ' . tokenizer_value() . ')' }],
    [4, sub { 'SELECT count(*), sum(count) FROM simhash_features(' . join(', ', text_value(), tokenizer_value(), n_value()) . ')' }],
    [4, sub { 'SELECT simhash(' . text_array() . ', ' . min_value() . ')' }],
    [7, sub { my $n = 1 + int(rand(10)); 'SELECT simhash(ARRAY[' . join(', ', map { text_value() } 1 .. $n) . ']::text[], ' . float_array($n) . ', ' . small_int() . ')' }],
    [2, sub { 'SELECT simhash(' . text_array() . ', ' . float_array() . ')' }],
    [7, sub { 'SELECT simhash(' . join(', ', tsvector_value(), n_value(), weighting_value(), min_value()) . ')' }],
    [2, sub { 'SELECT count(*) FROM simhash_df(' . join(', ', query_bodies(), tokenizer_value(), n_value(), pick(1, 1, 0, -1, 2, '9223372036854775807')) . ')' }],
    [5, sub { 'SELECT simhash_tfidf(' . join(', ', text_value(), pick("'fz_df'", "'fz_df'", "'fz_bad_df'", "'fz_dup_df'", "'fz_neg_df'", "'fz_type_df'", "'pg_class'", "'fz_nope'"), tokenizer_value(), n_value(), min_value()) . ')' }],
    [3, sub { 'SELECT hamming(' . bigint_value() . ', ' . bigint_value() . '), simhash_similarity(' . bigint_value() . ', ' . bigint_value() . ')' }],
    [3, sub { 'SELECT simhash_to_hex(' . bigint_value() . '), simhash_to_numeric(' . bigint_value() . ')' }],
    [5, sub { 'SELECT simhash_from_hex(' . hex_value() . ')' }],
    [5, sub { 'SELECT simhash_from_numeric(' . numeric_value() . ')' }],
    [3, sub { 'SELECT simhash_block(' . bigint_value() . ', ' . pick(2, 3, 4, 7, 16, 17, 1, 0, -1, int_value()) . ', ' . small_int() . ')' }],
    [3, sub { 'SELECT cardinality(simhash_block_probes(' . join(', ', bigint_value(), pick(2, 3, 4, 8, 16, 17, 1, int_value()), small_int(), pick(0, 1, 2, 3, 4, 6, 8, 12, 20, 33, -1, int_value())) . '))' }],
    [2, sub { 'SELECT simhash_layout_blocks(' . int_value() . ', ' . float_value() . ')' }],
    [3, sub { 'SELECT simhash_near(' . bigint_value() . ', ' . bigint_value() . ', ' . int_value() . '), simhash_within(' . bigint_value() . ', ' . bigint_value() . ', ' . int_value() . ')' }],
    [4, sub { 'SELECT count(*) FROM fz_fps WHERE simhash_near(fp, ' . bigint_value() . ', ' . pick(0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 17, 64, 65, -1) . ')' }],
    [2, sub { 'SELECT count(*) FROM fz_fps a JOIN fz_fps b ON simhash_near(a.fp, b.fp, ' . pick(0, 1, 3, 6) . ') AND a.id < b.id' }],
    [2, sub { 'SELECT count(*) FROM simhash_create_index(' . join(', ', pick("'fz_fps'", "'fz_fps'", ident()), pick("'fp'", "'fp'", col()), pick(0, 1, 3, 6, 8, 16, 17, -1, int_value()), pick('NULL', 2, 4, 6, 16, 17, 1, int_value())) . ')' }],
    [1, sub { 'SELECT simhash_drop_index(' . pick("'fz_fps'", ident()) . ', ' . pick("'fp'", col()) . ')' }],
    [1, sub { 'SELECT simhash_layout_record(' . join(', ', pick("'fz_fps'", ident()), pick("'fp'", col()), int_value(), int_value()) . ')' }],
    [1, sub { 'SELECT simhash_layout_forget(' . pick("'fz_fps'", ident()) . ', ' . pick("'fp'", col()) . ')' }],
    [2, sub { 'SELECT count(*) FROM simhash_search_plan(' . join(', ', pick("'fz_fps'", ident()), pick("'fp'", col()), int_value()) . ')' }],
    [2, sub { 'SELECT count(*) FROM simhash_skew(' . join(', ', pick("'fz_fps'", ident()), pick("'fp'", col()), int_value()) . ')' }],
    [1, sub { 'SELECT count(*) FROM simhash_block_indexes(' . pick("'fz_fps'", ident()) . ', ' . pick("'fp'", col()) . ')' }],
    [1, sub { 'SELECT simhash_check_column(' . ident() . ', ' . col() . ')' }],
    [1, sub { 'SELECT simhash_check_rows(' . pick('NULL::fz_fps', 'NULL::fz_docs', 'NULL::int', 'NULL::record', '1') . ', ' . int_value() . ')' }],
    [3, sub { 'SELECT count(*) FROM simhash_nearest(' . join(', ', pick('NULL::fz_fps', 'NULL::fz_fps', 'NULL::fz_fps', 'NULL::fz_docs', 'NULL::int'), pick("'fp'", col()), bigint_value(), int_value(), pick('NULL', int_value())) . ')' }],
    [4, sub { 'SELECT count(*) FROM simhash_pairs(' . query_pairs() . ', ' . pick(0, 1, 2, 3, 5, 8, 12, 16, 17, -1, int_value()) . ')' }],
    [3, sub { 'SELECT count(*) FROM simhash_clusters(' . query_pairs() . ', ' . pick(0, 1, 2, 3, 5, 8, 12, 16, 17, -1, int_value()) . ')' }],
    [1, sub { "SET work_mem = '" . pick('64kB', '1MB', '4MB', '64MB') . "'" }],
    [6, sub { 'SELECT simhash_jaccard(' . text_value() . ', ' . text_value() . '), simhash_containment(' . text_value() . ', ' . text_value() . ')' }],
    [4, sub { 'SELECT cardinality(simhash_shingles(' . text_value() . '))' }],
    [5, sub { 'SELECT simhash_jaccard(' . shingle_array() . ', ' . shingle_array() . '), simhash_containment(' . shingle_array() . ', ' . shingle_array() . ')' }],
    [5, sub { 'SELECT simhash_lsh(' . text_value() . ')' }],
    [4, sub { 'SELECT simhash_lsh(' . shingle_array() . ')' }],
    [3, sub { 'SELECT simhash_shingle_digest(' . text_value() . '), simhash_shingle_summary(' . text_value() . ')' }],
    [2, sub { 'SELECT * FROM simhash_similar_recipes(' . float_value() . ')' }],
    [3, sub { 'SELECT count(*) FROM simhash_similar_pairs(' . query_texts() . ', ' . float_value() . ')' }],
    [2, sub { 'SELECT count(*) FROM simhash_similar_clusters(' . query_texts() . ', ' . float_value() . ')' }],
    [3, sub { 'SELECT count(*) FROM simhash_similar_nearest(' . join(', ', pick('NULL::fz_docs', 'NULL::fz_docs', 'NULL::fz_docs', 'NULL::fz_fps', 'NULL::int'), pick("'body'", col()), pick("'keys'", col()), text_value(), int_value(), float_value()) . ')' }],
    # The dedupe trigger: new arguments now and then, rows all the time.
    [2, sub {
        my @args;
        if (chance(0.75)) {    # valid: a distance or a threshold, and a policy
            my $policy = pick('reject', 'skip', 'link');
            @args = chance(0.5)
                ? ("'body'", "'fp'", "'" . pick('', 'k=') . pick(0, 1, 2, 3, 3, 3, 8, 16) . "'")
                : ("'body'", "'keys'", "'" . pick('', 'similarity=') . pick('0.7', '0.8', '0.95', '1.0') . "'");
            push @args, "'$policy'";
            push @args, "'dup_of'" if $policy eq 'link';
        } else {
            @args = (pick("'body'", "'fp'", "'nope'"), pick("'fp'", "'keys'", "'body'", "'nope'"),
                pick("'17'", "'-1'", "'0.69'", "'1.5'", "'abc'", "''", "'NaN'", "'3'", "'0.8'",
                    "'k=17'", "'k=0.8'", "'similarity=3'", "'similarity=0.69'", "'k='", "'x=3'"),
                pick("'reject'", "'skip'", "'link'", "'bogus'"));
            push @args, pick("'dup_of'", "'body'", "'nope'") if chance(0.6);
            pop @args if chance(0.2);
        }
        "DROP TRIGGER IF EXISTS fz_dedupe ON fz_dd;\n" .
            'CREATE TRIGGER fz_dedupe BEFORE INSERT OR UPDATE ON fz_dd FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(' . join(', ', @args) . ')';
    }],
    [10, sub { 'INSERT INTO fz_dd (body) VALUES (' . join('), (', map { text_value() } 0 .. int(rand(4))) . ')' }],
    # The bulk path (simhash_dedupe_insert): real rows, random texts, bad queries.
    [3, sub { 'SELECT simhash_dedupe_insert(' . pick("'fz_dd'", "'fz_dd'", "'fz_dd'", "'fz_docs'", "'pg_class'") . ', '
            . pick("'SELECT body FROM fz_docs ORDER BY random() LIMIT 20'",
                '$fz$SELECT ' . join(' AS body UNION ALL SELECT ', map { text_value() } 0 .. int(rand(4))) . ' AS body$fz$',
                '$fz$SELECT ' . text_value() . ' AS body, ' . bigint_value() . '::bigint AS fp$fz$',
                "'SELECT body, body FROM fz_docs'", "'SELECT 1 AS nope'", "'SELECT NULL::text AS body'",
                "'SELECT body::varchar AS body FROM fz_docs'", "'DELETE FROM fz_docs RETURNING body'", "'SELEC'",
                query_bodies()) . ')' }],
    [1, sub { 'INSERT INTO fz_dd (body, fp) VALUES (' . text_value() . ', ' . bigint_value() . ')' }],
    [3, sub { 'UPDATE fz_dd SET body = ' . text_value() . ' WHERE id IN (SELECT id FROM fz_dd ORDER BY random() LIMIT 2)' }],
    [1, sub { 'DELETE FROM fz_dd WHERE id IN (SELECT id FROM fz_dd ORDER BY random() LIMIT 20)' }],
    [1, sub { 'SELECT count(*) FROM simhash_create_index(\'fz_dd\', \'fp\', ' . pick(3, 16, 1, 0) . ')' }],
);
my $total_weight = 0;
$total_weight += $_->[0] for @calls;

sub one_call {
    my $x = rand($total_weight);
    for my $c (@calls) {
        return $c->[1]->() if ($x -= $c->[0]) < 0;
    }
    return $calls[0][1]->();
}

# --- Output ----------------------------------------------------------------------------

if ($setup) {
    my @rows;
    my $i = 0;
    for my $t (@texts[0 .. ($#texts < 60 ? $#texts : 60)]) {
        $i++;
        push @rows, "($i, " . text_of_bytes(to_db(substr($t, 0, 600))) . ')';
        # A near copy of some, for pairs and clusters.
        push @rows, '(' . ($i + 1000) . ', ' . text_of_bytes(to_db(substr($t, 0, 590) . ' extra')) . ')' if $i % 3 == 0;
    }
    print <<"SQL";
CREATE EXTENSION simhash;
CREATE TABLE fz_docs (id bigint PRIMARY KEY, body text, keys bigint[]);
INSERT INTO fz_docs (id, body) VALUES @{[ join(', ', @rows) ]};
UPDATE fz_docs SET keys = simhash_lsh(body);
CREATE INDEX fz_docs_keys ON fz_docs USING gin (keys);
CREATE TABLE fz_fps (id bigint, fp bigint);
INSERT INTO fz_fps SELECT id, simhash(body) FROM fz_docs;
INSERT INTO fz_fps SELECT id + 100000 * b, fp # (1::bigint << b) FROM fz_fps, generate_series(1, 3) b;
INSERT INTO fz_fps SELECT 900000 + i, (hashint8(i)::bigint << 32) | (hashint8(-i)::bigint & 4294967295) FROM generate_series(1, 500) i;
SELECT count(*) FROM simhash_create_index('fz_fps', 'fp', 6);
CREATE TABLE fz_df AS SELECT * FROM simhash_df('SELECT body FROM fz_docs');
CREATE TABLE fz_bad_df AS SELECT feature, 0::bigint AS df, docs FROM fz_df;
CREATE TABLE fz_dup_df AS SELECT * FROM fz_df UNION ALL SELECT * FROM fz_df;
CREATE TABLE fz_neg_df AS SELECT feature, df, -1::bigint AS docs FROM fz_df;
CREATE TABLE fz_type_df (feature text, df float8, docs int);
INSERT INTO fz_type_df VALUES ('x', 1.5, 2);
CREATE TABLE fz_dd (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text, fp bigint, keys bigint[], dup_of bigint);
CREATE INDEX fz_dd_keys ON fz_dd USING gin (keys) WITH (fastupdate = off);
CREATE TRIGGER fz_dedupe BEFORE INSERT OR UPDATE ON fz_dd FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
SELECT count(*) FROM simhash_create_index('fz_dd', 'fp', 3);
SQL
    exit 0;
}

# One statement a line (a generator may give two, separated by ";\n").
my $lines = 0;
while ($lines < $calls) {
    for my $stmt (split /;\n/, one_call()) {
        $stmt =~ s/\n/ /g;
        print "$stmt;\n";
        $lines++;
    }
}
