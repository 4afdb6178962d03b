-- simhash 0.1 -> 0.2. CREATE EXTENSION simhash installs 0.1 (simhash--0.1.sql, frozen)
-- and then runs this script, so it is also the install script of everything new in 0.2.
-- Hand-edited, one section per feature; never changed once 0.2 is released.
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.2'" to load this file. \quit

-- == Fingerprint options, weights, IDF and conversions (issue 3) ==========================

-- Fingerprints with options. simhash(text) of 0.1 stays as it is (users' indexes and
-- generated columns depend on it), so the tokenizer is a required argument here: a second
-- simhash(text, ...) whose other arguments all had defaults would make simhash(text)
-- ambiguous. n = 0 means the tokenizer's default (3 for 'word', 5 for 'char'); a real
-- default rather than NULL keeps the function STRICT. simhash(body, 'word') = simhash(body).
CREATE FUNCTION simhash(body text, tokenizer text, n integer DEFAULT 0,
                        weighting text DEFAULT 'tf', min_features integer DEFAULT 1)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_text_with_options'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION simhash(text, text, integer, text, integer) IS
'64-bit SimHash fingerprint with options: tokenizer ''word'' (words; each character a token in Chinese, Japanese, Thai...) or ''char'' (normalized characters, across words), n tokens per feature (0: 3 for word, 5 for char), weighting ''tf'', ''binary'' or ''log'', NULL below min_features features; simhash(body, ''word'') = simhash(body)';

CREATE FUNCTION simhash_features(body text, tokenizer text DEFAULT 'word', n integer DEFAULT 0,
                                 OUT feature bigint, OUT count bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'simhash_features_of_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 100;

COMMENT ON FUNCTION simhash_features(text, text, integer) IS
'the distinct features (64-bit hashes of n-token shingles) of a text with the given tokenizer and n, and how often each occurs';

-- Caller-supplied features, hashed as given (no normalization).
CREATE FUNCTION simhash(features text[], min_features integer DEFAULT 1)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_feature_array'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION simhash(text[], integer) IS
'64-bit SimHash fingerprint of caller-supplied features (hashed as given, each occurrence weight 1); NULL below min_features features';

CREATE FUNCTION simhash(features text[], weights double precision[],
                        min_features integer DEFAULT 1)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_weighted_feature_array'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION simhash(text[], double precision[], integer) IS
'64-bit SimHash fingerprint of caller-supplied features (hashed as given) with weights (finite, >= 0; 0 leaves a feature out); NULL below min_features features of positive weight';

-- PostgreSQL text search as the tokenizer.
CREATE FUNCTION simhash(lexemes tsvector, n integer DEFAULT 0, weighting text DEFAULT 'tf',
                        min_features integer DEFAULT 1)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_tsvector'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION simhash(tsvector, integer, text, integer) IS
'64-bit SimHash fingerprint of a tsvector: lexemes in position order, n per feature (0: 3), weighting ''tf'', ''binary'' or ''log''; a tsvector without positions is a bag of lexemes; NULL below min_features features';

-- Document frequencies into a table the user owns:
--   CREATE TABLE docs_df AS SELECT * FROM simhash_df('SELECT body FROM docs');
-- The query's first column is the text. One pass over it; the counting is PostgreSQL's
-- own aggregation, which spills to disk beyond work_mem. docs (the same on every row) is
-- the number of documents with at least one feature. VOLATILE: it runs any query.
CREATE FUNCTION simhash_df(query text, tokenizer text DEFAULT 'word', n integer DEFAULT 0,
                           min_df bigint DEFAULT 1)
    RETURNS TABLE (feature bigint, df bigint, docs bigint)
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    AS $fn$
BEGIN
    IF min_df OPERATOR(pg_catalog.<) 1 THEN
        RAISE EXCEPTION 'simhash: min_df must be at least 1, got %', min_df
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Check the options before running the query.
    PERFORM @extschema@.simhash_features('', tokenizer, n);
    RETURN QUERY EXECUTE pg_catalog.format(
        $q$SELECT c.feature, c.df, c.docs
           FROM (SELECT g.feature, g.df,
                        (pg_catalog.sum(g.firsts) OVER ())::pg_catalog.int8 AS docs
                 FROM (SELECT f.feature, pg_catalog.count(*) AS df,
                              pg_catalog.count(*) FILTER (WHERE f.ord OPERATOR(pg_catalog.=) 1) AS firsts
                       FROM (%s) AS q (body)
                       CROSS JOIN LATERAL @extschema@.simhash_features(q.body, $1, $2)
                            WITH ORDINALITY AS f (feature, count, ord)
                       GROUP BY f.feature) AS g) AS c
           WHERE c.df OPERATOR(pg_catalog.>=) $3$q$,
        query)
        USING tokenizer, n, min_df;
END
$fn$;

COMMENT ON FUNCTION simhash_df(text, text, integer, bigint) IS
'document frequencies of the features of the texts a query returns (first column), for simhash_tfidf(): feature, number of documents it occurs in (df >= min_df), number of documents with a feature (docs); use as CREATE TABLE t AS SELECT * FROM simhash_df(''SELECT body FROM docs'')';

-- TF-IDF fingerprints. Reading a table makes it STABLE (not usable in indexes or generated
-- columns; store the result with UPDATE, INSERT ... SELECT or a trigger) and PARALLEL
-- RESTRICTED (the table may be temporary, and each worker would load it again).
CREATE FUNCTION simhash_tfidf(body text, df regclass, tokenizer text DEFAULT 'word',
                              n integer DEFAULT 0, min_features integer DEFAULT 1)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_tfidf_text'
    LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION simhash_tfidf(text, regclass, text, integer, integer) IS
'64-bit SimHash fingerprint with TF-IDF weights from a document frequency table (feature, df, docs; see simhash_df), read once per statement; STABLE: stored fingerprints are not recomputed when the table changes';

-- Similarity and conversions. bigint is signed: the unsigned fingerprint is stored by two's
-- complement. bigint::bit(64) and bit(64)::bigint are built in and keep the bits.
CREATE FUNCTION simhash_similarity(bigint, bigint) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_similarity_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

COMMENT ON FUNCTION simhash_similarity(bigint, bigint) IS
'share of equal bits of two 64-bit fingerprints, 1 - hamming(a, b) / 64 (0..1)';

CREATE FUNCTION simhash_to_hex(bigint) RETURNS text
    AS 'MODULE_PATHNAME', 'simhash_to_hex_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

COMMENT ON FUNCTION simhash_to_hex(bigint) IS
'the unsigned fingerprint as 16 lower-case hexadecimal digits, zero-padded (to_hex() drops leading zeros)';

CREATE FUNCTION simhash_from_hex(text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_from_hex_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION simhash_from_hex(text) IS
'a fingerprint from 1 to 16 hexadecimal digits (optionally after 0x), as stored in bigint (two''s complement); inverse of simhash_to_hex';

CREATE FUNCTION simhash_to_numeric(bigint) RETURNS numeric
    AS 'MODULE_PATHNAME', 'simhash_to_numeric_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

COMMENT ON FUNCTION simhash_to_numeric(bigint) IS
'the unsigned value of a fingerprint, 0 .. 18446744073709551615, as other SimHash libraries print it';

CREATE FUNCTION simhash_from_numeric(numeric) RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_from_numeric_numeric'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION simhash_from_numeric(numeric) IS
'a fingerprint from its unsigned value (an integer 0 .. 18446744073709551615), as stored in bigint (two''s complement); inverse of simhash_to_numeric';



-- == Near-duplicate search: block keys, simhash_near, index layouts (issue 4) ============


-- == Dedupe on insert: the simhash_dedupe() trigger (issue 5) ============================


-- == All pairs and clusters of a table (issue 6) =========================================

