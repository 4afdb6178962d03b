-- A cancel is answered within a second whatever one row holds: every entry point that
-- takes a text or a query, on a row of 25.6 million characters, cancelled by
-- statement_timeout (SQLSTATE 57014). The engine of the verified all-pairs functions and
-- of the bulk load's plan shingled a batch in one call (their cancels came 1.3 to 2 s late
-- for this row, 2.7 to 4 s at 0.5), and the trigger sorted a candidate's shingles in one
-- call (up to 2.5 s late below); the core now asks the glue's interrupt poll as it goes
-- (docs/internals.md). The other entry points looked for interrupts already: they must go
-- on doing so.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- The row: 25.6 million characters that repeat every 64 (64 distinct shingles: cheap to
-- hold, but every feature is collected and sorted), stored uncompressed.
CREATE TEMP TABLE big (id bigint, body text);
ALTER TABLE big ALTER COLUMN body SET STORAGE EXTERNAL;
INSERT INTO big SELECT 1, repeat(md5('a') || md5('b'), 400000);
SELECT length(body) AS chars FROM big;

-- Runs stmt again and again until the statement's timeout cancels it (a call shorter than
-- the timeout is run once more), and says whether the cancel came within 1 s of the
-- timeout (200 ms: within 1 s of the start). Whatever stmt changed is rolled back.
CREATE FUNCTION pg_temp.cancelled(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  timeout interval := current_setting('statement_timeout')::interval;
  late interval;
BEGIN
  BEGIN
    LOOP
      EXECUTE stmt;
      EXIT WHEN clock_timestamp() - statement_timestamp() > timeout + interval '10 s';
    END LOOP;
  EXCEPTION WHEN query_canceled THEN
    late := clock_timestamp() - statement_timestamp() - timeout;
    RETURN CASE WHEN late < interval '800 ms' THEN 'cancelled within 1 s'
                ELSE format('cancelled %s s after the timeout', round(extract(epoch FROM late), 1)) END;
  END;
  RETURN 'not cancelled';
END
$$;

-- Per-text functions.
SET statement_timeout = '200ms';
SELECT pg_temp.cancelled($$SELECT simhash(body) FROM big$$) AS "simhash(text)";
SELECT pg_temp.cancelled($$SELECT simhash(body, 'char', 5, 'binary') FROM big$$) AS "simhash(char, binary)";
SELECT pg_temp.cancelled($$SELECT simhash(body, 'word', 1, 'log') FROM big$$) AS "simhash(word, log)";
SELECT pg_temp.cancelled($$SELECT count(*) FROM big, simhash_features(body, 'char', 5)$$) AS simhash_features;
SELECT pg_temp.cancelled($$SELECT cardinality(simhash_shingles(body)) FROM big$$) AS simhash_shingles;
SELECT pg_temp.cancelled($$SELECT simhash_lsh(body) FROM big$$) AS simhash_lsh;
SELECT pg_temp.cancelled($$SELECT simhash_shingle_digest(body) FROM big$$) AS simhash_shingle_digest;
SELECT pg_temp.cancelled($$SELECT simhash_shingle_summary(body) FROM big$$) AS simhash_shingle_summary;
SELECT pg_temp.cancelled($$SELECT simhash_jaccard(body, 'short') FROM big$$) AS simhash_jaccard;
SELECT pg_temp.cancelled($$SELECT simhash_containment('short', body) FROM big$$) AS simhash_containment;
SELECT pg_temp.cancelled($$SELECT count(*) FROM big WHERE body %~ 'short'$$) AS "%~";
SELECT pg_temp.cancelled($$SELECT body <%> 'short' FROM big$$) AS "<%>";
RESET statement_timeout;
CREATE TEMP TABLE df AS SELECT * FROM simhash_df($$SELECT 'a b c'$$);
SET statement_timeout = '200ms';
SELECT pg_temp.cancelled($$SELECT simhash_tfidf(body, 'df') FROM big$$) AS simhash_tfidf;
SELECT pg_temp.cancelled($$SELECT count(*) FROM simhash_df('SELECT body FROM big', 'char', 5)$$) AS simhash_df;
RESET statement_timeout;

-- The GIN operator class: a row's keys (an insert), and a query's (an index scan).
CREATE TEMP TABLE gin_docs (body text);
CREATE INDEX gin_docs_body ON gin_docs USING gin (body simhash_ops);
INSERT INTO gin_docs VALUES ('a short text of a few words');
SET enable_seqscan = off;
SET statement_timeout = '200ms';
SELECT pg_temp.cancelled($$INSERT INTO gin_docs SELECT body FROM big$$) AS "simhash_ops insert";
SELECT pg_temp.cancelled($$SELECT count(*) FROM gin_docs WHERE body %~ (SELECT body FROM big)$$) AS "simhash_ops search";
RESET statement_timeout;
RESET enable_seqscan;

-- Queries: the all-pairs functions (the fingerprints are the query's), and the verified
-- ones (the engine shingles the row), at 0.8 (LSH keys) and 0.5 (fingerprint recipes).
SET statement_timeout = '200ms';
SELECT pg_temp.cancelled($$SELECT count(*) FROM simhash_pairs('SELECT id, simhash(body, ''char'', 5, ''binary'') FROM big', 3)$$) AS simhash_pairs;
SELECT pg_temp.cancelled($$SELECT count(*) FROM simhash_clusters('SELECT id, simhash(body, ''char'', 5, ''binary'') FROM big', 3)$$) AS simhash_clusters;
SELECT pg_temp.cancelled($$SELECT count(*) FROM simhash_similar_pairs('SELECT id, body FROM big', 0.8)$$) AS "simhash_similar_pairs 0.8";
SELECT pg_temp.cancelled($$SELECT count(*) FROM simhash_similar_pairs('SELECT id, body FROM big', 0.5)$$) AS "simhash_similar_pairs 0.5";
SELECT pg_temp.cancelled($$SELECT count(*) FROM simhash_similar_clusters('SELECT id, body FROM big', 0.8)$$) AS "simhash_similar_clusters 0.8";
SELECT pg_temp.cancelled($$SELECT count(*) FROM simhash_similar_clusters('SELECT id, body FROM big', 0.5)$$) AS "simhash_similar_clusters 0.5";
RESET statement_timeout;

-- The dedupe trigger with a threshold: a row's own keys (an insert), the bulk load (its
-- plan runs the engine over the load's texts), and the table index of a long statement
-- under the table lock (made after 256 searches, it shingles every row of the table up to
-- 1 MB: here 24 of them, and the row of 25.6 million characters it leaves to the search).
CREATE TEMP TABLE docs (id bigserial PRIMARY KEY, body text, lsh bigint[]);
ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE INDEX docs_lsh ON docs USING gin (lsh) WITH (fastupdate = off);
INSERT INTO docs (body, lsh) SELECT body, simhash_lsh(body) FROM big;
INSERT INTO docs (body, lsh)
  SELECT repeat(md5(i::text), 32768), (SELECT lsh FROM docs WHERE id = 1)
  FROM generate_series(1, 24) i;
CREATE TRIGGER dedupe BEFORE INSERT ON docs FOR EACH ROW
  EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'skip');
CREATE FUNCTION pg_temp.long_load() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE docs IN SHARE ROW EXCLUSIVE MODE;
  INSERT INTO docs (body)
    SELECT 'new ' || i || ' ' || md5(i::text) FROM generate_series(1, 400) i ORDER BY i;
END
$$;
-- (the load holds the table lock: no row's keys are computed before its plan)
CREATE FUNCTION pg_temp.bulk_load() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  LOCK TABLE docs IN SHARE ROW EXCLUSIVE MODE;
  RETURN simhash_dedupe_insert('docs', 'SELECT ''x'' || body AS body FROM big');
END
$$;
SET statement_timeout = '200ms';
SELECT pg_temp.cancelled($$INSERT INTO docs (body) SELECT 'x' || body FROM big$$) AS "simhash_dedupe trigger";
SELECT pg_temp.cancelled($$SELECT pg_temp.bulk_load()$$) AS simhash_dedupe_insert;
SELECT pg_temp.cancelled($$SELECT pg_temp.long_load()$$) AS "simhash_dedupe table index";
RESET statement_timeout;
SELECT count(*) AS docs FROM docs;

-- The trigger verifying a candidate: the new row shares LSH keys with a row of 25 million
-- characters and 18.7 million distinct shingles, which the trigger counts (its table
-- growing to 2^26 entries) and sorts. The timeout must fall in the candidate's part: after
-- the new row's own shingling, which takes about as long as the candidate's insert below
-- (t_insert), and before the end (about 3.3 t_insert). At 3 t_insert it fell, in about
-- half the runs, in the sort, which took 2 s without a look for interrupts (the cancel came
-- 1.3 to 1.9 s late); in the others, in the count, which looked for them. Wherever it
-- falls, the cancel must come within 1 s.
CREATE TEMP TABLE varied AS
  SELECT string_agg(encode(sha256(i::text::bytea), 'base64'), '' ORDER BY i) AS body
  FROM generate_series(1, 568182) i;
TRUNCATE docs;
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
INSERT INTO docs (body) SELECT body FROM varied;
SELECT greatest(500, round((extract(epoch FROM clock_timestamp()) - :t0) * 3000))::int AS timeout_ms \gset
SET statement_timeout = :timeout_ms;
SELECT pg_temp.cancelled($$INSERT INTO docs (body) SELECT 'x' || body FROM varied$$) AS "simhash_dedupe candidate";
RESET statement_timeout;
SELECT count(*) AS docs FROM docs;
