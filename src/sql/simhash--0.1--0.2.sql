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


-- == Near-duplicate search: block keys, simhash_near, index layouts (issue 4) ============


-- == Dedupe on insert: the simhash_dedupe() trigger (issue 5) ============================


-- == All pairs and clusters of a table (issue 6) =========================================

