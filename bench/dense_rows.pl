#!/usr/bin/env perl
# Duplicate-dense rows from real paragraphs, as a file for the engine alone, the reference
# program and \copy: families of F rows, each a paragraph (from PARAGRAPHS, rows "id<TAB>text"
# as bench/paragraphs.pl writes them, in order) and F - 1 edited copies of it, each with
# 1-7 % of its words deleted (a seeded hash of the row and the word decides which). Past
# the paragraphs, the originals are the Latin-script ones with their letters shifted (a
# Caesar shift of 1..25, the k-th extra: the k mod n-th such paragraph, shift
# 1 + (k / n) mod 25), which share no shingle with their source or each other, so the
# density stays that of F (as bench_similar_engine.sh's SQL generator, with another hash).
#
# Usage: bench/dense_rows.pl PARAGRAPHS ROWS [F]   (F: 5 by default; rows on stdout)
use strict;
use warnings;

my ($file, $rows, $family) = @ARGV;
die "usage: dense_rows.pl PARAGRAPHS ROWS [F]\n" unless defined $rows && -f $file;
$family //= 5;
open(my $fh, '<:raw', $file) or die "$file: $!\n";
my (@par, @latin);
while (my $line = <$fh>) {
    chomp $line;
    my (undef, $text) = split /\t/, $line, 2;
    next unless defined $text;
    push @par, $text;
    my $letters = () = $text =~ /[A-Za-z]/g;
    push @latin, $#par if $letters > length($text) / 2;
}
die "no paragraphs in $file\n" unless @par && @latin;
binmode STDOUT, ':raw';
# A 32-bit hash of two integers (splitmix-like, in 32-bit pieces for any perl).
sub h32 {
    my ($a, $b) = @_;
    my $x = ($a * 2654435761 + $b * 40503 + 0x9E3779B9) & 0xFFFFFFFF;
    $x = (($x ^ ($x >> 16)) * 0x45D9F3B) & 0xFFFFFFFF;
    $x = (($x ^ ($x >> 16)) * 0x45D9F3B) & 0xFFFFFFFF;
    return $x ^ ($x >> 16);
}
my ($base_k, $orig) = (-1, '');
for my $i (1 .. $rows) {
    my $k = int(($i - 1) / $family);
    if ($k != $base_k) {
        $base_k = $k;
        if ($k < @par) {
            $orig = $par[$k];
        } else {
            my $e = $k - @par;
            my $shift = 1 + int($e / @latin) % 25;
            $orig = $par[$latin[$e % @latin]];
            my $from = join '', 'a' .. 'z';
            my $to = substr($from x 2, $shift, 26);
            eval "\$orig =~ tr/$from\U$from\E/$to\U$to\E/";
        }
    }
    my $text = $orig;
    if (($i - 1) % $family != 0) {
        # Drop 1-7 % of the words: word j goes when its hash falls below the row's rate.
        my $rate = 10 + (h32($i, 2) & 63);    # per 1024
        my @w = split /\s+/, $orig;
        my $j = 0;
        $text = join ' ', grep { (h32($i * 10000 + ++$j, 1) & 1023) >= $rate } @w;
        $text = $orig if $text eq '';
    }
    print $i, "\t", $text, "\n";
}
