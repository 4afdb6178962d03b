-- Huge texts: the shingle functions (and the other collecting paths) can be cancelled in
-- every phase, including the final sort of the features, and their memory is bounded.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- Sorting in slices changes no value. 1.8 million features, more than one slice: these are
-- the values of the unsliced sort (shingle sets, LSH keys and fingerprints are stored).
CREATE TEMP TABLE mid AS
  SELECT string_agg(md5(i::text), '' ORDER BY i) || repeat(' Straße ﷺ 自由软件 ', 20000) AS body
  FROM generate_series(1, 40000) i;
SELECT length(body) AS chars,
       cardinality(simhash_shingles(body)) AS shingles,
       md5(simhash_shingles(body)::text) AS set_md5,
       simhash_shingle_digest(body) AS digest,
       simhash_lsh(body) = simhash_lsh(simhash_shingles(body)) AS lsh_of_set,
       md5(simhash_lsh(body)::text) AS lsh_md5,
       simhash_shingle_summary(body) = (simhash_shingle_digest(body), simhash_lsh(body)) AS summary
FROM mid;
SELECT simhash(body, 'char', 5, 'binary') AS char_binary, simhash(body, 'char', 3, 'log') AS char_log,
       simhash(body, 'word', 1, 'binary') AS word_binary
FROM mid;
SELECT count(*) AS features, sum(count) AS occurrences,
       md5(string_agg(feature || ':' || count, ',' ORDER BY n)) AS features_md5
FROM mid, simhash_features(body, 'char', 4) WITH ORDINALITY AS f(feature, count, n);
SELECT round(simhash_jaccard(body, left(body, 800000))::numeric, 6) AS jaccard,
       round(simhash_containment(left(body, 800000), body)::numeric, 6) AS containment
FROM mid;
DROP TABLE mid;

-- A text of 64.8 million characters, stored uncompressed (reading it is quick). Shingling
-- it takes about a second and sorting its 64.8 million shingles about three more; the sort
-- used to run without an interrupt check, so a cancel landed seconds late. The timeout is
-- set from the time of the streaming simhash(body, 'char', 5, 'tf') (the same tokenizing,
-- no sort) so that it falls after the shingling however loaded the machine is: twice that
-- time, while the call takes more than three times as long. Each call must end within a
-- second of its timeout. (The cancel is caught, so that a call that a change of load lets
-- finish before its timeout does not change the output: only the time is checked.)
CREATE TEMP TABLE huge (body text);
ALTER TABLE huge ALTER COLUMN body SET STORAGE EXTERNAL;
INSERT INTO huge
  SELECT repeat(string_agg(md5(i::text), '' ORDER BY i), 648) FROM generate_series(1, 3125) i;
SELECT length(body) AS chars FROM huge;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT simhash(body, 'char', 5, 'tf') IS NOT NULL AS streamed FROM huge;
SELECT greatest(200, round((extract(epoch FROM clock_timestamp()) - :t0) * 2000))::int AS timeout_ms \gset

SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SET statement_timeout = :timeout_ms;
DO $$ BEGIN PERFORM cardinality(simhash_shingles(body)) FROM huge; EXCEPTION WHEN query_canceled THEN NULL; END $$;
RESET statement_timeout;
SELECT extract(epoch FROM clock_timestamp()) - :t0 < :timeout_ms / 1000.0 + 1 AS shingles_cancelled_promptly;

SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SET statement_timeout = :timeout_ms;
DO $$ BEGIN PERFORM simhash_lsh(body) FROM huge; EXCEPTION WHEN query_canceled THEN NULL; END $$;
RESET statement_timeout;
SELECT extract(epoch FROM clock_timestamp()) - :t0 < :timeout_ms / 1000.0 + 1 AS lsh_cancelled_promptly;

SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SET statement_timeout = :timeout_ms;
DO $$ BEGIN PERFORM simhash_jaccard(body, body) FROM huge; EXCEPTION WHEN query_canceled THEN NULL; END $$;
RESET statement_timeout;
SELECT extract(epoch FROM clock_timestamp()) - :t0 < :timeout_ms / 1000.0 + 1 AS jaccard_cancelled_promptly;

SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SET statement_timeout = :timeout_ms;
DO $$ BEGIN PERFORM simhash(body, 'char', 5, 'binary') FROM huge; EXCEPTION WHEN query_canceled THEN NULL; END $$;
RESET statement_timeout;
SELECT extract(epoch FROM clock_timestamp()) - :t0 < :timeout_ms / 1000.0 + 1 AS binary_cancelled_promptly;
DROP TABLE huge;

-- The bound: a shingle set holds at most 2^26 shingles (512 MB) while it is made; U+FDFA
-- normalizes to 18 characters, so 5 million of them are 90 million shingles: 54000, with a
-- message that says what holds the memory.
\set VERBOSITY default
SELECT simhash_shingles(repeat(chr(65018), 5000000));
\set VERBOSITY terse
DO $$
BEGIN
  PERFORM simhash_jaccard('short', repeat(chr(65018), 5000000));
EXCEPTION WHEN program_limit_exceeded THEN
  RAISE NOTICE 'simhash_jaccard: SQLSTATE %', SQLSTATE;
END
$$;
-- the verified all-pairs engine has the same bound for one row (it held 144 bytes a byte of
-- the row's text before: a 240 MB row ran out of memory)
DO $$
BEGIN
  PERFORM count(*) FROM simhash_similar_pairs('SELECT 1, repeat(chr(65018), 5000000)', 0.8);
EXCEPTION WHEN program_limit_exceeded THEN
  RAISE NOTICE 'simhash_similar_pairs: SQLSTATE %', SQLSTATE;
END
$$;
