-- Document frequencies in a table the user owns (simhash_df) and TF-IDF fingerprints from
-- it (simhash_tfidf, STABLE: it reads the table once per statement).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

CREATE TABLE idf_docs (id integer PRIMARY KEY, body text);
INSERT INTO idf_docs VALUES
  (1, 'the cat sat on the mat'),
  (2, 'the dog sat on the mat'),
  (3, 'a completely different text about nothing'),
  (4, ''),
  (5, NULL),
  (6, '猫坐在垫子上');

-- one row per feature: the number of documents it occurs in, and (on every row) the number
-- of documents that have a feature at all (empty and NULL texts have none)
CREATE TABLE idf_df AS SELECT * FROM simhash_df('SELECT body FROM idf_docs', n => 1);
SELECT count(*) AS features, min(docs) AS docs, max(docs) = min(docs) AS same_docs_everywhere,
       sum(df) AS feature_document_pairs
FROM idf_df;
SELECT df, count(*) FROM idf_df GROUP BY df ORDER BY df;
-- the features of one word are simhash_features() of that word
SELECT d.df FROM idf_df d JOIN simhash_features('mat', 'word', 1) f ON f.feature = d.feature;

-- min_df keeps the table small; tokenizer and n as in simhash()
SELECT count(*) AS common FROM simhash_df('SELECT body FROM idf_docs', n => 1, min_df => 2);
SELECT count(*) AS char_trigrams, min(docs) AS docs FROM simhash_df('SELECT body FROM idf_docs WHERE id <= 2', 'char', 3);
SELECT count(*) AS nothing FROM simhash_df('SELECT body FROM idf_docs WHERE false');
SELECT count(*) AS commented FROM simhash_df('SELECT body FROM idf_docs -- every text', n => 1, min_df => 2);

-- TF-IDF: features that occur everywhere weigh less. With every feature equally rare the
-- result is the plain fingerprint (SimHash does not care about a common factor).
SELECT id, simhash_tfidf(body, 'idf_df', n => 1) = simhash(body, 'word', 1) AS same_as_tf
FROM idf_docs ORDER BY id;

-- a word in every document weighs 1, a rare one 1 + ln((1 + docs) / 2): here the rare word
-- outweighs a common word that occurs twice, where term frequency lets the common one win
CREATE TABLE idf_hand (feature bigint, df bigint, docs bigint);
INSERT INTO idf_hand
SELECT feature, CASE WHEN w = 'common' THEN 1000 ELSE 1 END, 1000
FROM unnest(ARRAY['common', 'rare']) AS w, simhash_features(w, 'word', 1);
SELECT simhash_tfidf('common common rare', 'idf_hand', n => 1) = simhash(ARRAY['rare']) AS idf_rare_wins,
       simhash('common common rare', 'word', 1) = simhash(ARRAY['common']) AS tf_common_wins;

-- a feature missing from the table counts as the rarest
SELECT simhash_tfidf('zebra', 'idf_df', n => 1) = simhash('zebra', 'word', 1) AS unknown_feature;

-- an empty table: no statistics, plain term frequency
CREATE TABLE idf_empty (feature bigint, df bigint, docs bigint);
SELECT simhash_tfidf('the cat sat', 'idf_empty') = simhash('the cat sat') AS empty_table_is_tf;

-- the table is read with the caller's snapshot and search_path does not matter
CREATE SCHEMA "Idf Stats";
CREATE TABLE "Idf Stats"."DF table" AS SELECT * FROM idf_df;
SET search_path = pg_catalog;
SELECT public.simhash_tfidf('the cat sat', '"Idf Stats"."DF table"', n => 1) = public.simhash_tfidf('the cat sat', 'public.idf_df', n => 1) AS quoted_name;
RESET search_path;

-- once per statement; a later statement sees changes (stored fingerprints do not)
CREATE TABLE idf_store AS SELECT id, simhash_tfidf(body, 'idf_df', n => 1) AS fp FROM idf_docs;
UPDATE idf_df SET df = docs WHERE feature IN (SELECT feature FROM simhash_features('cat', 'word', 1));
SELECT count(*) FILTER (WHERE s.fp IS DISTINCT FROM simhash_tfidf(d.body, 'idf_df', n => 1)) AS changed_since_stored
FROM idf_store s JOIN idf_docs d USING (id);
-- the recipe: recompute explicitly
UPDATE idf_store s SET fp = simhash_tfidf(d.body, 'idf_df', n => 1) FROM idf_docs d WHERE d.id = s.id;
SELECT count(*) FILTER (WHERE s.fp IS DISTINCT FROM simhash_tfidf(d.body, 'idf_df', n => 1)) AS changed_after_update
FROM idf_store s JOIN idf_docs d USING (id);

-- in a PL/pgSQL loop that changes the table between calls, each call sees the change
CREATE TABLE idf_tmp AS SELECT * FROM idf_df;
DO $$
DECLARE
    before bigint;
    after bigint;
BEGIN
    before := simhash_tfidf('the cat sat on the mat', 'idf_tmp', n => 1);
    UPDATE idf_tmp SET df = 1;
    after := simhash_tfidf('the cat sat on the mat', 'idf_tmp', n => 1);
    RAISE NOTICE 'changed: %, now tf: %', before <> after, after = simhash('the cat sat on the mat', 'word', 1);
END
$$;

-- a trigger keeps a stored TF-IDF fingerprint current for new rows
CREATE TABLE idf_trig (id integer, body text, fp bigint);
CREATE FUNCTION idf_trig_fp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.fp := simhash_tfidf(NEW.body, 'idf_df', n => 1);
    RETURN NEW;
END
$$;
CREATE TRIGGER idf_trig_fp BEFORE INSERT OR UPDATE OF body ON idf_trig
    FOR EACH ROW EXECUTE FUNCTION idf_trig_fp();
INSERT INTO idf_trig VALUES (1, 'the cat sat on the mat');
SELECT fp = simhash_tfidf(body, 'idf_df', n => 1) AS trigger_fp FROM idf_trig;

-- STABLE: not allowed in an index or a generated column
CREATE INDEX ON idf_docs (simhash_tfidf(body, 'idf_df'));
CREATE TABLE idf_gen (body text, fp bigint GENERATED ALWAYS AS (simhash_tfidf(body, 'idf_df')) STORED);

-- errors
SELECT simhash_tfidf('x', 'no_such_table');
SELECT simhash_tfidf('x', 'idf_df', 'words');
SELECT simhash_tfidf('x', 'idf_df', n => 9);
SELECT simhash_tfidf('x', 'idf_df', min_features => 0);
CREATE TABLE idf_bad (feature bigint, df bigint, docs bigint);
INSERT INTO idf_bad VALUES (1, 1, 5), (1, 2, 5);
SELECT simhash_tfidf('x', 'idf_bad');
TRUNCATE idf_bad; INSERT INTO idf_bad VALUES (1, 6, 5);
SELECT simhash_tfidf('x', 'idf_bad');
TRUNCATE idf_bad; INSERT INTO idf_bad VALUES (1, 0, 5);
SELECT simhash_tfidf('x', 'idf_bad');
TRUNCATE idf_bad; INSERT INTO idf_bad VALUES (1, 1, 5), (2, 1, 6);
SELECT simhash_tfidf('x', 'idf_bad');
TRUNCATE idf_bad; INSERT INTO idf_bad VALUES (1, NULL, 5);
SELECT simhash_tfidf('x', 'idf_bad');
TRUNCATE idf_bad; INSERT INTO idf_bad VALUES (1, 1, -1);
SELECT simhash_tfidf('x', 'idf_bad');
CREATE TABLE idf_cols (feature bigint, frequency bigint);
SELECT simhash_tfidf('x', 'idf_cols');
SELECT * FROM simhash_df('SELECT body FROM idf_docs', 'words');
SELECT * FROM simhash_df('SELECT body FROM idf_docs', min_df => 0);
SELECT * FROM simhash_df('SELECT id FROM idf_docs');
SELECT * FROM simhash_df('not sql');

-- reading the table needs the caller's SELECT privilege
CREATE ROLE simhash_idf_reader;
GRANT USAGE ON SCHEMA public TO simhash_idf_reader;
SET ROLE simhash_idf_reader;
SELECT simhash_tfidf('x', 'idf_df');
RESET ROLE;
REVOKE USAGE ON SCHEMA public FROM simhash_idf_reader;
DROP ROLE simhash_idf_reader;

-- SQLSTATEs of the errors above
\set VERBOSITY sqlstate
SELECT simhash_tfidf('x', 'idf_df', 'words');
TRUNCATE idf_bad; INSERT INTO idf_bad VALUES (1, 6, 5);
SELECT simhash_tfidf('x', 'idf_bad');
TRUNCATE idf_bad; INSERT INTO idf_bad VALUES (1, 1, 5), (2, 1, 6);
SELECT simhash_tfidf('x', 'idf_bad');
TRUNCATE idf_bad; INSERT INTO idf_bad VALUES (1, NULL, 5);
SELECT simhash_tfidf('x', 'idf_bad');
SELECT * FROM simhash_df('SELECT body FROM idf_docs', min_df => 0);
\set VERBOSITY terse

DROP TABLE idf_docs, idf_df, idf_empty, idf_hand, idf_store, idf_tmp, idf_trig, idf_bad, idf_cols;
DROP FUNCTION idf_trig_fp();
DROP SCHEMA "Idf Stats" CASCADE;
