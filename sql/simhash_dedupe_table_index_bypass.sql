-- Attack review of the table index (issue 23, see docs/security.md): cases where the
-- table index (dedupe_table_filter.c) answered a row otherwise than the trigger's own
-- search. Each statement is compared with the same row inserted alone (rolled back).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- 700 texts no other is near: enough searches for the statement to make its index
CREATE TABLE fresh_rows AS
SELECT i AS id, md5(i::text) || ' ' || md5((i * 7)::text) || ' ' || md5((i * 13)::text) AS body
FROM generate_series(10, 700) i;

-- 1. A stored set that is not its text's ('sets=sets'; the trigger fires on UPDATE OF body
-- only, so an UPDATE of the sets column alone keeps what it writes). The search calls a
-- byte-identical text 1.0 before it reads the stored set; the index compared the sets and
-- let an exact copy through under skip.
CREATE TABLE ix_sets (id bigint PRIMARY KEY, body text, lsh bigint[], sets bytea);
CREATE INDEX ON ix_sets USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON ix_sets FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=sets');
INSERT INTO ix_sets (id, body) VALUES
  (1, 'the quick brown fox jumps over the lazy dog again and again'),
  (2, 'a licence text that is copied into many packages word for word'),
  (3, 'pack my box with five dozen liquor jugs and then some more jugs');
UPDATE ix_sets SET sets = '\x01'::bytea WHERE id = 1;                       -- empty
UPDATE ix_sets SET sets = (SELECT sets FROM ix_sets WHERE id = 3) WHERE id = 2;  -- another's
-- one by one: both exact copies are dropped
BEGIN;
INSERT INTO ix_sets (id, body) SELECT id + 1000, body FROM ix_sets WHERE id IN (1, 2);
SELECT count(*) AS alone_kept FROM ix_sets WHERE id > 1000;
ROLLBACK;
-- the statement: the index is made, and the copies are searched (dropped as alone)
BEGIN;
LOCK TABLE ix_sets IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO ix_sets (id, body)
SELECT id, body FROM fresh_rows
UNION ALL SELECT id + 1000, body FROM ix_sets WHERE id IN (1, 2) ORDER BY 1;
COMMIT;
SELECT count(*) AS statement_kept FROM ix_sets WHERE id > 1000;
SELECT count(*) AS fresh_kept FROM ix_sets WHERE id BETWEEN 10 AND 700;

-- 2. link, two originals with the same text (rows there before the trigger, the larger key
-- first in the heap): the search stops at the first original at similarity 1 it meets (TID
-- order), the index picked the smallest key. Now such a row is searched.
CREATE TABLE ix_link (id bigint PRIMARY KEY, body text, lsh bigint[], dup_of bigint);
CREATE INDEX ON ix_link USING gin (lsh) WITH (fastupdate = off);
INSERT INTO ix_link (id, body, lsh)
SELECT id, 'the quick brown fox jumps over the lazy dog again and again',
       simhash_lsh('the quick brown fox jumps over the lazy dog again and again')
FROM (VALUES (5), (3)) v (id);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body ON ix_link FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of');
BEGIN;
INSERT INTO ix_link (id, body) VALUES (2, 'the quick brown fox jumps over the lazy dog again and again');
SELECT dup_of AS alone_link FROM ix_link WHERE id = 2;
ROLLBACK;
BEGIN;
LOCK TABLE ix_link IN SHARE ROW EXCLUSIVE MODE;
SET LOCAL client_min_messages = debug1;
INSERT INTO ix_link (id, body)
SELECT id, body FROM fresh_rows
UNION ALL SELECT 2, 'the quick brown fox jumps over the lazy dog again and again' ORDER BY 1 DESC;
COMMIT;
SELECT dup_of AS statement_link FROM ix_link WHERE id = 2;
SELECT count(*) AS linked FROM ix_link WHERE dup_of IS NOT NULL;

DROP TABLE ix_sets, ix_link, fresh_rows;
