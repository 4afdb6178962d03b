#!/usr/bin/perl
# Turn text files into rows of PostgreSQL's COPY text format, `name<TAB>body`, for
#
#   (cd CORPUS && find . -type f -name '*.txt' | sort) | (cd CORPUS && scripts/copy_docs.pl) |
#       psql -c '\copy docs(name, body) from stdin'
#
# Usage: copy_docs.pl [FILE...]      (with no FILE, reads file paths one per line on stdin)
#
# The name is the path as given, less a leading "./". Bodies that are not valid UTF-8 are
# read as Latin-1 (so every byte means something) and written as UTF-8; NUL characters,
# which PostgreSQL text cannot hold, are dropped. Backslash, tab, newline and carriage
# return are escaped as COPY requires. Uses core Perl modules only.
use strict;
use warnings;
use Encode qw(decode encode FB_CROAK LEAVE_SRC);

# The field as COPY text format wants it: a UTF-8 byte string with \ TAB LF CR escaped.
sub copy_field {
    my ($text) = @_;    # a character string
    $text =~ tr/\0//d;
    $text =~ s/\\/\\\\/g;
    $text =~ s/\t/\\t/g;
    $text =~ s/\n/\\n/g;
    $text =~ s/\r/\\r/g;
    return encode('UTF-8', $text);
}

# The bytes as characters: UTF-8 when they are valid UTF-8, else Latin-1.
sub as_text {
    my ($bytes) = @_;
    my $text = eval { decode('UTF-8', $bytes, FB_CROAK | LEAVE_SRC) };
    return defined $text ? $text : decode('ISO-8859-1', $bytes);
}

sub read_file {
    my ($path) = @_;
    open(my $fh, '<:raw', $path) or die "copy_docs.pl: cannot read $path: $!\n";
    local $/;
    my $bytes = <$fh>;
    close($fh);
    return defined $bytes ? $bytes : '';
}

binmode(STDOUT, ':raw');
my $rows = 0;

sub emit {
    my ($path) = @_;
    return if $path eq '';
    my $name = as_text($path);
    $name =~ s{^\./}{};
    my $body = as_text(read_file($path));
    print copy_field($name), "\t", copy_field($body), "\n";
    $rows++;
}

if (@ARGV) {
    emit($_) for @ARGV;
} else {
    while (my $line = <STDIN>) {
        $line =~ s/\r?\n\z//;
        emit($line);
    }
}
close(STDOUT) or die "copy_docs.pl: writing stdout: $!\n";
print STDERR "copy_docs.pl: $rows rows\n" if $ENV{COPY_DOCS_VERBOSE};
