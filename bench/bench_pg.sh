#!/usr/bin/env bash
# Fingerprinting speed inside PostgreSQL: count(simhash(body)) against count(md5(body)) over
# the same table, in the same run, on a throwaway cluster. Prints medians and ratios.
#
# Usage: bench/bench_pg.sh [--rounds N] [--copies N] [--corpus DIR] [--out FILE]
#   The long-text table is every /usr/share/doc/*/copyright, N copies (default 10), each
#   copy made distinct; the short-text table is their non-empty lines (about 60 bytes each).
#   --corpus DIR adds a table per language of scripts/make_corpus.sh's corpus (DIR/de,
#   DIR/en, DIR/fr, DIR/ja, DIR/zh: man pages), N copies of each document, made distinct.
#   --out FILE also writes the report to FILE, headed by this command line and the
#   machine's state (bench/plot.sh reads bench/results/bench_pg.md).
# Needs the extension installed (scripts/setup.sh, or make install with SIMHASH_PG_BIN set).
#
# What each timed expression costs, per row:
#   strpos(body, '')  reading the row and detoasting the text (decompressing it, or fetching
#                     it from the TOAST table), then nothing: an empty needle matches at 1.
#                     This is the baseline that isolates reading and detoasting.
#   md5(body)         the same, plus MD5 and a 32-character hex result
#   simhash(body)     the same, plus the fingerprint (and nothing else: the database is UTF-8)
#   simhash_lsh(body) the same, plus the shingle set and its 20 LSH keys (what the trigger
#                     with a threshold and a simhash_ops index entry compute for a row)
#   length(body)      for comparison with earlier reports: it counts characters, which is
#                     work of its own, so it is not a pure detoasting baseline
set -euo pipefail
caller_dir=${PWD}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

rounds=7
copies=10
corpus=
out=
command_line="bench/bench_pg.sh $*"
while [[ $# -gt 0 ]]; do
    case $1 in
        --out) out=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --copies) copies=$2; shift 2 ;;
        --corpus) corpus=$2; shift 2 ;;
        *) die "unknown argument: $1" ;;
    esac
done

[[ -z ${out} || ${out} == /* ]] || out=${caller_dir}/${out}
if [[ -n ${out} ]]; then
    {
        echo "# ${command_line}"
        echo
        echo "$(nproc)-core machine, $(date -u +%Y-%m-%d); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)."
        echo "Other work shares the cores: trust the ratios (simhash/md5, measured in the same rounds)"
        echo "more than the milliseconds and MB/s."
        echo
        echo '```'
    } >"${out}"
fi

pgcluster_start
trap pgcluster_stop EXIT

psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash' \
    -c 'CREATE TABLE files (name text, body text)'
find /usr/share/doc -mindepth 2 -maxdepth 2 -name copyright -type f | sort |
    perl scripts/copy_docs.pl | psql -X -q -v ON_ERROR_STOP=1 -c '\copy files(name, body) from stdin'
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE TABLE corpus_files (name text, body text)'
if [[ -n ${corpus} ]]; then
    [[ ${corpus} == /* ]] || corpus=${caller_dir}/${corpus}
    for lang in de en fr ja zh; do
        [[ -d ${corpus}/${lang} ]] || die "no ${corpus}/${lang} (make it with scripts/make_corpus.sh)"
    done
    (cd "${corpus}" && find de en fr ja zh -type f -name '*.txt' | sort) |
        (cd "${corpus}" && perl "${OLDPWD}/scripts/copy_docs.pl") |
        psql -X -q -v ON_ERROR_STOP=1 -c '\copy corpus_files(name, body) from stdin'
fi

{
psql -X -q -v ON_ERROR_STOP=1 -v copies="${copies}" -v rounds="${rounds}" <<'SQL'
SET max_parallel_workers_per_gather = 0;
SET jit = off;
SET bench.rounds = :rounds;
CREATE TABLE long_texts AS
  SELECT f.body || repeat(' ', c) AS body FROM files f, generate_series(1, :copies) c;
CREATE TABLE short_texts AS
  SELECT line AS body FROM files f, regexp_split_to_table(f.body, E'\n') AS line
  WHERE line ~ '\w';
VACUUM ANALYZE long_texts;
VACUUM ANALYZE short_texts;
CREATE TABLE bench_tables (tbl text, ord integer);
INSERT INTO bench_tables VALUES ('long_texts', 1), ('short_texts', 2);
-- one table per language of the corpus (none without --corpus)
SELECT format('CREATE TABLE %I AS SELECT f.body || repeat('' '', c) AS body
               FROM corpus_files f, generate_series(1, %s) c WHERE f.name LIKE %L',
              'man_' || lang, :copies, lang || '/%'),
       format('VACUUM ANALYZE %I', 'man_' || lang),
       format('INSERT INTO bench_tables VALUES (%L, %s)', 'man_' || lang, 2 + ord)
FROM (SELECT lang, row_number() OVER (ORDER BY lang) AS ord
      FROM (SELECT DISTINCT split_part(name, '/', 1) AS lang FROM corpus_files) d) l \gexec

CREATE FUNCTION pg_temp.time_ms(query text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  EXECUTE query;
  RETURN 1000 * extract(epoch FROM clock_timestamp() - t0);
END $$;

CREATE TEMP TABLE timings (tbl text, fn text, ms float8);
DO $$
DECLARE
  r int; t text; f text;
  exprs text[] := ARRAY['strpos(body, '''')', 'md5(body)', 'simhash(body)', 'simhash_lsh(body)', 'length(body)'];
BEGIN
  FOR t IN SELECT tbl FROM bench_tables ORDER BY ord LOOP
    -- warm-up: the table in shared buffers, the library loaded
    PERFORM pg_temp.time_ms(format('SELECT count(simhash(body)), count(md5(body)) FROM %I', t));
    FOR r IN 1 .. current_setting('bench.rounds')::int LOOP
      FOREACH f IN ARRAY exprs LOOP  -- interleaved, so drifts in machine load hit all alike
        INSERT INTO timings
          SELECT t, split_part(f, '(', 1), pg_temp.time_ms(format('SELECT count(%s) FROM %I', f, t));
      END LOOP;
    END LOOP;
  END LOOP;
END $$;

CREATE TEMP TABLE medians AS
  SELECT tbl, fn, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms
  FROM timings GROUP BY tbl, fn;
CREATE TEMP TABLE sizes (tbl text, ord integer, rows bigint, bytes numeric);
SELECT format('INSERT INTO sizes SELECT %L, %s, count(*), sum(octet_length(body)) FROM %I',
              tbl, ord, tbl)
FROM bench_tables \gexec

\echo
\echo 'Median of' :rounds 'rounds, one backend, no parallel workers, no JIT; count(f(body)) over the whole table.'
\echo 'detoast = strpos(body, ''''): reading and detoasting alone. "core" = the time above detoast.'
\pset footer off
SELECT s.tbl AS "table",
       s.rows,
       pg_size_pretty(s.bytes) AS "text bytes",
       pg_size_pretty(pg_total_relation_size(s.tbl::regclass)) AS "on disk",
       round(d.ms::numeric, 1) AS detoast_ms,
       round(m.ms::numeric, 1) AS md5_ms,
       round(h.ms::numeric, 1) AS simhash_ms,
       round(l.ms::numeric, 1) AS length_ms,
       round(x.ms::numeric, 1) AS lsh_ms,
       round((h.ms / m.ms)::numeric, 2) AS "simhash/md5",
       round((x.ms / m.ms)::numeric, 2) AS "simhash_lsh/md5",
       round(((h.ms - d.ms) / (m.ms - d.ms))::numeric, 2) AS "core simhash/md5",
       round((s.bytes / 1e6 / ((h.ms - d.ms) / 1000))::numeric) AS "simhash MB/s above detoast",
       round((s.bytes / 1e6 / ((m.ms - d.ms) / 1000))::numeric) AS "md5 MB/s above detoast",
       round((s.bytes / 1e6 / (h.ms / 1000))::numeric) AS "simhash MB/s",
       round((s.bytes / 1e6 / (m.ms / 1000))::numeric) AS "md5 MB/s"
FROM sizes s
JOIN medians d ON d.tbl = s.tbl AND d.fn = 'strpos'
JOIN medians m ON m.tbl = s.tbl AND m.fn = 'md5'
JOIN medians h ON h.tbl = s.tbl AND h.fn = 'simhash'
JOIN medians l ON l.tbl = s.tbl AND l.fn = 'length'
JOIN medians x ON x.tbl = s.tbl AND x.fn = 'simhash_lsh'
ORDER BY s.ord;
SQL
} | if [[ -n ${out} ]]; then tee -a "${out}"; else cat; fi
if [[ -n ${out} ]]; then
    printf '```\n\nLoad average at the end: %s.\n' "$(cut -d' ' -f1-3 /proc/loadavg)" >>"${out}"
fi
