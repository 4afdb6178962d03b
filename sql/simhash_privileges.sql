-- Privileges: every function that takes a table, a column or a query, called by roles
-- without rights on the table; row-level security honoured by the functions that read rows;
-- the layout catalog's cleanup with names that need quoting. (The trigger's rules are in
-- simhash_dedupe.sql, the trusted install and the catalog's guards in simhash_trusted.sql.)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
DROP ROLE IF EXISTS regress_simhash_nobody;
DROP ROLE IF EXISTS regress_simhash_reader;
RESET client_min_messages;
\set VERBOSITY terse

CREATE TABLE secret (id bigint PRIMARY KEY, body text, fp bigint, lsh bigint[], owner name);
INSERT INTO secret
SELECT i, 'secret text number ' || i || ' about ' || (i % 7), NULL, NULL,
       CASE WHEN i % 2 = 0 THEN 'regress_simhash_reader' ELSE 'someone_else' END
FROM generate_series(1, 60) i;
UPDATE secret SET fp = simhash(body), lsh = simhash_lsh(body);
SELECT count(*) FROM simhash_create_index('secret', 'fp', 3);
CREATE TABLE secret_df AS SELECT * FROM simhash_df('SELECT body FROM secret');
CREATE ROLE regress_simhash_nobody;
CREATE ROLE regress_simhash_reader;

-- No right on the table: every function that reads its rows is refused (42501); what the
-- catalogs tell anyone (its indexes, its column types, its row estimate) is not.
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
    EXECUTE q INTO r;
    RETURN 'ok: ' || coalesce(r, 'null');
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
GRANT EXECUTE ON FUNCTION pg_temp.try(text) TO PUBLIC;
SET ROLE regress_simhash_nobody;
SELECT q, pg_temp.try(q) AS result FROM unnest(ARRAY[
    $$SELECT count(*) FROM simhash_nearest(NULL::secret, 'fp', 1, 3)$$,
    $$SELECT count(*) FROM simhash_similar_nearest(NULL::secret, 'body', 'lsh', 'secret text', 3)$$,
    $$SELECT count(*) FROM simhash_skew('secret', 'fp', 1)$$,
    $$SELECT simhash_tfidf('secret text', 'secret_df')::text$$,
    $$SELECT count(*) FROM simhash_df('SELECT body FROM secret')$$,
    $$SELECT count(*) FROM simhash_pairs('SELECT id, fp FROM secret', 3)$$,
    $$SELECT count(*) FROM simhash_clusters('SELECT id, fp FROM secret', 3)$$,
    $$SELECT count(*) FROM simhash_similar_pairs('SELECT id, body FROM secret', 0.8)$$,
    $$SELECT count(*) FROM simhash_similar_clusters('SELECT id, body FROM secret', 0.8)$$,
    $$SELECT count(*) FROM simhash_create_index('secret', 'fp', 3)$$,
    $$SELECT simhash_drop_index('secret', 'fp')::text$$,
    $$SELECT simhash_layout_record('secret', 'fp', 3, 4)::text$$,
    $$SELECT simhash_layout_forget('secret', 'fp')::text$$,
    $$SELECT count(*) FROM simhash_search_plan('secret', 'fp', 3)$$,
    $$SELECT count(*) FROM simhash_block_indexes('secret', 'fp')$$,
    $$SELECT simhash_check_column('secret', 'fp')::text$$]) AS q;
RESET ROLE;

-- Row-level security: the functions read what the caller's query or the caller may see.
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON secret USING (owner = current_user);
GRANT SELECT ON secret TO regress_simhash_reader;
SET ROLE regress_simhash_reader;
SELECT count(*) AS visible FROM secret;
SELECT count(DISTINCT id1) + count(DISTINCT id2) > 0 AS some_pairs,
       bool_and(id1 % 2 = 0 AND id2 % 2 = 0) AS only_visible_rows
FROM simhash_pairs('SELECT id, fp FROM secret', 16);
SELECT bool_and(id % 2 = 0) AS only_visible_rows FROM simhash_clusters('SELECT id, fp FROM secret', 16);
SELECT bool_and(id1 % 2 = 0 AND id2 % 2 = 0) AS only_visible_rows
FROM simhash_similar_pairs('SELECT id, body FROM secret', 0.5);
SELECT bool_and((n.doc).id % 2 = 0) AS only_visible_rows, count(*)
FROM simhash_nearest(NULL::secret, 'fp', (SELECT fp FROM secret WHERE id = 2), 10) n;
SELECT sum(rows) AS rows_in_top_buckets FROM simhash_skew('secret', 'fp', 100) WHERE block = 0;
SELECT max(docs) AS documents FROM simhash_df('SELECT body FROM secret');
RESET ROLE;
DROP TABLE secret, secret_df;

-- The cleanup event trigger with names that need quoting: their layout rows go too.
CREATE SCHEMA "odd; schema";
CREATE TABLE "odd; schema"."t'able
with a newline" ("f""p" bigint, "g; DROP TABLE x" bigint);
SELECT count(*) FROM simhash_create_index('"odd; schema"."t''able
with a newline"', 'f"p', 2);
SELECT count(*) AS layouts FROM simhash_layouts WHERE col = 'f"p';
ALTER TABLE "odd; schema"."t'able
with a newline" DROP COLUMN "f""p";
SELECT count(*) AS layouts FROM simhash_layouts WHERE col = 'f"p';
SELECT count(*) FROM simhash_create_index('"odd; schema"."t''able
with a newline"', 'g; DROP TABLE x', 2);
SELECT count(*) AS layouts FROM simhash_layouts WHERE col = 'g; DROP TABLE x';
DROP SCHEMA "odd; schema" CASCADE;
SELECT count(*) AS layouts FROM simhash_layouts WHERE col = 'g; DROP TABLE x';

DROP ROLE regress_simhash_nobody;
DROP ROLE regress_simhash_reader;
