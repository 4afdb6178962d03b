-- 'sets=column': a value the trigger did not write and that is not well-formed format 1 is
-- ignored (the candidate's text is verified, as without the column), whatever its size.
-- A malformed value of 1 + 8n bytes with n past the cap of the new row (|A| / threshold)
-- used to rule the candidate out from its size alone: a near duplicate was let through.
-- Such values appear when the column held other data before the trigger, or when a role
-- that may bypass the trigger writes it.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

CREATE TABLE forged (id bigint PRIMARY KEY, body text, lsh bigint[], sets bytea);
CREATE INDEX forged_lsh ON forged USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER dedupe BEFORE INSERT OR UPDATE OF body, lsh, sets ON forged FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'reject', 'sets=sets');
-- Three rows of 40 words each, unrelated to each other.
INSERT INTO forged
SELECT r, (SELECT string_agg(substr(md5(r || '/' || p), 1, 6), ' ' ORDER BY p) FROM generate_series(1, 40) p)
FROM generate_series(1, 3) r;
SELECT id, length(sets) = 1 + 8 * cardinality(simhash_shingles(body)) AS stored_whole FROM forged ORDER BY id;

-- Values the trigger would not write, each of 1 + 8n bytes with n well past the cap (~48):
ALTER TABLE forged DISABLE TRIGGER dedupe;
UPDATE forged SET sets = '\x00'::bytea || decode(repeat('00', 8 * 500), 'hex') WHERE id = 1;      -- another first byte
UPDATE forged SET sets = '\x01'::bytea || decode(repeat('0100000000000000', 500), 'hex') WHERE id = 2;  -- not ascending
UPDATE forged SET sets = '\x01'::bytea || decode(repeat('00', 8 * 9000), 'hex') WHERE id = 3;     -- more than 8,192
ALTER TABLE forged ENABLE TRIGGER dedupe;
SELECT id, length(sets) FROM forged ORDER BY id;

-- A copy of each row with its last word changed (similarity about 0.9): each is a near
-- duplicate, found through the candidate's text.
CREATE FUNCTION forged_copy(r bigint) RETURNS text LANGUAGE sql AS $$
  SELECT regexp_replace(body, '\S+$', 'changed') FROM forged WHERE id = r $$;
SELECT simhash_jaccard(body, forged_copy(id)) >= 0.8 AS near FROM forged ORDER BY id;
INSERT INTO forged (id, body) VALUES (11, forged_copy(1));
INSERT INTO forged (id, body) VALUES (12, forged_copy(2));
INSERT INTO forged (id, body) VALUES (13, forged_copy(3));
-- and through the bulk load
SELECT simhash_dedupe_insert('forged', 'SELECT 21::bigint AS id, forged_copy(1) AS body');
SELECT array_agg(id ORDER BY id) AS kept FROM forged;

DROP TABLE forged;
DROP FUNCTION forged_copy(bigint);
