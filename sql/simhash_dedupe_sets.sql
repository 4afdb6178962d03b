-- 'sets=column': with a similarity threshold, the trigger stores each row's shingle set in
-- a bytea column and verifies candidates against it instead of shingling their texts
-- again. The answers must be those without the column (same rows kept, same links, same
-- similarities in messages); the stored format is pinned (format 1); a missing, too large
-- or malformed value falls back to the text; the arguments are checked at CREATE TRIGGER.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- 600 texts in families around the threshold: an original of 40 words and copies with
-- 1 to 9 words replaced (similarities from about 0.95 down to 0.6).
CREATE TABLE words AS SELECT i, substr(md5(i::text), 1, 4 + i % 5) AS w FROM generate_series(0, 999) i;
CREATE TABLE src AS
SELECT row_number() OVER (ORDER BY md5(f || '/' || v)) AS id,
       (SELECT string_agg(CASE WHEN p % 10 < v AND p % 4 = f % 4 THEN 'edit' || v || '_' || p ELSE w END, ' ' ORDER BY p)
        FROM generate_series(0, 39) p JOIN words ON words.i = (f * 37 + p * 101) % 1000) AS body
FROM generate_series(1, 100) f, generate_series(0, 5) v;
INSERT INTO src VALUES (1001, NULL), (1002, '...');

-- Arguments, checked at CREATE TRIGGER
CREATE TABLE t (id bigint PRIMARY KEY, body text, fp bigint, lsh bigint[], sets bytea, dup_of bigint,
                note text, gen bytea GENERATED ALWAYS AS (decode(md5(body), 'hex')) STORED);
CREATE TRIGGER bad BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip', 'sets=sets');
CREATE TRIGGER bad BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=nosuch');
CREATE TRIGGER bad BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=note');
CREATE TRIGGER bad BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=gen');
ALTER TABLE t ADD COLUMN strict_sets bytea NOT NULL DEFAULT '\x01';
CREATE TRIGGER bad BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=strict_sets');
CREATE TRIGGER bad BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=body');
CREATE TRIGGER bad BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'dup_of', 'sets=dup_of');
CREATE TRIGGER bad BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets', 'sets=sets');
CREATE TRIGGER bad BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'link', 'sets=sets');
CREATE VIEW v AS SELECT id, body, lsh, sets FROM t;
CREATE TRIGGER bad INSTEAD OF INSERT ON v FOR EACH ROW EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip', 'sets=sets');
DROP VIEW v;
DROP TABLE t;

-- Two tables, the same trigger but for the sets column; the same rows, one statement each
-- (INSERT ... SELECT in the same order), or one row a statement (no per-statement cache).
CREATE FUNCTION make_pair(t float8, policy text) RETURNS void LANGUAGE plpgsql
SET client_min_messages = warning AS $$
BEGIN
  DROP TABLE IF EXISTS plain, stored;
  CREATE TABLE plain (id bigint PRIMARY KEY, body text, lsh bigint[], sets bytea, dup_of bigint);
  CREATE TABLE stored (LIKE plain INCLUDING ALL);
  CREATE INDEX ON plain USING gin (lsh) WITH (fastupdate = off);
  CREATE INDEX ON stored USING gin (lsh) WITH (fastupdate = off);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body, lsh ON plain FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L%s)',
                 'body', 'lsh', 'similarity=' || t, policy, CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END);
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body, lsh, sets ON stored FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%L, %L, %L, %L%s, %L)',
                 'body', 'lsh', 'similarity=' || t, policy, CASE WHEN policy = 'link' THEN ', ''dup_of''' ELSE '' END, 'sets=sets');
END $$;
CREATE FUNCTION differ() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FROM plain p FULL JOIN stored s USING (id)
          WHERE p IS NULL OR s IS NULL OR (p.body, p.lsh, p.dup_of) IS DISTINCT FROM (s.body, s.lsh, s.dup_of));
END $$;
CREATE FUNCTION compare(t float8, policy text, one_by_one boolean,
                        OUT kept bigint, OUT linked bigint, OUT differ bigint, OUT stored_sets bigint)
LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  PERFORM make_pair(t, policy);
  IF one_by_one THEN
    FOR r IN SELECT id, body FROM src ORDER BY id LOOP
      INSERT INTO plain (id, body) VALUES (r.id, r.body);
      INSERT INTO stored (id, body) VALUES (r.id, r.body);
    END LOOP;
  ELSE
    INSERT INTO plain (id, body) SELECT id, body FROM src ORDER BY id;
    INSERT INTO stored (id, body) SELECT id, body FROM src ORDER BY id;
  END IF;
  kept := (SELECT count(*) FROM stored);
  linked := (SELECT count(dup_of) FROM stored);
  differ := differ();
  stored_sets := (SELECT count(sets) FROM stored);
END $$;

SELECT t, policy, one_by_one, c.*
FROM (VALUES (0.7), (0.8), (0.9)) t(t), (VALUES ('skip'), ('link')) p(policy),
     (VALUES (false), (true)) o(one_by_one),
     LATERAL compare(t, policy, one_by_one) c
ORDER BY policy, t, one_by_one;

-- the brute force, at 0.8 with skip: no two rows left at or above 0.8, and every text
-- offered is in the table or at or above 0.8 with a row in it
SELECT * FROM compare(0.8, 'skip', false);
SELECT count(*) AS similar_pairs_left FROM stored a JOIN stored b ON a.id < b.id AND simhash_jaccard(a.body, b.body) >= 0.8;
SELECT count(*) AS dropped_without_reason FROM src s
WHERE simhash_jaccard(s.body, s.body) IS NOT NULL  -- a text with shingles
  AND NOT EXISTS (SELECT FROM stored d WHERE simhash_jaccard(d.body, s.body) >= 0.8);

-- The stored format (1): byte 0x01, then simhash_shingles(body) as 8-byte little-endian
-- words; NULL for a NULL text, the format byte alone for a text without shingles.
SELECT count(*) FILTER (WHERE sets = '\x01'::bytea || (SELECT coalesce(string_agg(
           (SELECT string_agg(substring(int8send(h) FROM 9 - i FOR 1), ''::bytea ORDER BY i) FROM generate_series(1, 8) i),
           ''::bytea ORDER BY o), '') FROM unnest(simhash_shingles(body)) WITH ORDINALITY u(h, o))) AS as_specified,
       count(*) FILTER (WHERE body IS NOT NULL) AS with_text,
       count(*) FILTER (WHERE body IS NULL AND sets IS NULL) AS null_text_null_set,
       (SELECT encode(sets, 'hex') FROM stored WHERE body = '...') AS no_shingles
FROM stored;

-- The messages (reject): the same similarity shown as without the column
SELECT make_pair(0.8, 'reject');
INSERT INTO plain (id, body) SELECT id, body FROM src WHERE id = 1;
INSERT INTO stored (id, body) SELECT id, body FROM src WHERE id = 1;
\set VERBOSITY default
INSERT INTO plain (id, body) SELECT 2000, body || ' and more' FROM src WHERE id = 1;
INSERT INTO stored (id, body) SELECT 2000, body || ' and more' FROM src WHERE id = 1;
\set VERBOSITY terse

-- A value the trigger did not write is used as it is when well-formed (who may write the
-- column bypassing the trigger is the table's business: docs/dedupe.md). An UPDATE of the
-- sets column alone here: the trigger fires on UPDATE OF body, lsh, sets and rewrites it.
UPDATE stored SET sets = '\x01' WHERE id = 1;
SELECT sets <> '\x01' AS rewritten_by_trigger FROM stored WHERE id = 1;
ALTER TABLE stored DISABLE TRIGGER dedupe;
UPDATE stored SET sets = '\x01' WHERE id = 1;                 -- an empty set, well-formed
ALTER TABLE stored ENABLE TRIGGER dedupe;
INSERT INTO stored (id, body) SELECT 2001, body || ' and more' FROM src WHERE id = 1;
SELECT count(*) AS accepted_against_the_forged_set FROM stored WHERE id = 2001;
-- ... a malformed one is not: the candidate's text is read, as without the column
ALTER TABLE stored DISABLE TRIGGER dedupe;
UPDATE stored SET sets = '\x02' WHERE id = 1;                 -- another format
UPDATE stored SET sets = '\x010000000000000001' || '\x0000000000000000'::bytea WHERE id = 2001;  -- not ascending
ALTER TABLE stored ENABLE TRIGGER dedupe;
INSERT INTO stored (id, body) SELECT 2002, body || ' and yet more' FROM src WHERE id = 1;
-- rows without a set (written before the column): their texts; an UPDATE fills them
ALTER TABLE stored DISABLE TRIGGER dedupe;
UPDATE stored SET sets = NULL;
ALTER TABLE stored ENABLE TRIGGER dedupe;
INSERT INTO stored (id, body) SELECT 2003, body || ' and yet more' FROM src WHERE id = 1;
UPDATE stored SET body = body;
SELECT count(*) AS rows, count(sets) AS with_sets FROM stored;

-- A text of more than 8,192 distinct shingles: no set stored (NULL), its text is read
SELECT make_pair(0.8, 'skip');
INSERT INTO stored (id, body) SELECT 1, string_agg(md5(i::text), ' ') FROM generate_series(1, 1000) i;
INSERT INTO stored (id, body) SELECT 2, string_agg(md5(i::text), ' ') || ' end' FROM generate_series(1, 1000) i;
SELECT id, sets IS NULL AS no_set, (SELECT count(*) FROM unnest(simhash_shingles(body))) > 8192 AS large FROM stored ORDER BY id;

-- The bulk load fills the column too, and finds the same rows as the trigger
SELECT make_pair(0.8, 'skip');
INSERT INTO plain (id, body) SELECT id, body FROM src ORDER BY id;
SELECT simhash_dedupe_insert('stored', 'SELECT id, body FROM src ORDER BY id') AS inserted;
SELECT differ(), (SELECT count(sets) FROM stored) AS with_sets;

DROP TABLE plain, stored, src, words;
DROP FUNCTION compare(float8, text, boolean);
DROP FUNCTION differ();
DROP FUNCTION make_pair(float8, text);
