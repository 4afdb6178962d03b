#!/usr/bin/perl
# Turn the SQL blocks of a Markdown page into a pg_regress test whose expected output is
# the output the page shows, so that `make installcheck` fails when the page says
# something the server does not answer.
#
# Usage: tools/doc_sql.pl PAGE.md NAME
#   writes sql/NAME.sql and expected/NAME.out (the Makefile does, for README.md and
#   docs/reference.md; the files are made, not committed)
#
# What a page must look like: every ```sql block runs, in the page's order, in one fresh
# database of its own (created at the start, dropped at the end; the blocks begin with
# CREATE EXTENSION simhash), as if pasted into psql. The output of a statement is the run
# of comment lines directly below the line that ends it (a line ending in `;`, a trailing
# `-- comment` aside, or a psql `\` command), without a blank line between: each is a line
# of psql's output, `-- ` followed by it, exactly as psql prints it (the header, the
# `---+---` line, the rows, `(N rows)`, or ERROR: and DETAIL: lines), less trailing
# spaces; a table's output ends at its `(N rows)`. pg_regress runs psql quietly, so statements that return no rows (CREATE, INSERT
# without RETURNING, SET) print nothing and are followed by no output comment. A comment
# meant as a comment goes above a statement, or below it after a blank line.
#
# pg_regress's psql echoes every non-empty input line, then prints each statement's
# output: the expected file is that echo with the page's outputs put back where psql
# prints them (header lines padded to the width of their `---+---` line, as psql pads
# them; a blank line after each `(N rows)`).
use strict;
use warnings;

@ARGV == 2 or die "usage: tools/doc_sql.pl PAGE.md NAME\n";
my ($page, $name) = @ARGV;
$name =~ /^[a-z0-9_]+$/ or die "doc_sql.pl: NAME must be lower-case letters, digits and _\n";

open(my $in, '<:encoding(UTF-8)', $page) or die "doc_sql.pl: $page: $!\n";
my @md = <$in>;
close($in);
chomp(@md);

my $db = "simhash_doc_$name";
my @preamble = (
    "-- Made by tools/doc_sql.pl from the SQL blocks of $page: edit the page, not this file.",
    "-- They run in a fresh database of their own, $db, dropped at the end.",
    '\set doc_home :DBNAME',
    'SET client_min_messages = warning;',
    "DROP DATABASE IF EXISTS $db;",
    "CREATE DATABASE $db TEMPLATE template0;",
    "ALTER DATABASE $db SET lc_messages TO 'C';",
    "ALTER DATABASE $db SET lc_numeric TO 'C';",
    'RESET client_min_messages;',
    "\\c $db",
);
my @postamble = ('', '\c :doc_home', "DROP DATABASE $db;");

my (@sql, @out);
# The statement being read is complete: the output comments below it are psql's output.
sub ends_statement {
    my ($line) = @_;
    return 1 if $line =~ /^\s*\\/;
    (my $code = $line) =~ s/\s*--.*$//;
    return $code =~ /;\s*$/;
}

sub add_output {
    my (@lines) = @_;
    for my $i (0 .. $#lines) {
        my $line = $lines[$i];
        if ($i < $#lines && $lines[$i + 1] =~ /^-+(\+-+)*$/) {
            $line .= ' ' x (length($lines[$i + 1]) - length($line));
        }
        push @out, $line;
        push @out, '' if $line =~ /^\(\d+ rows?\)$/;
    }
}

for my $line (@preamble) { push @sql, $line; push @out, $line; }

my ($in_block, $blocks, $after_statement, @pending) = (0, 0, 0);
for my $n (0 .. $#md) {
    my $line = $md[$n];
    if (!$in_block) {
        if ($line =~ /^```sql\s*$/) {
            $in_block = 1;
            $blocks++;
            push @sql, '', "-- $page, line " . ($n + 2);
            push @out, "-- $page, line " . ($n + 2);
        }
        next;
    }
    if ($line =~ /^```\s*$/) {
        add_output(@pending);
        @pending = ();
        $in_block = 0;
        $after_statement = 0;
        next;
    }
    if ($after_statement && $line =~ /^--(?: (.*))?$/) {
        (my $shown = defined $1 ? $1 : '') =~ s/\s+$//;
        push @pending, $shown;
        # A table's output ends with its row count: a comment below it is a comment.
        $after_statement = 0 if $shown =~ /^\(\d+ rows?\)$/;
        next;
    }
    add_output(@pending);
    @pending = ();
    push @sql, $line;
    push @out, $line if $line =~ /\S/;
    $after_statement = ($line =~ /\S/ && $line !~ /^\s*--/ && ends_statement($line)) ? 1 : 0;
}
die "doc_sql.pl: $page: a ```sql block is not closed\n" if $in_block;
die "doc_sql.pl: $page: no ```sql block\n" if !$blocks;

for my $line (@postamble) { push @sql, $line; push @out, $line if $line =~ /\S/; }

for my $file (["sql/$name.sql", \@sql], ["expected/$name.out", \@out]) {
    my ($path, $lines) = @$file;
    open(my $fh, '>:encoding(UTF-8)', "$path.tmp") or die "doc_sql.pl: $path.tmp: $!\n";
    print {$fh} map { "$_\n" } @$lines;
    close($fh) or die "doc_sql.pl: $path.tmp: $!\n";
    rename("$path.tmp", $path) or die "doc_sql.pl: $path: $!\n";
}
