#!/usr/bin/env bash
# pg_dump and restore of a database that uses simhash: the layout recorded in
# simhash_layouts, the block indexes and the dedupe trigger come back, and the restored
# database answers radius queries through the indexes exactly as the original does. The
# extension lives in its own schema and the table and column names need quoting, so
# nothing may depend on search_path or on plain names. Then the same as a database owner
# who is not a superuser (the extension is trusted): dump and restore as that role keep
# the layout too.
#
# Usage: test/dump/dump_restore.sh     (exits non-zero on failure)
# Needs the extension installed (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=scripts/pgcluster.sh
source scripts/pgcluster.sh

pgcluster_start
trap pgcluster_stop EXIT

psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }

psql -c 'CREATE DATABASE dump_source' -c 'CREATE DATABASE dump_target'
psql -d dump_source <<'SQL'
CREATE SCHEMA tools;
CREATE EXTENSION simhash SCHEMA tools;
CREATE TABLE "My Docs" (id integer PRIMARY KEY, body text, "Finger Print" bigint, dup_of integer);
CREATE TRIGGER "My Dedupe" BEFORE INSERT OR UPDATE OF body ON "My Docs" FOR EACH ROW
    EXECUTE FUNCTION tools.simhash_dedupe('body', 'Finger Print', '4', 'link', 'dup_of');
SELECT count(*) FROM tools.simhash_create_index('"My Docs"', 'Finger Print', 4) \g /dev/null
INSERT INTO "My Docs" (id, body)
SELECT i, 'licence text number ' || (i % 50) || ' granted to ' || (i % 7) || ' persons under conditions'
FROM generate_series(1, 500) i;
SQL

"${PG_BIN}/pg_dump" -d dump_source -f "${PGCLUSTER_DIR}/dump.sql"
psql -d dump_target -f "${PGCLUSTER_DIR}/dump.sql" >/dev/null

# The same layout, indexes, trigger, rows and answers on both sides, and index use.
plan() {
    psql -d "$1" -At -c "SET search_path = public, tools" \
        -c "EXPLAIN (COSTS OFF) SELECT id FROM \"My Docs\" WHERE simhash_near(\"Finger Print\", 12345, 4)" |
        grep -c 'Index Scan on "My Docs_Finger Print_simhash5' || true
}
check() {
    psql -d "$1" -At <<'SQL'
SET search_path = public, tools;
SELECT tbl::text || ' ' || col || ' ' || max_distance || ' ' || blocks FROM simhash_layouts;
SELECT count(*) FROM simhash_block_indexes('"My Docs"', 'Finger Print');
SELECT string_agg(tgname, ',') FROM pg_trigger WHERE tgrelid = '"My Docs"'::regclass AND NOT tgisinternal;
SELECT count(*) || ' ' || count(dup_of) FROM "My Docs";
SELECT sum((SELECT count(*) FROM "My Docs" d WHERE simhash_near(d."Finger Print", q."Finger Print", 4))) FROM "My Docs" q;
SQL
    plan "$1"
}
source_state=$(check dump_source)
target_state=$(check dump_target)
printf 'source:\n%s\ntarget:\n%s\n' "${source_state}" "${target_state}"
[[ ${source_state} == "${target_state}" ]] || die "the restored database differs"
[[ $(plan dump_target) -eq 5 ]] || die "the restored database does not use its block indexes"

# The restored trigger still works: a near duplicate is linked.
psql -d dump_target -At <<'SQL' | grep -qx 't' || die "the restored trigger did not link a near duplicate"
INSERT INTO "My Docs" (id, body) VALUES (1000, 'LICENCE TEXT NUMBER 3 GRANTED TO 3 PERSONS, UNDER CONDITIONS!');
SELECT dup_of IS NOT NULL FROM "My Docs" WHERE id = 1000;
SQL

# A database owner who is not a superuser installs the extension, dumps and restores.
psql -c 'CREATE ROLE dump_owner LOGIN' -c 'CREATE DATABASE owner_source OWNER dump_owner' \
    -c 'CREATE DATABASE owner_target OWNER dump_owner'
psql -U dump_owner -d owner_source <<'SQL'
CREATE EXTENSION simhash;
CREATE TABLE docs (id integer PRIMARY KEY, body text, fp bigint GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO docs (id, body) SELECT i, 'licence text number ' || (i % 50) FROM generate_series(1, 200) i;
SELECT count(*) FROM simhash_create_index('docs', 'fp', 3) \g /dev/null
SQL
"${PG_BIN}/pg_dump" -U dump_owner -d owner_source -f "${PGCLUSTER_DIR}/owner.sql"
psql -U dump_owner -d owner_target -f "${PGCLUSTER_DIR}/owner.sql" >/dev/null ||
    die "a restore by the database owner failed"
owner_state=$(psql -U dump_owner -d owner_target -At -c \
    "SELECT string_agg(tbl::text || ' ' || col || ' ' || max_distance || ' ' || blocks, ',') FROM simhash_layouts")
[[ ${owner_state} == "docs fp 3 3" ]] ||
    die "the layout restored by the database owner is '${owner_state}', not 'docs fp 3 3'"
log "passed"
