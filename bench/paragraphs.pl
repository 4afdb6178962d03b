#!/usr/bin/env perl
# The paragraphs of a corpus as COPY rows "id<TAB>text": the blocks between blank lines of
# its *.txt files, in sorted file order, each block's lines joined by single spaces, at
# least 30 characters, at most MAX of them. Used by the benchmarks that load real text.
#
# Usage: bench/paragraphs.pl CORPUS_DIR MAX
use strict;
use warnings;
use File::Find;

my ($corpus, $max) = @ARGV;
die "usage: paragraphs.pl CORPUS_DIR MAX\n" unless defined $max && -d $corpus;
my @files;
find({ wanted => sub { push @files, $File::Find::name if -f $_ && /\.txt\z/ }, no_chdir => 1 }, $corpus);
binmode STDOUT, ':raw';
my $n = 0;
FILE: for my $f (sort @files) {
    open(my $fh, '<:raw', $f) or next;
    local $/ = '';
    while (my $p = <$fh>) {
        $p =~ s/\s+/ /g;
        $p =~ s/^ | $//g;
        $p =~ tr/\0//d;
        $p =~ s/\\/\\\\/g;
        next if length($p) < 30;
        print ++$n, "\t", $p, "\n";
        last FILE if $n >= $max;
    }
}
