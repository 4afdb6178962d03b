#!/usr/bin/env bash
# Build a corpus of real, plain UTF-8 text files for the evaluation and the demo, from
# documentation that Debian installs:
#
#   OUTDIR/en/  every /usr/share/doc/*/copyright (copyright-PKG.txt), and English man
#               pages from sections 1 and 8 (man-NAME.SECTION.txt)
#   OUTDIR/zh/  Simplified Chinese man pages (manpages-zh, /usr/share/man/zh_CN)
#   OUTDIR/ja/  Japanese man pages (manpages-ja, /usr/share/man/ja)
#   OUTDIR/de/  German man pages (manpages-de, /usr/share/man/de)
#   OUTDIR/fr/  French man pages (manpages-fr, /usr/share/man/fr)
#
# Usage: scripts/make_corpus.sh [--max-per-lang N] [--jobs J] OUTDIR
#   --max-per-lang N  at most N man pages per language (default 400; the copyright
#                     files are not counted against it)
#   --jobs J          render with J parallel workers (default: the number of CPUs)
#
# Man pages are rendered to text with groff at 80 columns, ragged right, without
# overstrikes. Pages that fail to render, render empty or not as valid UTF-8 are
# skipped, and so are `.so` alias stubs and symlinks (they would only duplicate other
# pages). The choice of pages is deterministic
# for a given set of installed files: candidates are sorted, big families of pages with
# a common prefix (git-*, gcloud_*, ...) are thinned to a few members each, and the rest
# is sampled evenly across the alphabet.
#
# When dpkg is configured to leave out man pages (path-exclude=/usr/share/man/* in
# /etc/dpkg/dpkg.cfg.d/, as on minimal images), the packages' .debs are downloaded with
# apt-get and unpacked into .cache/man-debs/ in the repository instead.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
}

max_per_lang=400
jobs=$(nproc)
outdir=
while [[ $# -gt 0 ]]; do
    case $1 in
        --max-per-lang)
            [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || die "--max-per-lang needs a number"
            max_per_lang=$2
            shift 2
            ;;
        --jobs)
            [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || die "--jobs needs a positive number"
            jobs=$2
            shift 2
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        -*) die "unknown option: $1 (try --help)" ;;
        *)
            [[ -z ${outdir} ]] || die "only one OUTDIR, please"
            outdir=$1
            shift
            ;;
    esac
done
[[ -n ${outdir} ]] || { usage >&2; exit 2; }

# The tools that render man pages, and the pages themselves.
need_packages groff-base bsdextrautils perl \
    manpages manpages-zh manpages-ja manpages-de manpages-fr

# A UTF-8 locale for groff, col and grep (C.UTF-8 always exists on Debian). Sorting uses
# LC_ALL=C explicitly, for a byte order that does not depend on the locale.
export LC_ALL=C.UTF-8

mkdir -p "${outdir}"
outdir=$(cd "${outdir}" && pwd -P)
cache=$(repo_root)/.cache/man-debs
start_seconds=${SECONDS}

# ---------------------------------------------------------------------------------------
# Where the man pages are.

# extract_debs PKG... : download the packages' .debs and unpack them into ${cache}/root.
extract_debs() {
    local pkg deb
    local -a apt_opts=(-q)
    # As root, apt drops privileges to _apt, who may not be allowed to write here.
    [[ ${EUID} -eq 0 ]] && apt_opts+=(-o APT::Sandbox::User=root)
    mkdir -p "${cache}/debs" "${cache}/root"
    for pkg in "$@"; do
        [[ -e ${cache}/root/.extracted-${pkg} ]] && continue
        log "man pages of ${pkg} are not installed (dpkg path-exclude?): unpacking its .deb"
        if ! (cd "${cache}/debs" && apt-get download "${apt_opts[@]}" "${pkg}" >&2); then
            # apt's package lists may be missing (images often delete them).
            apt_update_once
            (cd "${cache}/debs" && apt-get download "${apt_opts[@]}" "${pkg}" >&2)
        fi
        deb=$(find "${cache}/debs" -maxdepth 1 -name "${pkg}_*.deb" | LC_ALL=C sort | tail -n 1)
        [[ -n ${deb} ]] || die "apt-get download ${pkg} left no .deb"
        dpkg-deb -x "${deb}" "${cache}/root"
        touch "${cache}/root/.extracted-${pkg}"
    done
}

# man_dirs SUBDIR SECTIONS PKG... : print the directories holding the man pages of the
# language SUBDIR ("" for English) in the sections matching the glob SECTIONS, e.g.
# "[18]". When one of the packages PKG has its pages missing from /usr/share/man, the
# packages' unpacked copies under ${cache} are used as well.
man_dirs() {
    local sub=$1 sections=$2 pkg sample
    shift 2
    local -a missing=()
    for pkg in "$@"; do
        # The first man page that dpkg says the package installed, if any; with a
        # path-exclude it is either not listed or not on disk.
        sample=$(dpkg -L "${pkg}" 2>/dev/null |
            grep -m 1 -E "^/usr/share/man/${sub:+${sub}/}man[0-9][^/]*/[^/]+$" || true)
        [[ -n ${sample} && -f ${sample} ]] || missing+=("${pkg}")
    done
    local -a roots=(/usr/share/man)
    if [[ ${#missing[@]} -gt 0 ]]; then
        extract_debs "${missing[@]}"
        roots+=("${cache}/root/usr/share/man")
    fi
    local root dir
    for root in "${roots[@]}"; do
        for dir in "${root}/${sub:+${sub}/}"man${sections}; do
            [[ -d ${dir} ]] && printf '%s\n' "${dir}"
        done
    done
    return 0
}

# ---------------------------------------------------------------------------------------
# Choosing and rendering pages.

# select_pages N : read candidate man page paths (sorted, NUL-separated) on stdin and
# write at most N of them, NUL-separated, to stdout. Skips `.so` stubs and pages whose
# file name was already taken (the same page in /usr/share/man and in the cache).
select_pages() {
    perl -0 -MIO::Uncompress::Gunzip=gunzip -e '
        use strict; use warnings;
        my ($n, $cap) = @ARGV;
        my (%seen, %members, @groups);
        while (my $path = <STDIN>) {
            chomp $path;
            my ($base) = $path =~ m{([^/]+)$};
            next if $seen{$base}++;
            # Family: the name up to the first "-", "_" or "." (git-add.1.gz -> git).
            my ($family) = $base =~ /^([^-_.]*)/;
            push @groups, $family unless $members{$family};
            push @{ $members{$family} }, $path;
        }
        # True when the page is only a ".so other-page" alias.
        sub is_stub {
            my ($path) = @_;
            my $text = "";
            if ($path =~ /\.gz$/) {
                gunzip($path => \$text, Append => 0) or return 1;
            } else {
                open(my $fh, "<", $path) or return 1;
                local $/; $text = <$fh> // "";
            }
            my @lines = grep { /\S/ && !/^[.\x27]\\"/ } split /\n/, substr($text, 0, 4096);
            return @lines == 0 || (@lines <= 2 && $lines[0] =~ /^\.so\s/);
        }
        # Thin each family to at most $cap evenly spaced members, drop stubs, then
        # take $n pages evenly spaced over what is left.
        my @pool;
        for my $family (@groups) {
            my @m = @{ $members{$family} };
            my $k = @m < $cap ? @m : $cap;
            push @pool, grep { !is_stub($_) } map { $m[int($_ * @m / $k)] } 0 .. $k - 1;
        }
        my $k = @pool < $n ? @pool : $n;
        print map { $pool[int($_ * @pool / $k)] . "\0" } 0 .. $k - 1;
    ' "$1" 8
}

# render_pages DEST FILE... : render man pages to DEST/man-NAME.SECTION.txt.
# Runs in xargs workers (exported below), so it uses no other function of this script.
#
# groff is called directly rather than through `man -l`: with man-db's options, groff
# 1.22.4 loops forever on some CJK pages (zh_CN df.1). The lines put in front turn off
# justification for good (ragged right, as `man --no-justification`: groff cannot break
# lines between CJK characters and would otherwise stretch the spaces) and hyphenation
# (words stay whole for tokenizers), by removing the requests that would turn them on.
# -k/-K utf-8: the pages are UTF-8 (Debian policy); -t: tables; -P-c: overstrikes,
# which col -bx then removes. A page that still takes too long is skipped.
render_pages() {
    local dest=$1 file name out
    local -a status
    shift
    for file in "$@"; do
        name=${file##*/}
        name=${name%.gz}
        out=${dest}/man-${name}.txt
        { printf '.na\n.rm ad\n.nh\n.rm hy\n' && zcat -f -- "${file}"; } |
            timeout 30 groff -k -K utf-8 -t -mandoc -Tutf8 -rLL=80n -rLT=80n -P-c 2>/dev/null |
            col -bx >"${out}.tmp"
        status=("${PIPESTATUS[@]}")
        if [[ ${status[0]} -eq 0 && ${status[1]} -eq 0 ]] &&
            grep -q '[^[:space:]]' "${out}.tmp" &&
            iconv -f UTF-8 -t UTF-8 "${out}.tmp" >/dev/null 2>&1; then
            mv "${out}.tmp" "${out}"
        else
            printf '[make_corpus.sh] skipped (failed, empty or not UTF-8): %s\n' "${file}" >&2
            rm -f "${out}.tmp"
        fi
    done
}
export -f render_pages

# man_pages LANG SUBDIR SECTIONS PKG... : render the selected pages into OUTDIR/LANG.
man_pages() {
    local lang=$1 sub=$2 sections=$3
    shift 3
    local -a dirs
    mapfile -t dirs < <(man_dirs "${sub}" "${sections}" "$@")
    [[ ${#dirs[@]} -gt 0 ]] || die "no man page directories for ${lang}"
    log "${lang}: rendering up to ${max_per_lang} man pages from ${dirs[*]}"
    find "${dirs[@]}" -maxdepth 1 -type f -print0 |
        LC_ALL=C sort -z |
        select_pages "${max_per_lang}" |
        xargs -0 -r -n 16 -P "${jobs}" bash -c 'render_pages "$@"' _ "${outdir}/${lang}"
}

# copyrights DEST : copy every readable /usr/share/doc/*/copyright as UTF-8 text.
copyrights() {
    local dest=$1 file pkg real out
    local -A seen=()
    log "en: copying /usr/share/doc/*/copyright"
    for file in /usr/share/doc/*/copyright; do
        [[ -f ${file} && -r ${file} ]] || continue
        # A doc directory that is a symlink to another package's is the same file again.
        real=$(readlink -f "${file}")
        [[ -z ${seen[${real}]:-} ]] || continue
        seen[${real}]=1
        pkg=${file#/usr/share/doc/}
        pkg=${pkg%/copyright}
        out=${dest}/copyright-${pkg}.txt
        # Most are UTF-8; the few older ones that are not are Latin-1.
        iconv -f UTF-8 -t UTF-8 "${file}" >"${out}" 2>/dev/null ||
            iconv -f ISO-8859-1 -t UTF-8 "${file}" >"${out}"
        grep -q '[^[:space:]]' "${out}" || rm -f "${out}"
    done
}

# ---------------------------------------------------------------------------------------

languages=(en zh ja de fr)
for lang in "${languages[@]}"; do
    rm -rf -- "${outdir:?}/${lang}"
    mkdir -p "${outdir}/${lang}"
done

copyrights "${outdir}/en"
man_pages en "" "[18]" manpages coreutils util-linux
man_pages zh zh_CN "[1-9]" manpages-zh
man_pages ja ja "[1-9]" manpages-ja
man_pages de de "[1-9]" manpages-de
man_pages fr fr "[1-9]" manpages-fr

# Report files and bytes per language, and check that the CJK pages really are CJK
# (a wrong encoding somewhere would turn them into mojibake or question marks).
report=$(perl -CS -e '
    use strict; use warnings;
    my ($dir, $max, @langs) = @ARGV;
    my $bad = 0;
    printf "%-4s %7s %12s %12s %10s\n", "lang", "files", "bytes", "CJK chars", "CJK files";
    for my $lang (@langs) {
        my ($files, $bytes, $cjk, $cjk_files) = (0, 0, 0, 0);
        for my $path (sort glob("$dir/$lang/*.txt")) {
            open(my $fh, "<:encoding(UTF-8)", $path) or die "$path: $!";
            local $/; my $text = <$fh>;
            my $n = () = $text =~ /[\p{Han}\p{Hiragana}\p{Katakana}]/g;
            $files++; $bytes += -s $path; $cjk += $n; $cjk_files++ if $n;
        }
        printf "%-4s %7d %12d %12d %10d\n", $lang, $files, $bytes, $cjk, $cjk_files;
        $bad = 1 if $max > 0 && ($files == 0 || ($lang =~ /^(zh|ja)$/ && $cjk_files * 2 < $files));
    }
    exit $bad;
' "${outdir}" "${max_per_lang}" "${languages[@]}") || {
    printf '%s\n' "${report}" >&2
    die "corpus check failed: a language has no files, or zh/ja pages lack CJK text"
}
printf '%s\n' "${report}" >&2
log "corpus written to ${outdir} in $((SECONDS - start_seconds)) s"
