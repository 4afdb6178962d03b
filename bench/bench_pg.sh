#!/usr/bin/env bash
# Fingerprinting speed inside PostgreSQL: count(simhash(body)) against count(md5(body)) over
# the same table, in the same run, on a throwaway cluster. Prints medians and the ratio.
#
# Usage: bench/bench_pg.sh [--rounds N] [--copies N]
#   The long-text table is every /usr/share/doc/*/copyright, N copies (default 10); the
#   short-text table is their non-empty lines (about 80 bytes each).
# Needs the extension installed (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

rounds=7
copies=10
while [[ $# -gt 0 ]]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --copies) copies=$2; shift 2 ;;
        *) die "unknown argument: $1" ;;
    esac
done

pgcluster_start
trap pgcluster_stop EXIT

psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash' \
    -c 'CREATE TABLE files (name text, body text)'
find /usr/share/doc -mindepth 2 -maxdepth 2 -name copyright -type f | sort |
    perl scripts/copy_docs.pl | psql -X -q -v ON_ERROR_STOP=1 -c '\copy files(name, body) from stdin'

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

CREATE FUNCTION pg_temp.time_ms(query text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  EXECUTE query;
  RETURN 1000 * extract(epoch FROM clock_timestamp() - t0);
END $$;

CREATE TEMP TABLE timings (tbl text, fn text, ms float8);
DO $$
DECLARE r int; t text; f text;
BEGIN
  FOREACH t IN ARRAY ARRAY['long_texts', 'short_texts'] LOOP
    PERFORM pg_temp.time_ms(format('SELECT count(simhash(body)), count(md5(body)) FROM %I', t));
    FOR r IN 1 .. current_setting('bench.rounds')::int LOOP
      FOREACH f IN ARRAY ARRAY['length', 'md5', 'simhash'] LOOP
        INSERT INTO timings
          SELECT t, f, pg_temp.time_ms(format('SELECT count(%s(body)) FROM %I', f, t));
      END LOOP;
    END LOOP;
  END LOOP;
END $$;

\echo
\echo 'Median of' :rounds 'rounds, one backend, no parallel workers, no JIT.'
\echo 'length() is the cost of reading (and detoasting) the text alone.'
SELECT tbl AS "table",
       (SELECT reltuples::bigint FROM pg_class WHERE oid = tbl::regclass) AS rows,
       pg_size_pretty(pg_total_relation_size(tbl::regclass)) AS size,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE fn = 'length')::numeric, 1) AS length_ms,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE fn = 'md5')::numeric, 1) AS md5_ms,
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE fn = 'simhash')::numeric, 1) AS simhash_ms,
       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE fn = 'simhash') /
              percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FILTER (WHERE fn = 'md5'))::numeric, 2)
         AS "simhash/md5"
FROM timings GROUP BY tbl ORDER BY tbl;
SQL
