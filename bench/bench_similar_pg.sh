#!/usr/bin/env bash
# Verified near duplicates inside PostgreSQL: simhash_similar_pairs() and
# simhash_similar_clusters() over paragraphs of real text, against count(md5(body)) over the
# same table in the same run, on a throwaway cluster. Prints a markdown table of medians.
#
# Usage: bench/bench_similar_pg.sh [--corpus DIR] [--docs N] [--thresholds T,T...]
#                                  [--rounds N] [--work-mem SIZE]
#   --corpus      a corpus made by scripts/make_corpus.sh (default /tmp/simhash-corpus; made
#                 there when missing)
#   --docs        rows to load (default 64000): the paragraphs (blocks between blank lines)
#                 of the corpus files, in file order, with at least 30 characters, every
#                 language; past the corpus's paragraphs, edited copies of them (2..20 % of
#                 the words deleted)
#   --thresholds  min_similarity values (default 0.5,0.7,0.8,0.9)
#   --rounds      runs of each measurement, the median is printed (default 3)
#   --work-mem    work_mem of the measured sessions (default 4MB, PostgreSQL's default)
#   --queries     search with a threshold of 0.8: queries timed (default 200; 0: no search),
#                 each a stored row's text with its last word dropped; the first 3 are also
#                 answered by a scan computing simhash_jaccard for every row, and must agree
#   --no-pairs    only the search
#   --no-clusters simhash_similar_pairs only
#
# Conditions: one backend, no parallel workers, no JIT, shared_buffers 1GB. Each
# measurement runs in a fresh session and times `SELECT count(*) FROM f(...)`: reading the
# rows, fingerprints, candidates, shingle sets, verification and the result.
# Needs the extension installed (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

corpus=/tmp/simhash-corpus
docs=64000
thresholds=0.5,0.7,0.8,0.9
rounds=3
work_mem=4MB
queries=200
pairs=1
clusters=1
while [[ $# -gt 0 ]]; do
    case $1 in
        --corpus) corpus=$2; shift 2 ;;
        --docs) docs=$2; shift 2 ;;
        --thresholds) thresholds=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --work-mem) work_mem=$2; shift 2 ;;
        --queries) queries=$2; shift 2 ;;
        --no-pairs) pairs=0; shift ;;
        --no-clusters) clusters=0; shift ;;
        -h | --help) sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
done
[[ ${docs} =~ ^[1-9][0-9]*$ ]] || die "--docs needs a positive number"
[[ ${rounds} =~ ^[1-9][0-9]*$ ]] || die "--rounds needs a positive number"
IFS=, read -r -a threshold_list <<<"${thresholds}"
if [[ ! -d ${corpus} ]]; then
    log "making the corpus in ${corpus}"
    scripts/make_corpus.sh "${corpus}" >&2
fi

export PGCLUSTER_SETTINGS="shared_buffers = '1GB'
max_parallel_workers_per_gather = 0
jit = off"
pgcluster_start
trap pgcluster_stop EXIT

psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION simhash' \
    -c 'CREATE TABLE docs (id bigint PRIMARY KEY, body text NOT NULL)'
# Paragraphs as COPY rows: id, the block's lines joined by single spaces.
bench/paragraphs.pl "${corpus}" "${docs}" |
    psql -X -q -v ON_ERROR_STOP=1 -c '\copy docs FROM STDIN'
# Not enough paragraphs: edited copies, row i from paragraph 1 + (i - 1) mod P.
psql -X -q -v ON_ERROR_STOP=1 -v docs="${docs}" <<'SQL'
INSERT INTO docs (id, body)
SELECT i, array_to_string(ARRAY(
           SELECT w FROM unnest(regexp_split_to_array(p.body, '\s+')) WITH ORDINALITY u(w, j)
           WHERE (hashint8extended(i * 10000 + j, 1) & 1023) >= 20 + i % 180 ORDER BY j), ' ')
FROM (SELECT count(*) AS n FROM docs) c
CROSS JOIN LATERAL generate_series(c.n + 1, :docs) i
JOIN docs p ON p.id = 1 + (i - 1) % c.n;
SQL
psql -X -q -v ON_ERROR_STOP=1 -c 'VACUUM ANALYZE docs'
read -r rows mbytes < <(psql -X -At -F ' ' -c \
    "SELECT count(*), round(sum(octet_length(body)) / 1e6, 1) FROM docs")
log "loaded ${rows} rows, ${mbytes} MB"

# measure SQL : runs SQL (a query returning one value) in --rounds fresh sessions; sets
# MEDIAN_MS to the median run time and RESULT to the value of the last run.
measure() {
    local sql=$1 i out times=()
    for ((i = 0; i < rounds; i++)); do
        out=$(psql -X -At -v ON_ERROR_STOP=1 \
            -c "SET work_mem = '${work_mem}'" -c '\timing on' -c "${sql}" 2>/dev/null)
        times+=("$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"${out}" | tail -n 1)")
        RESULT=$(grep -v '^Time:\|^SET$' <<<"${out}" | tail -n 1)
    done
    MEDIAN_MS=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
}

if [[ ${pairs} -eq 1 ]]; then
measure 'SELECT count(md5(body)) FROM docs'
md5_ms=${MEDIAN_MS}
printf '\n%s rows, %s MB, work_mem %s, median of %s runs\n\n' "${rows}" "${mbytes}" "${work_mem}" "${rounds}"
printf '| call | min_similarity | rows returned | time | ratio to count(md5(body)) |\n|---|---|---|---|---|\n'
printf '| `count(md5(body))` | | | %.0f ms | 1 |\n' "${md5_ms}"
for t in "${threshold_list[@]}"; do
    fns=(simhash_similar_pairs)
    [[ ${clusters} -eq 1 ]] && fns+=(simhash_similar_clusters)
    for fn in "${fns[@]}"; do
        measure "SELECT count(*) FROM ${fn}('SELECT id, body FROM docs', ${t})"
        n=${RESULT}
        ms=${MEDIAN_MS}
        printf '| `%s` | %s | %s | %.2f s | %.0f |\n' "${fn}" "${t}" "${n}" \
            "$(awk -v m="${ms}" 'BEGIN { print m / 1000 }')" \
            "$(awk -v m="${ms}" -v b="${md5_ms}" 'BEGIN { print m / b }')"
    done
done
fi

if [[ ${queries} -gt 0 ]]; then
    log "search: LSH keys in a generated column with a GIN index"
    psql -X -q -v ON_ERROR_STOP=1 -v queries="${queries}" <<'SQL'
ALTER TABLE docs ADD COLUMN lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED;
CREATE INDEX docs_lsh ON docs USING gin (lsh);
VACUUM ANALYZE docs;
CREATE TABLE queries AS
SELECT row_number() OVER (ORDER BY hashint8(id)) AS qid, regexp_replace(body, '\s*\S+$', '') AS q
FROM docs ORDER BY hashint8(id) LIMIT :queries;
SQL
    psql -X -At -v ON_ERROR_STOP=1 <<'SQL'
-- Each query a statement with the text as a parameter (PL/pgSQL prepares it), as an
-- application would send it.
CREATE TEMP TABLE times (qid bigint, ms float8, found bigint);
DO $$
DECLARE
    r record;
    t0 timestamptz;
    n bigint;
BEGIN
    FOR r IN SELECT * FROM queries ORDER BY qid LOOP
        t0 := clock_timestamp();
        SELECT count(*) INTO n FROM docs
        WHERE lsh && simhash_lsh(r.q) AND simhash_jaccard(body, r.q) >= 0.8;
        INSERT INTO times VALUES (r.qid, extract(epoch FROM clock_timestamp() - t0) * 1000, n);
    END LOOP;
END $$;
SELECT format('search at 0.8, %s queries: p50 %s ms, p99 %s ms, %s rows found on average',
              count(*), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2),
              round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 2),
              round(avg(found), 1))
FROM times;
-- The first 3 queries by a full scan: the similarity of every row.
CREATE TEMP TABLE scan AS
SELECT q.qid, (SELECT count(*) FROM docs d WHERE simhash_jaccard(d.body, q.q) >= 0.8) AS found,
       clock_timestamp() AS t
FROM queries q WHERE q.qid <= 3;
SELECT format('full scan of the first 3 queries: %s rows found, the indexes found %s (%s)',
              sum(s.found), sum(t.found),
              CASE WHEN sum(s.found) = sum(t.found) THEN 'equal' ELSE 'DIFFERENT: similar rows sharing no key' END)
FROM scan s JOIN times t USING (qid);
SQL
    psql -X -At -c '\timing on' -c "SELECT count(*) FROM docs d WHERE simhash_jaccard(d.body, (SELECT q FROM queries WHERE qid = 1)) >= 0.8" |
        sed -n 's/^Time: \([0-9.]*\) ms.*/full scan of one query: \1 ms/p'
fi
