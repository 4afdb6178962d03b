-- simhash 0.1: install script (hand-edited; never changed once released, upgrades ship
-- as simhash--OLD--NEW.sql).
\echo Use "CREATE EXTENSION simhash" to load this file. \quit

CREATE FUNCTION simhash(text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION simhash(text) IS
'64-bit SimHash fingerprint of a text (word trigrams, CJK character trigrams, Unicode 15.0 case folding and compatibility decomposition, term-frequency weights, XXH3); NULL when the text has no letter, digit or emoji';

CREATE FUNCTION hamming(bigint, bigint) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_hamming_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

COMMENT ON FUNCTION hamming(bigint, bigint) IS
'number of bits in which two 64-bit fingerprints differ (0..64)';
