#!/usr/bin/env perl
# Seed corpora for the libFuzzer targets (test/fuzz/fuzz_*.cpp) and real text for the SQL
# fuzzer, made from text on this machine at run time:
#
#   /usr/share/doc/*/copyright       Latin mostly, with authors' names in other scripts
#   /usr/share/man/{LANG/,}man*/     man pages, if installed (roff source: real text with
#                                    markup): ja, zh_CN, zh_TW, ko, ru, uk, de, fr, ...
#   /usr/share/i18n/locales/*        the locale definitions' month and day names, messages
#                                    (<Uxxxx> escapes decoded): Greek, Arabic, Hebrew, Thai...
#   test/fuzz/seeds/                 a tiny hand-written set for scripts the machine may
#                                    lack (Greek, Arabic, Hebrew, Thai, Korean, Devanagari,
#                                    emoji, tricky normalization) and broken UTF-8
#
# Debian's package-description Translation files are never read (they are kept for an
# independent evaluation).
#
# Paragraphs are sorted into buckets by their main script (latin, cyrillic, greek, arabic,
# hebrew, zh, ja, korean, thai, devanagari, emoji, other), cut into chunks of up to 1000
# bytes, and then also broken (truncated, overlong and surrogate sequences, stray bytes),
# stretched (huge tokens) and mixed. Output:
#
#   OUT/text/BUCKET-NNN.txt   the chunks as they are
#   OUT/seeds/TARGET/...      for each fuzz target, inputs in its format (option bytes in
#                             front, chosen so that every option value occurs)
#
# Usage: test/fuzz/make_seeds.pl --out DIR [--per-script N] [--committed DIR]
# Deterministic for a given set of installed files.
use strict;
use warnings;
use Digest::MD5 qw(md5 md5_hex);
use Encode qw(decode encode);
use File::Path qw(make_path remove_tree);
use Getopt::Long;
use IO::Uncompress::Gunzip qw(gunzip);

my $out;
my $per_script = 16;
my $committed = 'test/fuzz/seeds';
GetOptions('out=s' => \$out, 'per-script=i' => \$per_script, 'committed=s' => \$committed)
    or die "usage: $0 --out DIR [--per-script N] [--committed DIR]\n";
die "--out is required\n" unless defined $out;

my @buckets = qw(latin cyrillic greek arabic hebrew zh ja korean thai devanagari emoji other);
my %paragraphs = map { $_ => [] } @buckets;
my %bytes = map { $_ => 0 } @buckets;
my $budget = $per_script * 1200;   # bytes of text to gather per bucket

# --- Reading ---------------------------------------------------------------------------

sub slurp {
    my ($path) = @_;
    my $raw = '';
    if ($path =~ /\.gz$/) {
        gunzip($path => \$raw) or return undef;
    } else {
        open(my $fh, '<:raw', $path) or return undef;
        local $/;
        $raw = <$fh> // '';
    }
    my $text = eval { decode('UTF-8', $raw, Encode::FB_CROAK) };
    return $text;    # undef when not valid UTF-8
}

# The script a paragraph is mostly written in.
sub bucket_of {
    my ($p) = @_;
    my %n;
    $n{latin} = () = $p =~ /\p{Latin}/g;
    $n{cyrillic} = () = $p =~ /\p{Cyrillic}/g;
    $n{greek} = () = $p =~ /\p{Greek}/g;
    $n{arabic} = () = $p =~ /\p{Arabic}/g;
    $n{hebrew} = () = $p =~ /\p{Hebrew}/g;
    $n{korean} = () = $p =~ /\p{Hangul}/g;
    $n{thai} = () = $p =~ /\p{Thai}/g;
    $n{devanagari} = () = $p =~ /\p{Devanagari}/g;
    my $kana = () = $p =~ /[\p{Hiragana}\p{Katakana}]/g;
    my $han = () = $p =~ /\p{Han}/g;
    $n{ja} = $kana ? $kana + $han : 0;
    $n{zh} = $kana ? 0 : $han;
    $n{emoji} = () = $p =~ /[\x{1F300}-\x{1FAFF}\x{2600}-\x{27BF}]/g;
    my $letters = () = $p =~ /\p{L}/g;
    my ($best) = sort { $n{$b} <=> $n{$a} || $a cmp $b } grep { $_ ne 'latin' } keys %n;
    return $best if $n{$best} >= 6 || ($n{$best} >= 2 && $n{$best} * 5 >= $letters);
    my $known = 0;
    $known += $n{$_} for keys %n;
    return 'other' if $letters >= 6 && $known * 2 < $letters;
    return $n{latin} >= 6 ? 'latin' : undef;
}

# Adds the paragraphs of a text (at most $max_each per bucket from one source).
sub add_text {
    my ($text, $max_each) = @_;
    my %taken;
    for my $p (split /\n\s*\n/, $text) {
        $p =~ s/^\s+|\s+$//g;
        next if length($p) < 20;
        $p = substr($p, 0, 400) if length($p) > 400;
        my $b = bucket_of($p) // next;
        next if $bytes{$b} >= $budget || ($taken{$b} // 0) >= $max_each;
        push @{ $paragraphs{$b} }, $p;
        $bytes{$b} += length(encode('UTF-8', $p));
        $taken{$b}++;
    }
}

# Up to $n of the paths, evenly spaced over their sorted list.
sub spread {
    my ($n, @paths) = @_;
    @paths = sort @paths;
    return @paths if @paths <= $n;
    return map { $paths[int($_ * @paths / $n)] } 0 .. $n - 1;
}

# Roff source to something closer to running text: requests and comments out, font
# escapes dropped.
sub roff_text {
    my ($t) = @_;
    my @lines = grep { !/^[.\x27]/ } split /\n/, $t;
    $t = join("\n", map { length($_) ? $_ : '' } @lines);
    $t =~ s/\\f(?:\[[^\]]*\]|\(..|.)//g;
    $t =~ s/\\[-e]/-/g;
    $t =~ s/\\&//g;
    $t =~ s/\n{3,}/\n\n/g;
    return $t;
}

# The quoted strings of a locale definition, <Uxxxx> escapes decoded, one a line.
sub locale_text {
    my ($t) = @_;
    my @out;
    for my $line (split /\n/, $t) {
        next unless $line =~ /<U[0-9A-Fa-f]{4,6}>/ && $line =~ /"/;
        my @strings = $line =~ /"([^"]*)"/g;
        for my $s (@strings) {
            $s =~ s/<U([0-9A-Fa-f]{4,6})>/chr(hex($1))/ge;
            push @out, $s if $s =~ /\p{L}/;
        }
    }
    # Groups of lines make paragraphs.
    my @paras;
    push @paras, join(' ', splice(@out, 0, 12)) while @out;
    return join("\n\n", @paras);
}

# Copyright files (each real file once).
my %seen;
for my $path (spread(400, glob('/usr/share/doc/*/copyright'))) {
    my $real = readlink($path) // $path;
    next if $seen{$real}++;
    my $t = slurp($path) // next;
    add_text($t, 2);
}
# Man pages: every language directory that is installed, and English.
for my $dir (sort glob('/usr/share/man/*')) {
    next unless -d $dir;
    my @pages = grep { -f $_ && !-l $_ } glob("$dir/man*/*"), ($dir =~ m{/man\d} ? glob("$dir/*") : ());
    @pages = grep { -f $_ && !-l $_ } @pages;
    for my $page (spread(30, @pages)) {
        my $t = slurp($page) // next;
        add_text(roff_text($t), 2);
    }
}
# Locale definitions.
for my $loc (qw(el_GR ar_SA ar_EG he_IL th_TH ko_KR ja_JP zh_CN zh_TW ru_RU uk_UA hi_IN
                am_ET ka_GE hy_AM bn_IN ta_IN my_MM km_KH lo_LA)) {
    my $t = slurp("/usr/share/i18n/locales/$loc") // next;
    add_text(locale_text($t), 3);
}

# --- Chunks ------------------------------------------------------------------------------

# Bytes of the chunks per bucket, plus the committed seeds.
my %chunks = map { $_ => [] } @buckets, 'broken', 'huge', 'mixed';
for my $b (@buckets) {
    my @ps = sort { md5($a) cmp md5($b) } map { encode('UTF-8', $_) } @{ $paragraphs{$b} };
    my $cur = '';
    for my $p (@ps) {
        if (length($cur) + length($p) > 1000 && length($cur)) {
            push @{ $chunks{$b} }, $cur;
            $cur = '';
        }
        $cur .= (length($cur) ? "\n\n" : '') . $p;
        last if @{ $chunks{$b} } >= $per_script;
    }
    push @{ $chunks{$b} }, $cur if length($cur) && @{ $chunks{$b} } < $per_script;
}
for my $path (sort glob("$committed/*")) {
    open(my $fh, '<:raw', $path) or die "$path: $!";
    local $/;
    my $raw = <$fh>;
    my ($name) = $path =~ m{([^/.]+)\.[^/]*$};
    my $b = exists $chunks{$name} ? $name : ($name eq 'chinese' ? 'zh' : $name eq 'japanese' ? 'ja'
          : $name eq 'broken' ? 'broken' : exists $chunks{$name} ? $name : 'mixed');
    push @{ $chunks{$b} }, $raw;
}

# A deterministic pseudo-random stream from a string.
sub rnd {
    my ($key) = @_;
    return unpack('N', md5($key));
}

# Broken UTF-8: real chunks, damaged.
my @damage = ("\xff", "\x80", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
              "\xf8\x88\x80\x80\x80", "\xc3", "\xe4\xb8", "\xf0\x9f\x98", "\xfe\xff");
my $i = 0;
for my $b (@buckets) {
    my @from = @{ $chunks{$b} };
    for my $c (@from[0 .. ($#from < 1 ? $#from : 1)]) {
        next unless length $c;
        my $x = $c;
        for my $k (0 .. 3) {
            my $at = rnd("$b $i $k") % length($x);
            substr($x, $at, 0) = $damage[rnd("d $i $k") % @damage];
        }
        substr($x, rnd("cut $i") % length($x)) = '' if $i % 3 == 0;   # cut anywhere
        push @{ $chunks{broken} }, $x;
        $i++;
    }
}
# Huge tokens: long words in each kind of script, a long run of combining marks.
push @{ $chunks{huge} }, 'short ' . ('x' x 300) . ' words ' . ('Ab9' x 60),
    encode('UTF-8', ("\x{E9}" x 150) . ' ' . ("\x{4E2D}" x 200) . ' ' . ("\x{FDFA}" x 40)),
    encode('UTF-8', 'a' . ("\x{301}\x{323}" x 120) . ' ' . ("\x{E01}\x{E34}" x 100)),
    encode('UTF-8', ("\x{1F44D}\x{1F3FD}" x 80) . ' ' . ("\x{436}" x 200));
# Mixed: two scripts in one text.
my @have = grep { @{ $chunks{$_} } } @buckets;
for my $k (0 .. $#have) {
    my ($a, $b) = ($have[$k], $have[($k + 1) % @have]);
    push @{ $chunks{mixed} }, substr($chunks{$a}[0], 0, 500) . "\n" . substr($chunks{$b}[0], 0, 500);
}

# --- Output --------------------------------------------------------------------------------

remove_tree("$out/text", "$out/seeds");
make_path("$out/text");
my @all;    # [name, bytes]
for my $b (@buckets, 'broken', 'huge', 'mixed') {
    my $n = 0;
    for my $c (@{ $chunks{$b} }) {
        my $name = sprintf('%s-%03d', $b, $n++);
        push @all, [$name, $c];
        open(my $fh, '>:raw', "$out/text/$name.txt") or die $!;
        print $fh $c;
        close $fh;
    }
}

sub put {
    my ($target, $name, $data) = @_;
    make_path("$out/seeds/$target");
    open(my $fh, '>:raw', "$out/seeds/$target/$name") or die $!;
    print $fh $data;
    close $fh;
}

sub words {
    my ($text) = @_;
    return grep { length } split /[\s,.;:()]+/, $text;
}

for my $k (0 .. $#all) {
    my ($name, $text) = @{ $all[$k] };
    # fuzz_tokenizer: 1 option byte.
    put('tokenizer', $name, chr($k * 37 % 256) . $text);
    # fuzz_fingerprint: 4 option bytes (every tokenizer/weighting/collect/bigram/ISA
    # combination over the seeds; n 0..8 mostly; min_features 1..4; IDF documents).
    my $n = $k % 13 == 12 ? 11 : 1 + $k % 9;
    put('fingerprint', $name, pack('C4', $k % 128, $n, 1 + $k % 4, ($k * 13) % 160) . $text);
    # fuzz_tsvector: 3 option bytes, then the words as lexemes with increasing positions
    # (every fifth seed without positions: a bag of lexemes).
    my $lex = pack('C3', $k % 8, 1 + $k % 9, 1 + $k % 3);
    my $pos = 1;
    for my $w (words($text)) {
        $w = substr($w, 0, 254);
        my $np = $k % 5 == 4 ? 0 : 1 + rnd("$k $w") % 3;
        $lex .= pack('CC', $np, length $w);
        $lex .= pack('v', ($pos += 1 + $_) & 0x3FFF) for 1 .. $np;
        $lex .= $w;
    }
    put('tsvector', $name, $lex);
    # fuzz_features: the text's tokens with unit weights, or its words with weights.
    if ($k % 3 == 0) {
        put('features', $name, pack('CC', 1 + $k % 3, 2) . $text);
    } else {
        my @ok = (0, 1, 2, 6, 7, 9, 10, 12, 13, 14, 16, 17, 18, 19);
        my $f = pack('CC', 1 + $k % 3, ($k % 7 == 0 ? 4 : 0) | (($k * 8) & 0xF8));
        my $j = 0;
        for my $w (words($text)) {
            $w = substr($w, 0, 39);
            my $sel = $k % 11 == 0 && $j == 3 ? 3 : $ok[($k + $j) % @ok];
            $f .= pack('C', length $w) . $w . pack('C', $sel);
            $f .= pack('C', rnd("$k $j") % 256) if $sel == 12 || $sel == 14 || $sel == 19;
            $f .= pack('v', rnd("$k $j") % 65536) if $sel == 17;
            $j++;
        }
        put('features', $name, $f);
    }
    # fuzz_similarity: two texts; the second is the first edited by the target (mode bit 1)
    # or a copy with a sentence dropped.
    my $half = $text;
    $half =~ s/^[^.\n]*[.\n]// if $k % 2;
    put('similarity', $name, pack('CC', ($k * 4) % 256 & ~1 | ($k % 3 == 0 ? 2 : 0), 128) . $text . $half);
}

# fuzz_similarity, lists of values; fuzz_pairs and fuzz_blocks: fingerprints of real text
# (MD5 of its words, so that texts sharing words share bits) and near copies of them.
for my $k (0 .. 63) {
    my ($name, $text) = @{ $all[$k % @all] };
    my @w = words($text);
    my @vals = map { substr(md5($_), 0, 8) } @w[0 .. ($#w < 30 ? $#w : 30)];
    my $list = pack('C', (($k * 4) | 1) & 0xFF) . pack('C', 10 + $k % 20);
    $list .= ($k % 2 ? pack('C', 0xE0) . $_ : pack('C', ord($_) % 0xE0)) for @vals;
    put('similarity', "list-$k", $list);

    my $pairs = pack('C4', $k % 17, ($k * 5) % 48, ($k * 31) % 256, $k % 32);
    for my $j (0 .. 20 + $k % 40) {
        if ($j % 4 == 0 || $j == 0) {
            $pairs .= "\xff" . ($vals[$j % (@vals || 1)] // md5("$k $j"));
        } else {
            $pairs .= pack('C', rnd("$k $j") % 0xC0) . pack('C*', map { rnd("$k $j $_") % 64 } 1 .. 5);
        }
    }
    put('pairs', "pairs-$k", $pairs);

    put('blocks', "blocks-$k", pack('C4', 2 + $k % 15, $k % 16, $k % 12, $k % 17) . pack('v', 0xFFFF >> ($k % 3))
        . md5($text) . pack('d<', (1000, 1e6, 1e9, 0, -5, 9**9**9, -9**9**9)[$k % 7]) . pack('d<', $k % 4)
        . pack('C*', map { rnd("$k $_") % 64 } 1 .. 16));
}

# fuzz_convert: numbers and hex strings found in the text (checksums in copyright files,
# years, versions), option names and the edge cases of the parsers.
my @strings = ('0', '18446744073709551615', '18446744073709551616', '-0', '-0.000', '1.000',
    '1.5', 'NaN', 'Infinity', '-Infinity', '+7', '0x', '0xFFFFFFFFFFFFFFFF', 'ffffffffffffffff0',
    '0X0123456789abcDEF', '', ' 1', 'word', 'char', 'tf', 'binary', 'log', 'idf', 'WORD', 'Tf');
my %got;
for my $c (map { $_->[1] } @all) {
    for my $s ($c =~ /\b(0x[0-9a-fA-F]+|[0-9a-fA-F]{6,20}|\d[\d.]*)\b/g) {
        push @strings, $s unless $got{$s}++ || @strings > 400;
    }
}
my $m = 0;
put('convert', sprintf('s-%03d', $m), pack('C', $m * 7 % 64) . $_), $m++ for @strings;

my $count = 0;
for my $dir (glob("$out/seeds/*")) {
    my @f = glob("$dir/*");
    $count += @f;
}
printf STDERR "[make_seeds.pl] %d text chunks (%s), %d seeds in %s/seeds\n", scalar(@all),
    join(' ', map { "$_=" . scalar(@{ $chunks{$_} }) } grep { @{ $chunks{$_} } } @buckets, 'broken', 'huge', 'mixed'),
    $count, $out;
