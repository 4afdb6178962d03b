-- simhash 0.2: the full install script (CREATE EXTENSION simhash). Hand-edited, one
-- section per feature. The upgrade script simhash--0.1--0.2.sql is made from this file by
-- the Makefile: everything but the section of the 0.1 objects, which must stay exactly as
-- simhash--0.1.sql has them (the simhash_upgrade test compares a fresh install with 0.1
-- plus the upgrade, object by object). Once 0.2 is released, this file and the upgrade
-- script are frozen: 0.3 gets its own full script and simhash--0.2--0.3.sql.
\echo Use "CREATE EXTENSION simhash" to load this file. \quit

-- >>> 0.1 objects (as in simhash--0.1.sql; left out of the upgrade script) >>>
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
-- <<< 0.1 objects <<<

-- == Fingerprint options, weights, IDF and conversions ==========================

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
DECLARE
    body_type pg_catalog.regtype;
BEGIN
    -- The extension's schema must still bear the name it was installed under: renamed,
    -- another schema could take that name and stand in for the extension's objects.
    IF (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
        WHERE e.extname OPERATOR(pg_catalog.=) 'simhash') OPERATOR(pg_catalog.<>) '@extschema@' THEN
        RAISE EXCEPTION 'simhash: the schema of the extension was renamed; rename it back to @extschema@'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF min_df OPERATOR(pg_catalog.<) 1 THEN
        RAISE EXCEPTION 'simhash: min_df must be at least 1, got %', min_df
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Check the options and the type of the query's first column before running it.
    PERFORM @extschema@.simhash_features(''::pg_catalog.text, tokenizer, n);
    -- The query is followed by a newline wherever it is pasted (a -- comment at its end).
    EXECUTE pg_catalog.format(
        'SELECT pg_catalog.pg_typeof((SELECT q.body FROM (%s
) AS q (body) LIMIT 0))', query)
        INTO body_type;
    IF body_type OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog.text', 'pg_catalog.varchar',
                                                   'pg_catalog.bpchar']::pg_catalog.regtype[]) THEN
        RAISE EXCEPTION 'simhash: the first column of the query must be text, not %', body_type
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    RETURN QUERY EXECUTE pg_catalog.format(
        $q$SELECT c.feature, c.df, c.docs
           FROM (SELECT g.feature, g.df,
                        (pg_catalog.sum(g.firsts) OVER ())::pg_catalog.int8 AS docs
                 FROM (SELECT f.feature, pg_catalog.count(*) AS df,
                              pg_catalog.count(*) FILTER (WHERE f.ord OPERATOR(pg_catalog.=) 1) AS firsts
                       FROM (%s
                            ) AS q (body)
                       CROSS JOIN LATERAL @extschema@.simhash_features(q.body::pg_catalog.text, $1, $2)
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



-- == Near-duplicate search: block keys, simhash_near, index layouts ============

-- Block keys. A layout of b blocks splits the 64 bits into b contiguous ranges; block i
-- holds bits [64 i / b, 64 (i + 1) / b).
CREATE FUNCTION simhash_block(fp bigint, blocks integer, block integer) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_block_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_block(bigint, integer, integer) IS
'bits of block `block` (0-based) of a layout of `blocks` blocks (2..16) of a fingerprint, as an integer: the key of a block index';

CREATE FUNCTION simhash_block_probes(q bigint, blocks integer, block integer, radius integer)
    RETURNS integer[]
    AS 'MODULE_PATHNAME', 'simhash_block_probes_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_block_probes(bigint, integer, integer, integer) IS
'every block value within `radius` bits of block `block` of q: the keys simhash_near looks up';

-- The radius predicate. simhash_within is the plain check; simhash_near is the same check
-- whose planner support function turns it into block-index lookups when the table has a
-- layout (see src/pg/search.c).
CREATE FUNCTION simhash_within_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'simhash_within_support'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_within_support(internal) IS
'planner support of simhash_within: selectivity estimate';

CREATE FUNCTION simhash_within(fp bigint, q bigint, k integer) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_near_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SUPPORT simhash_within_support;
COMMENT ON FUNCTION simhash_within(bigint, bigint, integer) IS
'true when hamming(fp, q) <= k (0..64); never turned into index lookups (simhash_near is)';

CREATE FUNCTION simhash_near_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'simhash_near_support'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_near_support(internal) IS
'planner support of simhash_near: rewrites it into block-index lookups, selectivity estimate';

CREATE FUNCTION simhash_near(fp bigint, q bigint, k integer) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_near_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SUPPORT simhash_near_support;
COMMENT ON FUNCTION simhash_near(bigint, bigint, integer) IS
'true when hamming(fp, q) <= k (0..64); with a constant k, uses the block indexes made by simhash_create_index on fp''s column';

CREATE FUNCTION simhash_layout_blocks(max_distance integer, rows double precision)
    RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_layout_blocks'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_layout_blocks(integer, double precision) IS
'number of blocks simhash_create_index chooses for distances up to max_distance on a table of about `rows` rows';

-- The layouts made by simhash_create_index, one row per indexed column. Dumped by pg_dump
-- with the users' data. Anyone may read it; nobody but its owner may write it: the owners of
-- a table record and forget its layout through simhash_layout_record and
-- simhash_layout_forget, which check ownership and then write as the catalog's owner. (A
-- write privilege granted to PUBLIC would let any role LOCK the table and hang every DROP
-- TABLE in the cleanup event trigger.) Each row is charged to the role that owned its table
-- when it was recorded (owner, set by the trigger below); simhash_layout_record lets one
-- role have at most 1000 rows, so that no role can fill the table for everyone.
CREATE TABLE simhash_layouts (
    tbl          regclass NOT NULL,
    col          name NOT NULL,
    max_distance integer NOT NULL CHECK (max_distance BETWEEN 0 AND 16),
    blocks       integer NOT NULL CHECK (blocks BETWEEN 2 AND 16),
    created      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    owner        oid NOT NULL,
    PRIMARY KEY (tbl, col)
);
-- A role's rows, found without reading the others' (the cap, the sweep of its stale rows).
CREATE INDEX simhash_layouts_owner ON simhash_layouts (owner);
COMMENT ON TABLE simhash_layouts IS
'block-index layouts made by simhash_create_index: table, fingerprint column, largest distance served, number of blocks';
-- Dumped without the rows of temporary tables (they end with their session, and their OIDs
-- mean nothing elsewhere) or of tables that no longer exist (a temporary table's row stays
-- until the next DROP in the database, as its session ends without the sql_drop event).
SELECT pg_catalog.pg_extension_config_dump('simhash_layouts',
    'WHERE EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) tbl '
    'AND c.relpersistence OPERATOR(pg_catalog.<>) ''t'')');
REVOKE ALL ON simhash_layouts FROM PUBLIC;
GRANT SELECT ON simhash_layouts TO PUBLIC;
-- The extension's owner (the database owner after a trusted install) may insert, so that a
-- restore of its own pg_dump keeps the layouts; a row must then name a table the inserting
-- role owns. INSERT alone cannot take a lock that blocks the cleanup's DELETE.
GRANT INSERT ON simhash_layouts TO @extowner@;
CREATE FUNCTION simhash_layouts_check() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    table_owner pg_catalog.oid;
BEGIN
    SELECT c.relowner INTO table_owner FROM pg_catalog.pg_class c
    WHERE c.oid OPERATOR(pg_catalog.=) NEW.tbl
      AND pg_catalog.pg_has_role(c.relowner, 'USAGE');
    IF table_owner IS NULL THEN
        RAISE EXCEPTION 'simhash: only the owners of table % may record its layout', NEW.tbl
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- The row is charged to the table's owner, whatever the row (a restored dump) says.
    NEW.owner := table_owner;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION simhash_layouts_check() IS
'trigger of simhash_layouts: a row inserted names a table the inserting role owns (42501 otherwise), and is charged to the table''s owner';
CREATE TRIGGER simhash_layouts_check BEFORE INSERT ON simhash_layouts
    FOR EACH ROW EXECUTE FUNCTION simhash_layouts_check();

CREATE FUNCTION simhash_layout_record(tbl regclass, col name, max_distance integer, blocks integer)
    RETURNS void
    AS 'MODULE_PATHNAME', 'simhash_layout_record'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_layout_record(regclass, name, integer, integer) IS
'records (or replaces) the layout of bigint column col of table tbl in simhash_layouts; only the table''s owners may, at most 1000 layouts a role (simhash_create_index calls it)';

CREATE FUNCTION simhash_layout_forget(tbl regclass, col name) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_layout_forget'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_layout_forget(regclass, name) IS
'removes the layout of column col of table tbl from simhash_layouts, true when there was one; only the table''s owners may (simhash_drop_index calls it)';

-- Rows of dropped tables and columns go away with them.
CREATE FUNCTION simhash_layouts_cleanup() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- The extension's schema must still bear the name it was installed under: renamed,
    -- another schema could take that name and stand in for the extension's objects.
    IF (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
        WHERE e.extname OPERATOR(pg_catalog.=) 'simhash') OPERATOR(pg_catalog.<>) '@extschema@' THEN
        RETURN;
    END IF;
    -- Only the rows of the tables this command dropped (or dropped columns of) are read,
    -- through the primary key: the cost of a DROP does not grow with the rows of other
    -- tables, whoever recorded them. SKIP LOCKED: a row some transaction holds (a layout
    -- being recorded again for a column that was renamed away and added anew) is left, so
    -- no role can make every DROP in the database wait for its open transaction. Rows
    -- left behind (temporary tables end with their session without this event) are swept
    -- by the next simhash_layout_record of their owner.
    DELETE FROM @extschema@.simhash_layouts l
    WHERE l.ctid IN (SELECT x.ctid FROM @extschema@.simhash_layouts x
                     WHERE x.tbl OPERATOR(pg_catalog.=) ANY (ARRAY(
                             SELECT DISTINCT d.objid::pg_catalog.regclass
                             FROM pg_catalog.pg_event_trigger_dropped_objects() d
                             WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass))
                       AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                                       WHERE a.attrelid = x.tbl AND a.attname = x.col
                                         AND NOT a.attisdropped)
                     FOR UPDATE SKIP LOCKED);
END
$$;
COMMENT ON FUNCTION simhash_layouts_cleanup() IS
'event trigger: forgets the layouts of dropped tables and columns';
CREATE EVENT TRIGGER simhash_layouts_cleanup ON sql_drop
    EXECUTE FUNCTION simhash_layouts_cleanup();

-- The secret that keys the dedupe trigger's lock keys (src/pg/dedupe_locks.c): every role
-- can read lock keys in pg_locks, and unkeyed they would tell the fingerprint of a row
-- being written, before it is even committed. 128 bits made at install from two
-- gen_random_uuid() (the server's strong random source; 122 random bits each), hashed
-- together by md5; no role but a superuser may read them,
-- and the trigger reads them in C. Not dumped: a restored database makes its own, which
-- is all the keys need (they only have to agree among the sessions of one database).
CREATE TABLE simhash_lock_secret (k0 bigint NOT NULL, k1 bigint NOT NULL);
INSERT INTO simhash_lock_secret (k0, k1)
SELECT ('x' OPERATOR(pg_catalog.||) pg_catalog.substr(r.h, 1, 16))::pg_catalog.bit(64)::pg_catalog.int8,
       ('x' OPERATOR(pg_catalog.||) pg_catalog.substr(r.h, 17, 16))::pg_catalog.bit(64)::pg_catalog.int8
FROM (SELECT pg_catalog.md5(pg_catalog.gen_random_uuid()::pg_catalog.text OPERATOR(pg_catalog.||)
                            pg_catalog.gen_random_uuid()::pg_catalog.text) AS h) r;
REVOKE ALL ON simhash_lock_secret FROM PUBLIC;
COMMENT ON TABLE simhash_lock_secret IS
'the key of the dedupe trigger''s lock keys (SipHash-2-4), made at install; readable by superusers only';

CREATE FUNCTION simhash_search_plan(tbl regclass, col name, k integer)
    RETURNS TABLE (index regclass, blocks integer, block integer, radius integer,
                   probes bigint, candidates double precision)
    AS 'MODULE_PATHNAME', 'simhash_search_plan'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_search_plan(regclass, name, integer) IS
'how simhash_near(col, q, k) on tbl is served: each block index looked up, with its radius, probes and expected candidate rows (random fingerprints); no row: the table is read instead';

-- Checks that col is a bigint column of tbl (a table, partitioned table or materialized
-- view); returns its attribute number.
CREATE FUNCTION simhash_check_column(tbl regclass, col name) RETURNS smallint
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    kind "char";
    typ oid;
    num smallint;
BEGIN
    IF tbl IS NULL OR col IS NULL THEN
        RAISE EXCEPTION 'simhash: table and column must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT c.relkind INTO kind FROM pg_class c WHERE c.oid = tbl;
    IF kind IS NULL OR kind NOT IN ('r', 'p', 'm') THEN
        RAISE EXCEPTION 'simhash: % is not a table or materialized view', tbl
            USING ERRCODE = 'wrong_object_type';
    END IF;
    SELECT a.atttypid, a.attnum INTO typ, num FROM pg_attribute a
    WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF typ IS NULL THEN
        RAISE EXCEPTION 'simhash: column % of % does not exist', quote_ident(col), tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    IF typ <> 'bigint'::regtype THEN
        RAISE EXCEPTION 'simhash: column % of % is of type %, not bigint', quote_ident(col), tbl, typ::regtype
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    RETURN num;
END
$$;
COMMENT ON FUNCTION simhash_check_column(regclass, name) IS
'raises an error unless col is a bigint column of table tbl; returns its attribute number';

-- The block indexes of tbl.col, whatever their names: B-tree indexes without a predicate
-- whose first key is simhash_block(col, b, i) and whose only other key, if any, is col (the
-- indexes the planner uses). Other indexes that mention simhash_block are left alone.
CREATE FUNCTION simhash_block_indexes(tbl regclass, col name)
    RETURNS TABLE (index regclass, blocks integer, block integer)
    LANGUAGE sql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
    WITH c AS (
        SELECT quote_ident(col) AS q,
               regexp_replace(quote_ident(col), '([.^$*+?()\[\]{}|\\])', '\\\1', 'g') AS re),
    k AS (
        SELECT i.indexrelid, i.indnkeyatts,
               regexp_match(pg_get_indexdef(i.indexrelid, 1, true),
                            '^(?:.*\.)?simhash_block\(' || c.re || ', ([0-9]+), ([0-9]+)\)$') AS m,
               CASE WHEN i.indnkeyatts = 2 THEN pg_get_indexdef(i.indexrelid, 2, true) END AS second,
               c.q
        FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
             JOIN pg_am am ON am.oid = ic.relam, c
        WHERE i.indrelid = tbl AND am.amname = 'btree' AND i.indpred IS NULL
          AND i.indnkeyatts <= 2
          AND EXISTS (SELECT 1 FROM pg_depend d
                      WHERE d.classid = 'pg_class'::regclass AND d.objid = i.indexrelid
                        AND d.refclassid = 'pg_proc'::regclass
                        AND d.refobjid = '@extschema@.simhash_block(bigint, integer, integer)'::regprocedure))
    SELECT k.indexrelid::regclass, k.m[1]::integer, k.m[2]::integer
    FROM k
    WHERE k.m IS NOT NULL AND (k.indnkeyatts = 1 OR k.second = k.q)
    ORDER BY 2, 3, 1
$$;
COMMENT ON FUNCTION simhash_block_indexes(regclass, name) IS
'the block indexes on column col of table tbl, with the layout and block each one serves';

CREATE FUNCTION simhash_drop_index(tbl regclass, col name) RETURNS integer
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    ind regclass;
    dropped integer := 0;
BEGIN
    -- The extension's schema must still bear the name it was installed under: renamed,
    -- another schema could take that name and stand in for the extension's objects.
    IF (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
        WHERE e.extname OPERATOR(pg_catalog.=) 'simhash') OPERATOR(pg_catalog.<>) '@extschema@' THEN
        RAISE EXCEPTION 'simhash: the schema of the extension was renamed; rename it back to @extschema@'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    PERFORM @extschema@.simhash_check_column(tbl, col);
    -- First, as it checks that the caller owns the table (42501).
    PERFORM @extschema@.simhash_layout_forget(tbl, col);
    FOR ind IN SELECT DISTINCT b.index FROM @extschema@.simhash_block_indexes(tbl, col) b LOOP
        EXECUTE format('DROP INDEX %s', ind);
        dropped := dropped + 1;
    END LOOP;
    IF dropped = 0 THEN
        RAISE NOTICE 'simhash: column % of % had no block index', quote_ident(col), tbl;
    END IF;
    RETURN dropped;
END
$$;
COMMENT ON FUNCTION simhash_drop_index(regclass, name) IS
'drops the block indexes of column col of table tbl and forgets its layout; returns how many indexes were dropped';

-- The checks and the layout shared by simhash_create_index (concurrent false) and
-- simhash_create_index_statements (concurrent true), whose callers run the schema guard
-- first: col is a bigint column of tbl, max_distance and blocks are in range, and for a
-- build without blocking writes tbl is not partitioned. Returns the schema of tbl, the
-- number of blocks (blocks, or the choice explained in the body) and the name of each
-- block's index, in block order: table_column_simhash<b>_<i>, cut to fit in 63 bytes,
-- numbered if taken by a relation that stays. The block indexes of the column that the
-- caller drops before building (all of them, with their partitions' indexes; concurrent:
-- the invalid ones) do not take a name.
CREATE FUNCTION simhash_index_layout(tbl regclass, col name, max_distance integer,
                                     blocks integer, concurrent boolean,
                                     OUT nsp name, OUT nblocks integer, OUT index_names text[])
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    rel name;
    est double precision;
    b integer := blocks;
    base text;
    idxname text;
    suffix integer;
BEGIN
    PERFORM @extschema@.simhash_check_column(tbl, col);
    -- PostgreSQL builds no index CONCURRENTLY on a partitioned table: every statement would
    -- fail but the last, which would record a layout without its indexes.
    IF concurrent AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = tbl AND c.relkind = 'p') THEN
        RAISE EXCEPTION 'simhash: % is a partitioned table, on which no index is built concurrently', tbl
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'simhash_create_index builds them on a partitioned table (blocking writes while it runs).';
    END IF;
    IF max_distance IS NULL OR max_distance < 0 OR max_distance > 16 THEN
        RAISE EXCEPTION 'simhash: max_distance must be between 0 and 16, got %', coalesce(max_distance::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF b IS NOT NULL AND (b < 2 OR b > 16) THEN
        RAISE EXCEPTION 'simhash: blocks must be between 2 and 16, got %', b
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT n.nspname, c.relname, c.reltuples INTO nsp, rel, est
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl;
    -- A table deduplicated on insert by simhash_dedupe gets max_distance + 1 blocks (2 to
    -- 16): each row written then takes one index lookup per block (at k = 16, 20 lookups).
    -- Otherwise the layout is sized for at least a million rows: tables are usually indexed
    -- before they fill up.
    IF b IS NULL AND EXISTS (SELECT 1 FROM pg_trigger t
                             WHERE t.tgrelid = tbl
                               AND t.tgfoid = '@extschema@.simhash_dedupe()'::regprocedure) THEN
        b := least(16, greatest(2, max_distance + 1));
    END IF;
    nblocks := coalesce(b, @extschema@.simhash_layout_blocks(max_distance, greatest(est, 1e6::float8)));

    base := rel || '_' || col;
    WHILE octet_length(base) > 45 LOOP
        base := left(base, -1);
    END LOOP;
    index_names := '{}';
    FOR i IN 0 .. nblocks - 1 LOOP
        idxname := format('%s_simhash%s_%s', base, nblocks, i);
        suffix := 0;
        WHILE EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                      WHERE n.nspname = nsp AND c.relname = idxname
                        AND c.oid NOT IN (SELECT x.index FROM @extschema@.simhash_block_indexes(tbl, col) x
                                          JOIN pg_index pi ON pi.indexrelid = x.index
                                          WHERE NOT (concurrent AND pi.indisvalid)
                                          UNION ALL
                                          -- DROP INDEX of a partitioned index drops its
                                          -- partitions' indexes with it
                                          SELECT t.relid FROM @extschema@.simhash_block_indexes(tbl, col) x,
                                                 pg_partition_tree(x.index) t
                                          WHERE NOT concurrent)) LOOP
            suffix := suffix + 1;
            idxname := format('%s_simhash%s_%s_%s', base, nblocks, i, suffix);
        END LOOP;
        index_names := index_names || idxname;
    END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_index_layout(regclass, name, integer, integer, boolean) IS
'checks the arguments of simhash_create_index (concurrent: of simhash_create_index_statements) and returns the schema of tbl, the number of blocks and the name of each block''s index';

-- On a Citus table, CREATE INDEX and ANALYZE go to every shard; on a reference table, whose
-- placement on the coordinator Citus would index locally, the ANALYZE that follows is then
-- refused ("a local execution has accessed a placement"): so no local execution here.
-- (Without Citus, the setting is an unused placeholder.)
CREATE FUNCTION simhash_create_index(tbl regclass, col name, max_distance integer DEFAULT 3,
                                     blocks integer DEFAULT NULL)
    RETURNS SETOF regclass
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    SET citus.enable_local_execution = off
    AS $$
DECLARE
    nsp name;
    b integer;
    names text[];
BEGIN
    -- The extension's schema must still bear the name it was installed under: renamed,
    -- another schema could take that name and stand in for the extension's objects.
    IF (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
        WHERE e.extname OPERATOR(pg_catalog.=) 'simhash') OPERATOR(pg_catalog.<>) '@extschema@' THEN
        RAISE EXCEPTION 'simhash: the schema of the extension was renamed; rename it back to @extschema@'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT l.nsp, l.nblocks, l.index_names INTO nsp, b, names
    FROM @extschema@.simhash_index_layout(tbl, col, max_distance, blocks, false) l;

    -- First, as it checks that the caller owns the table (42501).
    PERFORM @extschema@.simhash_layout_forget(tbl, col);
    PERFORM @extschema@.simhash_drop_index(tbl, col)
    WHERE EXISTS (SELECT 1 FROM @extschema@.simhash_block_indexes(tbl, col));

    FOR i IN 0 .. b - 1 LOOP
        -- The fingerprint as second key column: the dedupe trigger checks candidates in
        -- the index; identical fingerprints still share one index entry.
        EXECUTE format('CREATE INDEX %I ON %s USING btree (@extschema@.simhash_block(%I, %s, %s), %I)',
                       names[i + 1], tbl, col, b, i, col);
        RETURN NEXT format('%I.%I', nsp, names[i + 1])::regclass;
    END LOOP;
    PERFORM @extschema@.simhash_layout_record(tbl, col, max_distance, b);
    -- Statistics of the new index expressions, without which the planner guesses the
    -- number of rows sharing a block value and may prefer reading the whole table.
    EXECUTE format('ANALYZE %s', tbl);
END
$$;
COMMENT ON FUNCTION simhash_create_index(regclass, name, integer, integer) IS
'makes the B-tree block indexes that let simhash_near(col, q, k) find rows within k <= max_distance by index lookups, replacing an earlier layout; returns the indexes made';

-- The table of a row type (rel: NULL::tablename) for the functions that return lim rows of
-- a table, after checking rel and lim.
CREATE FUNCTION simhash_check_rows(rel regtype, lim integer) RETURNS regclass
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    target regclass;
BEGIN
    SELECT t.typrelid::regclass INTO target FROM pg_type t
    WHERE t.oid = rel AND t.typrelid <> 0;
    IF target IS NULL THEN
        RAISE EXCEPTION 'simhash: the first argument must be a row of a table, such as NULL::docs, not %', rel
            USING ERRCODE = 'wrong_object_type';
    END IF;
    -- The searches order ties by ctid: a view, a foreign table or a bare composite type has
    -- none to give.
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid = target) NOT IN ('r', 'p', 'm') THEN
        RAISE EXCEPTION 'simhash: % is not a table, partitioned table or materialized view', target
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF lim IS NULL OR lim < 0 THEN
        RAISE EXCEPTION 'simhash: lim must be a non-negative number of rows'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN target;
END
$$;
COMMENT ON FUNCTION simhash_check_rows(regtype, integer) IS
'helper of simhash_nearest and simhash_similar_nearest: the table, partitioned table or materialized view whose row type is rel (42809 wrong_object_type otherwise, views included), after checking that lim is a non-negative number (22023)';

-- The lim rows closest to q, nearest first. Rows within distance k are found through the
-- block indexes for growing k while the planner serves k by index; beyond, by one
-- sequential scan (unless max_distance caps the search).
CREATE FUNCTION simhash_nearest(rel anyelement, col name, q bigint, lim integer DEFAULT 10,
                                max_distance integer DEFAULT NULL)
    RETURNS TABLE (doc anyelement, distance integer)
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    target regclass;
    served integer;
    k integer := 0;
    found bigint;
BEGIN
    -- The extension's schema must still bear the name it was installed under: renamed,
    -- another schema could take that name and stand in for the extension's objects.
    IF (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
        WHERE e.extname OPERATOR(pg_catalog.=) 'simhash') OPERATOR(pg_catalog.<>) '@extschema@' THEN
        RAISE EXCEPTION 'simhash: the schema of the extension was renamed; rename it back to @extschema@'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    target := @extschema@.simhash_check_rows(pg_catalog.pg_typeof(rel), lim);
    PERFORM @extschema@.simhash_check_column(target, col);
    IF max_distance IS NOT NULL AND (max_distance < 0 OR max_distance > 64) THEN
        RAISE EXCEPTION 'simhash: max_distance must be between 0 and 64, got %', max_distance
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF q IS NULL OR lim = 0 THEN
        RETURN;
    END IF;
    -- The largest distance the block indexes serve (up to max_distance), -1 if none.
    served := -1;
    FOR k IN 0 .. coalesce(simhash_nearest.max_distance, 64) LOOP
        EXIT WHEN NOT EXISTS (SELECT 1 FROM @extschema@.simhash_search_plan(target, col, k));
        served := k;
    END LOOP;
    k := 0;

    -- Growing radii through the indexes: done as soon as lim rows lie within k, because
    -- every row farther away is farther than all of them, or when k reaches max_distance.
    WHILE k <= served LOOP
        EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %s t WHERE @extschema@.simhash_near(t.%I, $1, %s) LIMIT $2) s',
                       target, col, k)
            INTO found USING q, lim;
        IF found >= lim OR k = simhash_nearest.max_distance THEN
            RETURN QUERY EXECUTE format(
                'SELECT t, @extschema@.hamming(t.%I, $1) FROM %s t WHERE @extschema@.simhash_near(t.%I, $1, %s) ORDER BY 2, t.ctid LIMIT $2',
                col, target, col, k) USING q, lim;
            RETURN;
        END IF;
        EXIT WHEN k = served;
        k := least(served, CASE WHEN k < 4 THEN k + 1 ELSE k + 2 END);
    END LOOP;

    -- Not enough rows within what the indexes serve: read the table once.
    RETURN QUERY EXECUTE format(
        'SELECT t, @extschema@.hamming(t.%I, $1) FROM %s t WHERE t.%I IS NOT NULL AND @extschema@.hamming(t.%I, $1) <= $3 ORDER BY 2, t.ctid LIMIT $2',
        col, target, col, col) USING q, lim, coalesce(simhash_nearest.max_distance, 64);
END
$$;
COMMENT ON FUNCTION simhash_nearest(anyelement, name, bigint, integer, integer) IS
'the lim rows of the table of rel (pass NULL::tablename) whose column col is closest to q, nearest first, with their distance; uses the block indexes';

-- Per block of the layout of tbl.col, the largest buckets (rows sharing one block value)
-- and how they compare with the mean bucket.
CREATE FUNCTION simhash_skew(tbl regclass, col name, top integer DEFAULT 5)
    RETURNS TABLE (block integer, value integer, rows bigint, fingerprints bigint,
                   mean_rows double precision, ratio double precision)
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    b integer;
BEGIN
    -- The extension's schema must still bear the name it was installed under: renamed,
    -- another schema could take that name and stand in for the extension's objects.
    IF (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
        WHERE e.extname OPERATOR(pg_catalog.=) 'simhash') OPERATOR(pg_catalog.<>) '@extschema@' THEN
        RAISE EXCEPTION 'simhash: the schema of the extension was renamed; rename it back to @extschema@'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    PERFORM @extschema@.simhash_check_column(tbl, col);
    IF top IS NULL OR top < 1 THEN
        RAISE EXCEPTION 'simhash: top must be at least 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT l.blocks INTO b FROM @extschema@.simhash_layouts l
    WHERE l.tbl = simhash_skew.tbl AND l.col = simhash_skew.col;
    IF b IS NULL THEN
        RAISE EXCEPTION 'simhash: column % of % has no layout', quote_ident(col), tbl
            USING ERRCODE = 'undefined_object',
                  HINT = 'Run simhash_create_index first.';
    END IF;
    FOR i IN 0 .. b - 1 LOOP
        RETURN QUERY EXECUTE format(
            'WITH buckets AS (SELECT @extschema@.simhash_block(t.%I, %s, %s) AS v, count(*) AS n, count(DISTINCT t.%I) AS f
                              FROM %s t WHERE t.%I IS NOT NULL GROUP BY 1)
             SELECT %s, v, n, f, avg(n::float8) OVER (), n / avg(n::float8) OVER ()
             FROM buckets ORDER BY n DESC, v LIMIT %s',
            col, b, i, col, tbl, col, i, top);
    END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_skew(regclass, name, integer) IS
'per block of the layout of tbl.col, the `top` largest buckets: rows and distinct fingerprints sharing one block value, against the mean bucket';



-- == Dedupe on insert: the simhash_dedupe() trigger ============================

-- CREATE TRIGGER ... BEFORE INSERT OR UPDATE OF body ON docs FOR EACH ROW
--     EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject' | 'skip' | 'link' [, 'link_column']);
-- See src/pg/dedupe.c and the README. Runs with the caller's rights.
CREATE FUNCTION simhash_dedupe() RETURNS trigger
    AS 'MODULE_PATHNAME', 'simhash_dedupe'
    LANGUAGE C;
COMMENT ON FUNCTION simhash_dedupe() IS
'BEFORE INSERT OR UPDATE row trigger keeping near duplicates out: arguments text column, key column (a bigint fingerprint with a maximum distance k=0..16; a bigint[] of simhash_lsh keys with a similarity threshold similarity=0.7..1), the limit (''k=3'' or ''similarity=0.8''; the older ''3'' and ''0.8'' still mean the same), policy reject | skip | link [, link column] [, ''sets=column'': with a threshold, a bytea column where the trigger stores each row''s shingle set and verifies candidates against it]';

-- Checks the arguments of every simhash_dedupe trigger when it is created (CREATE TRIGGER),
-- rather than at the first row written (src/pg/dedupe_check.c). Fired for every CREATE
-- TRIGGER of the database, with the rights of the role creating it; it reads catalogs only
-- (by OID) and ignores triggers of other functions. EXECUTE is revoked: PostgreSQL does
-- not check it for event triggers, and nobody else needs to call it.
CREATE FUNCTION simhash_dedupe_check_trigger() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'simhash_dedupe_check_trigger'
    LANGUAGE C;
COMMENT ON FUNCTION simhash_dedupe_check_trigger() IS
'event trigger (ddl_command_end, CREATE TRIGGER): checks the arguments of each simhash_dedupe trigger created, with the errors its first row would raise';
REVOKE ALL ON FUNCTION simhash_dedupe_check_trigger() FROM PUBLIC;
CREATE EVENT TRIGGER simhash_dedupe_check_trigger ON ddl_command_end
    WHEN TAG IN ('CREATE TRIGGER')
    EXECUTE FUNCTION simhash_dedupe_check_trigger();

-- A bulk load into a table with a simhash_dedupe trigger that cannot deadlock with another:
-- reads the rows of query once, takes all their lock keys at once in ascending order (or
-- the table lock), then inserts them, the trigger checking each (src/pg/dedupe_bulk.c).
-- Runs query with the caller's rights and search_path, as simhash_pairs does: VOLATILE,
-- PARALLEL UNSAFE (it writes).
CREATE FUNCTION simhash_dedupe_insert(target regclass, query text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_dedupe_insert'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_dedupe_insert(regclass, text) IS
'inserts the rows of query (columns named like the columns of target they fill, the text column among them) into target, which has a simhash_dedupe trigger, taking every lock key of the rows at once in one order before writing any (or the table lock for a large load), so that concurrent bulk loads cannot deadlock; each row is checked by the trigger as for INSERT (reject | skip | link); returns the rows inserted';


-- == All pairs and clusters of a table =========================================

-- Both run a query returning (id, fp) once, through SPI, so they are VOLATILE (the query
-- may be anything) and PARALLEL UNSAFE. Memory: work_mem (see docs/pairs.md).

CREATE FUNCTION simhash_pairs(query text, max_distance integer)
    RETURNS TABLE (id1 bigint, id2 bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_pairs'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION simhash_pairs(text, integer) IS
'every pair of rows of query (id bigint/integer/smallint, fp bigint) whose fingerprints differ in at most max_distance bits (0..16), once each with id1 < id2, identical fingerprints included; rows with a NULL fp are skipped, NULL or duplicate ids are errors; holds about 32 bytes a row within work_mem, spills to temporary files beyond';

CREATE FUNCTION simhash_clusters(query text, max_distance integer)
    RETURNS TABLE (id bigint, cluster_id bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_clusters'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION simhash_clusters(text, integer) IS
'connected components of the graph of near-duplicate pairs (as simhash_pairs) of query''s rows: each row that has a near duplicate, with cluster_id = the smallest id of its component and distance = Hamming distance to that row (may exceed max_distance along a chain); rows not returned have no near duplicate; also keeps 4 bytes a row beyond work_mem';



-- == All pairs of a table, by parts: on Citus, on the workers ====================
-- (src/pg/pairs_parts.c; docs/citus.md "All pairs on the workers")

CREATE FUNCTION simhash_pair_part(fp bigint, max_distance integer, block integer, parts integer)
    RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_pair_part'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_pair_part(bigint, integer, integer, integer) IS
'the part (0..parts-1) that block `block` of fp goes to when all pairs within max_distance are found by parts: fingerprints that agree on a block share its part';

CREATE FUNCTION simhash_part_pairs_step(internal, bigint, bigint, integer, integer, integer)
    RETURNS internal
    AS 'MODULE_PATHNAME', 'simhash_part_pairs_step'
    LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
CREATE FUNCTION simhash_part_pairs_final(internal) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'simhash_part_pairs_final'
    LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_part_pairs_step(internal, bigint, bigint, integer, integer, integer) IS
'transition function of simhash_part_pairs: keeps a row of the part';
COMMENT ON FUNCTION simhash_part_pairs_final(internal) IS
'final function of simhash_part_pairs: the pairs of the part''s rows';
-- (FINALFUNC_MODIFY = READ_WRITE: the final function is called once, never as a window's)
CREATE AGGREGATE simhash_part_pairs(id bigint, fp bigint, max_distance integer, part integer,
                                    parts integer) (
    SFUNC = simhash_part_pairs_step, STYPE = internal, FINALFUNC = simhash_part_pairs_final,
    FINALFUNC_MODIFY = READ_WRITE);
COMMENT ON AGGREGATE simhash_part_pairs(bigint, bigint, integer, integer, integer) IS
'the pairs within max_distance among the rows of one part (rows sent there by simhash_pair_part) whose first shared block is that part''s, as a flat bigint[] of (id1, id2, distance, fp1, fp2) for each, id1 < id2; NULL for none';
CREATE FUNCTION simhash_part_forest_final(internal) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'simhash_part_forest_final'
    LANGUAGE C CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_part_forest_final(internal) IS
'final function of simhash_part_forest: a spanning forest of the pairs of the part''s rows';
CREATE AGGREGATE simhash_part_forest(id bigint, fp bigint, max_distance integer, part integer,
                                     parts integer) (
    SFUNC = simhash_part_pairs_step, STYPE = internal, FINALFUNC = simhash_part_forest_final,
    FINALFUNC_MODIFY = READ_WRITE);
COMMENT ON AGGREGATE simhash_part_forest(bigint, bigint, integer, integer, integer) IS
'as simhash_part_pairs, but only the pairs that join two components of those kept before: a spanning forest of the part''s pairs, with the same connected components (what the clusters need, in fewer rows)';

-- True when Citus distributes tbl (hash, range or append); false without Citus.
CREATE FUNCTION simhash_citus_distributed(tbl regclass) RETURNS boolean
    LANGUAGE plpgsql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    method "char";
    coordinator boolean;
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN false;
    END IF;
    EXECUTE 'SELECT partmethod FROM pg_catalog.pg_dist_partition WHERE logicalrelid OPERATOR(pg_catalog.=) $1'
        INTO method USING tbl;
    IF method IS NULL OR method OPERATOR(pg_catalog.=) 'n' THEN
        RETURN false;
    END IF;
    -- a worker with the metadata sees the table as distributed too; only the coordinator
    -- makes the intermediate tables (elsewhere the query form pulls the rows)
    IF to_regproc('pg_catalog.citus_is_coordinator') IS NOT NULL THEN
        EXECUTE 'SELECT pg_catalog.citus_is_coordinator()' INTO coordinator;
        RETURN coordinator;
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION simhash_citus_distributed(regclass) IS
'true when Citus distributes tbl by hash, range or append (false without Citus): where simhash_pairs(tbl, ...) works on the workers';

-- Where a table form runs, and its columns: id an integer type, the other bigint (or a text
-- type, is_text) (42703, 42804), checked in the catalog. True (the workers) when
-- on_workers_ok and Citus distributes tbl; then the ids are checked too, unique (a valid
-- unique index on id alone, or a scan: 21000) and not NULL (22004). False: the query form
-- runs, which checks the ids itself as it reads them, so no scan is made here.
CREATE FUNCTION simhash_table_form_on_workers(tbl regclass, id_column name, fp_column name,
                                              is_text boolean, on_workers_ok boolean)
    RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    id_type regtype;
    fp_type regtype;
    dup bigint;
    has_null boolean;
BEGIN
    SELECT a.atttypid INTO id_type FROM pg_attribute a
    WHERE a.attrelid OPERATOR(pg_catalog.=) tbl AND a.attname OPERATOR(pg_catalog.=) id_column
      AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped;
    SELECT a.atttypid INTO fp_type FROM pg_attribute a
    WHERE a.attrelid OPERATOR(pg_catalog.=) tbl AND a.attname OPERATOR(pg_catalog.=) fp_column
      AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped;
    IF id_type IS NULL OR fp_type IS NULL THEN
        RAISE EXCEPTION 'simhash: column "%" of table % does not exist',
            CASE WHEN id_type IS NULL THEN id_column ELSE fp_column END, tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    IF id_type NOT IN ('bigint'::regtype, 'integer'::regtype, 'smallint'::regtype)
       OR (NOT is_text AND fp_type OPERATOR(pg_catalog.<>) 'bigint'::regtype)
       OR (is_text AND fp_type NOT IN ('text'::regtype, 'character varying'::regtype, 'character'::regtype)) THEN
        RAISE EXCEPTION 'simhash: the id column must be bigint, integer or smallint and the % column %, got % and %',
            CASE WHEN is_text THEN 'text' ELSE 'fingerprint' END,
            CASE WHEN is_text THEN 'text, varchar or char' ELSE 'bigint' END, id_type, fp_type
            USING ERRCODE = 'datatype_mismatch';
    END IF;
    IF NOT on_workers_ok OR NOT @extschema@.simhash_citus_distributed(tbl) THEN
        RETURN false;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_index i
                   WHERE i.indrelid OPERATOR(pg_catalog.=) tbl AND i.indisunique AND i.indisvalid AND i.indimmediate
                     AND i.indnkeyatts OPERATOR(pg_catalog.=) 1
                     AND i.indpred IS NULL AND i.indexprs IS NULL
                     AND i.indkey[0] OPERATOR(pg_catalog.=) (SELECT a.attnum FROM pg_attribute a
                         WHERE a.attrelid OPERATOR(pg_catalog.=) tbl AND a.attname OPERATOR(pg_catalog.=) id_column)) THEN
        EXECUTE format('SELECT %I FROM %s WHERE %I IS NOT NULL GROUP BY 1 HAVING count(*) OPERATOR(pg_catalog.>) 1 ORDER BY 1 LIMIT 1',
                       id_column, tbl, id_column) INTO dup;
        IF dup IS NOT NULL THEN
            RAISE EXCEPTION 'simhash: table % has id % more than once', tbl, dup
                USING ERRCODE = 'cardinality_violation',
                      HINT = 'Ids name the rows in the result, so they must be unique.';
        END IF;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE %I IS NULL AND %I IS NOT NULL)', tbl, id_column, fp_column)
        INTO has_null;
    IF has_null THEN
        RAISE EXCEPTION 'simhash: table % has a row with a NULL id', tbl
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION simhash_table_form_on_workers(regclass, name, name, boolean, boolean) IS
'where the table forms of simhash_pairs, simhash_clusters, simhash_similar_pairs and simhash_similar_clusters run: true on the Citus workers (tbl distributed, on_workers_ok, ids checked unique and not NULL), false where the query form runs; the column types checked either way';

-- The first steps of the table forms on a table Citus distributes: an intermediate table,
-- distributed by part, in tbl's schema (CREATE there is needed), filled with each row once
-- for each of its blocks (Citus's repartitioning INSERT ... SELECT, between the workers).
-- Returns its name (dropped by the caller) and the query of the pairs, found on the workers
-- (GROUP BY part, pushed down): (id1, id2, distance, fp1, fp2).
CREATE FUNCTION simhash_pair_parts(tbl regclass, id_column name, fp_column name, max_distance integer,
                                   forest boolean, OUT scratch text, OUT pairs_query text)
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    parts integer := 4 * coalesce(nullif(current_setting('citus.shard_count', true), '')::integer, 32);
BEGIN
    scratch := (SELECT quote_ident(n.nspname) FROM pg_class c JOIN pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                WHERE c.oid OPERATOR(pg_catalog.=) tbl) || '.' ||
               quote_ident(format('simhash_pairs_%s_%s', pg_backend_pid(),
                                  substr(md5(random()::text || clock_timestamp()::text), 1, 12)));
    EXECUTE format('CREATE UNLOGGED TABLE %s (part integer, id bigint, fp bigint)', scratch);
    EXECUTE format('SELECT create_distributed_table(%L, %L, colocate_with => %L)', scratch, 'part', 'none');
    EXECUTE format('INSERT INTO %s SELECT @extschema@.simhash_pair_part(t.%I, %s, b, %s), t.%I, t.%I
                    FROM %s t, pg_catalog.generate_series(0, %s) b WHERE t.%I IS NOT NULL',
                   scratch, fp_column, max_distance, parts, id_column, fp_column,
                   tbl, greatest(1, max_distance), fp_column);
    pairs_query := format(
        'SELECT g.p[i] AS id1, g.p[i OPERATOR(pg_catalog.+) 1] AS id2, g.p[i OPERATOR(pg_catalog.+) 2]::integer AS distance,
                g.p[i OPERATOR(pg_catalog.+) 3] AS fp1, g.p[i OPERATOR(pg_catalog.+) 4] AS fp2
         FROM (SELECT @extschema@.%s(id, fp, %s, part, %s) AS p FROM %s GROUP BY part) g,
              pg_catalog.generate_series(1, pg_catalog.cardinality(g.p), 5) i',
        CASE WHEN forest THEN 'simhash_part_forest' ELSE 'simhash_part_pairs' END, max_distance, parts, scratch);
END
$$;
COMMENT ON FUNCTION simhash_pair_parts(regclass, name, name, integer, boolean) IS
'the intermediate table of simhash_pairs(tbl, ...) and simhash_clusters(tbl, ...) on a Citus-distributed table, filled, and the query of its pairs by part (forest: only a spanning forest of each part''s pairs, for the clusters)';

-- All pairs of a table within max_distance. A table Citus distributes: its rows go, once
-- for each block, to the part of an intermediate table distributed by part
-- (simhash_pair_parts), and each worker finds the pairs of its parts; only pairs reach the
-- coordinator. Any other table: simhash_pairs(query), the same answer.
CREATE FUNCTION simhash_pairs(tbl regclass, id_column name, fp_column name, max_distance integer)
    RETURNS TABLE (id1 bigint, id2 bigint, distance integer)
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    job record;
BEGIN
    IF NOT @extschema@.simhash_table_form_on_workers(tbl, id_column, fp_column, false,
                                                     max_distance BETWEEN 0 AND 15) THEN
        RETURN QUERY SELECT * FROM @extschema@.simhash_pairs(
            format('SELECT %I, %I FROM %s', id_column, fp_column, tbl), max_distance);
        RETURN;
    END IF;
    job := @extschema@.simhash_pair_parts(tbl, id_column, fp_column, max_distance, false);
    RETURN QUERY EXECUTE format('SELECT q.id1, q.id2, q.distance FROM (%s) q', job.pairs_query);
    EXECUTE format('DROP TABLE %s', job.scratch);
END
$$;
COMMENT ON FUNCTION simhash_pairs(regclass, name, name, integer) IS
'every pair of rows of tbl whose fingerprints (fp_column, bigint) differ in at most max_distance bits, once each with id1 < id2 (id_column: unique bigint, integer or smallint), as simhash_pairs(''SELECT id, fp FROM tbl'', max_distance); on a table Citus distributes (max_distance 0..15) the pairs are found on the workers, partitioned by block as in Manku et al.''s batch mode';

CREATE FUNCTION simhash_clusters_of_pairs(query text)
    RETURNS TABLE (id bigint, cluster_id bigint, distance integer)
    AS 'MODULE_PATHNAME', 'simhash_clusters_of_pairs'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_clusters_of_pairs(text) IS
'connected components of the pairs query returns (id1, id2, fp1, fp2, all bigint), as simhash_clusters gives them: each row of a pair, cluster_id = the smallest id of its component, distance = Hamming distance to that row';

-- Clusters of a table: as simhash_clusters(query); on a table Citus distributes, joined on
-- the coordinator from a spanning forest of each part's pairs, found on the workers.
CREATE FUNCTION simhash_clusters(tbl regclass, id_column name, fp_column name, max_distance integer)
    RETURNS TABLE (id bigint, cluster_id bigint, distance integer)
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    job record;
BEGIN
    IF NOT @extschema@.simhash_table_form_on_workers(tbl, id_column, fp_column, false,
                                                     max_distance BETWEEN 0 AND 15) THEN
        RETURN QUERY SELECT * FROM @extschema@.simhash_clusters(
            format('SELECT %I, %I FROM %s', id_column, fp_column, tbl), max_distance);
        RETURN;
    END IF;
    job := @extschema@.simhash_pair_parts(tbl, id_column, fp_column, max_distance, true);
    RETURN QUERY SELECT * FROM @extschema@.simhash_clusters_of_pairs(
        format('SELECT q.id1, q.id2, q.fp1, q.fp2 FROM (%s) q', job.pairs_query));
    EXECUTE format('DROP TABLE %s', job.scratch);
END
$$;
COMMENT ON FUNCTION simhash_clusters(regclass, name, name, integer) IS
'connected components of the near-duplicate pairs of tbl, as simhash_clusters(''SELECT id, fp FROM tbl'', max_distance); on a table Citus distributes (max_distance 0..15) the pairs are found on the workers and the clusters joined from them on the coordinator';

-- == Verified near duplicates: shingle similarity, similar pairs and clusters ============

-- The resemblance of two texts: Jaccard similarity (or containment) of their sets of
-- shingles of 5 normalized characters (the characters of the 'char' tokenizer: case-folded,
-- Unicode-normalized, white space and punctuation left out). See src/core/similarity.hpp.
CREATE FUNCTION simhash_jaccard(a text, b text) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_jaccard_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_jaccard(text, text) IS
'Jaccard similarity of the sets of 5-character shingles of two normalized texts, |A intersect B| / |A union B| (0..1); NULL when neither text has a character';

CREATE FUNCTION simhash_containment(a text, b text) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_containment_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_containment(text, text) IS
'share of the 5-character shingles of normalized text a that occur in b, |A intersect B| / |A| (0..1: how much of a is inside b); NULL when a has no character';

CREATE FUNCTION simhash_shingles(body text) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'simhash_shingles_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_shingles(text) IS
'the shingle set of a text: the distinct 64-bit hashes of its 5-character shingles, ascending as unsigned values (simhash_features(body, ''char'', 5)); store it to verify without reading texts';

CREATE FUNCTION simhash_jaccard(a bigint[], b bigint[]) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_jaccard_sets'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_jaccard(bigint[], bigint[]) IS
'Jaccard similarity of two shingle sets made by simhash_shingles; NULL when both are empty';

CREATE FUNCTION simhash_containment(a bigint[], b bigint[]) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_containment_sets'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_containment(bigint[], bigint[]) IS
'share of shingle set a (from simhash_shingles) found in b; NULL when a is empty';

-- Candidate keys: MinHash locality-sensitive hashing of the shingle set
-- (src/core/minhash.hpp). Two texts of similarity t share a key with probability about
-- 1 - (1 - t^5)^20 (0.9996 at 0.8; measured on natural near duplicates: about 0.99 from 0.7, 0.9898 in the weakest collection).
-- Stored in a bigint[] column with a GIN index, the keys find the texts that may reach a
-- threshold from 0.7 with one index lookup per key:
--   lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED; CREATE INDEX ... USING gin (lsh)
--   ... WHERE lsh && simhash_lsh(q) AND simhash_jaccard(body, q) >= 0.8
CREATE FUNCTION simhash_lsh(body text) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'simhash_lsh_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_lsh(text) IS
'the 20 MinHash LSH keys of the 5-character shingle set of a normalized text (empty for a text without characters): texts with simhash_jaccard >= 0.7 share at least one key with probability about 0.99 (0.9898 in the weakest collection measured); index a column of them with GIN and search with &&';

CREATE FUNCTION simhash_shingle_digest(body text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'simhash_shingle_digest_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_shingle_digest(text) IS
'a 64-bit digest of the 5-character shingle set of a normalized text: equal for texts of similarity 1 (different sets collide with probability about 2^-64); NULL for a text without characters';

CREATE FUNCTION simhash_shingle_summary(body text, OUT digest bigint, OUT keys bigint[])
    AS 'MODULE_PATHNAME', 'simhash_shingle_summary'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_shingle_summary(text) IS
'simhash_shingle_digest(body) and simhash_lsh(body) from one shingling (both NULL for a text without characters); what simhash_similar_pairs groups and joins on';

CREATE FUNCTION simhash_lsh(shingles bigint[]) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'simhash_lsh_set'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_lsh(bigint[]) IS
'the MinHash LSH keys of a shingle set made by simhash_shingles: simhash_lsh(simhash_shingles(body)) = simhash_lsh(body)';

-- The candidates of the verified functions for a similarity threshold (the one calibration
-- table, src/pg/similarity.c, measured with bench/eval_natural.cpp; see docs/verified.md): from
-- 0.7 the pairs sharing a simhash_lsh key (candidates = 'lsh'); below, the pairs within a
-- Hamming radius of one of the fingerprints simhash(body, tokenizer, n, 'binary')
-- (candidates = 'simhash').
CREATE FUNCTION simhash_similar_recipes(min_similarity double precision)
    RETURNS TABLE (candidates text, tokenizer text, n integer, max_distance integer)
    AS 'MODULE_PATHNAME', 'simhash_similar_recipes'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 2;
COMMENT ON FUNCTION simhash_similar_recipes(double precision) IS
'how simhash_similar_pairs finds candidate pairs at or above min_similarity (0 < min_similarity <= 1): ''lsh'' (pairs sharing a simhash_lsh key of the char 5-shingles), or ''simhash'' (pairs within max_distance of simhash(body, tokenizer, n, ''binary''))';

-- All pairs of a query's (id, body) rows whose shingle similarity is at least
-- min_similarity, and their connected components: the C++ engine of
-- src/core/similar_pairs.hpp (src/pg/similar_pairs.c). The query runs once; each text is
-- shingled once (on 1 + max_parallel_workers_per_gather threads), identical shingle sets
-- are grouped, candidates come from MinHash LSH band runs (from 0.7) or the fingerprint
-- recipes of simhash_similar_recipes (above), and each is verified exactly. In memory up
-- to work_mem; beyond, the shingle sets go on in temporary files (BufFile), read back a
-- batch of candidates at a time. No temporary table: works in read-only transactions and
-- on a hot standby.
CREATE FUNCTION simhash_similar_pairs(query text, min_similarity double precision)
    RETURNS TABLE (id1 bigint, id2 bigint, similarity double precision)
    AS 'MODULE_PATHNAME', 'simhash_similar_pairs'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_similar_pairs(text, double precision) IS
'every pair of rows of query (id bigint/integer/smallint, body text) whose texts have a shingle similarity (simhash_jaccard) of at least min_similarity (0 < min_similarity <= 1), once each with id1 < id2, with that similarity, in no particular order; rows with a NULL body are skipped, NULL or duplicate ids are errors';

CREATE FUNCTION simhash_similar_clusters(query text, min_similarity double precision)
    RETURNS TABLE (id bigint, cluster_id bigint, similarity double precision)
    AS 'MODULE_PATHNAME', 'simhash_similar_clusters'
    LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION simhash_similar_clusters(text, double precision) IS
'connected components of the pairs of simhash_similar_pairs(query, min_similarity): each row that has a similar row, with cluster_id = the smallest id of its component and similarity = its highest similarity to another row of it, ordered by cluster_id, id; rows not returned have no similar row';

-- True when the verified functions take their candidates from simhash_lsh keys at
-- min_similarity (simhash_similar_recipes: from 0.7), where the table forms can run on the
-- workers.
CREATE FUNCTION simhash_lsh_candidates(min_similarity double precision) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF NOT min_similarity BETWEEN 0.7 AND 1 THEN
        RETURN false;
    END IF;
    RETURN (SELECT r.candidates OPERATOR(pg_catalog.=) 'lsh'
            FROM @extschema@.simhash_similar_recipes(min_similarity) r LIMIT 1);
END
$$;
COMMENT ON FUNCTION simhash_lsh_candidates(double precision) IS
'true when the verified functions'' candidates at min_similarity are the pairs sharing a simhash_lsh key (simhash_similar_recipes): where their table forms run on the Citus workers';

CREATE FUNCTION simhash_lsh_first_shared(a bigint[], b bigint[]) RETURNS integer
    AS 'MODULE_PATHNAME', 'simhash_lsh_first_shared'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_lsh_first_shared(bigint[], bigint[]) IS
'the first band (1-based) in which two simhash_lsh key arrays are equal; NULL when none is';

-- The verified table forms on a table Citus distributes (t >= 0.7, where candidates are the
-- pairs sharing a simhash_lsh key): four intermediate tables in tbl's schema, each filled
-- by Citus (repartitioning INSERT ... SELECT, colocated joins pushed down), on the workers:
--   keys   (part, band, key, id, keys)  each row once a band, by the part of (band, key);
--   cands  (id1, id2)                   the pairs sharing a (band, key), each once: in the
--                                       part of the first band they share;
--   texts  (id, body, set)              each row's text and shingle set, colocated with
--                                       cands;
--   sides  (id2, id1, body1, n1)        each candidate with id1's text and set size,
--                                       colocated by id2.
-- Returns their names (dropped by the caller) and the query of the verified pairs: sides
-- joined with texts where they are, the set sizes filtered, simhash_jaccard >= t (id2's set
-- from texts, id1's text shingled again there: its set would be 8 times its text to move).
CREATE FUNCTION simhash_similar_parts(tbl regclass, id_column name, text_column name,
                                      min_similarity double precision,
                                      OUT scratch text[], OUT pairs_query text)
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    SET extra_float_digits = 3
    AS $$
DECLARE
    parts integer := 4 * coalesce(nullif(current_setting('citus.shard_count', true), '')::integer, 32);
    base text := (SELECT quote_ident(n.nspname) FROM pg_class c JOIN pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
                  WHERE c.oid OPERATOR(pg_catalog.=) tbl) || '.' ||
                 quote_ident(format('simhash_similar_%s_%s', pg_backend_pid(),
                                    substr(md5(random()::text || clock_timestamp()::text), 1, 12)));
BEGIN
    scratch := ARRAY[base || '_keys', base || '_cands', base || '_texts', base || '_sides'];
    EXECUTE format('CREATE UNLOGGED TABLE %s (part integer, band integer, key bigint, id bigint, keys bigint[])', scratch[1]);
    EXECUTE format('CREATE UNLOGGED TABLE %s (id1 bigint, id2 bigint)', scratch[2]);
    EXECUTE format('CREATE UNLOGGED TABLE %s (id bigint, body text, set bigint[])', scratch[3]);
    EXECUTE format('CREATE UNLOGGED TABLE %s (id2 bigint, id1 bigint, body1 text, n1 integer)', scratch[4]);
    EXECUTE format('SELECT create_distributed_table(%L, %L, colocate_with => %L)', scratch[1], 'part', 'none');
    EXECUTE format('SELECT create_distributed_table(%L, %L, colocate_with => %L)', scratch[2], 'id1', 'none');
    EXECUTE format('SELECT create_distributed_table(%L, %L, colocate_with => %L)', scratch[3], 'id', scratch[2]);
    EXECUTE format('SELECT create_distributed_table(%L, %L, colocate_with => %L)', scratch[4], 'id2', scratch[2]);
    EXECUTE format('INSERT INTO %s SELECT (pg_catalog.hashint8extended(u.key, u.band) OPERATOR(pg_catalog.&) 9223372036854775807) OPERATOR(pg_catalog.%%) %s,
                           u.band, u.key, t.id, t.keys
                    FROM (SELECT %I AS id, @extschema@.simhash_lsh(%I::pg_catalog.text) AS keys FROM %s WHERE %I IS NOT NULL) t,
                         pg_catalog.unnest(t.keys) WITH ORDINALITY u(key, band)',
                   scratch[1], parts, id_column, text_column, tbl, text_column);
    EXECUTE format('INSERT INTO %s SELECT a.id, b.id FROM %s a JOIN %s b ON a.part OPERATOR(pg_catalog.=) b.part
                    AND a.band OPERATOR(pg_catalog.=) b.band AND a.key OPERATOR(pg_catalog.=) b.key AND a.id OPERATOR(pg_catalog.<) b.id
                    WHERE @extschema@.simhash_lsh_first_shared(a.keys, b.keys) OPERATOR(pg_catalog.=) a.band',
                   scratch[2], scratch[1], scratch[1]);
    EXECUTE format('INSERT INTO %s SELECT t.%I, t.%I::pg_catalog.text, @extschema@.simhash_shingles(t.%I::pg_catalog.text)
                    FROM %s t WHERE t.%I IS NOT NULL',
                   scratch[3], id_column, text_column, text_column, tbl, text_column);
    EXECUTE format('INSERT INTO %s SELECT c.id2, c.id1, x.body, pg_catalog.cardinality(x.set) FROM %s c
                    JOIN %s x ON x.id OPERATOR(pg_catalog.=) c.id1',
                   scratch[4], scratch[2], scratch[3]);
    -- (sizes first: |A n B| / |A u B| >= t needs min(|A|, |B|) >= t max(|A|, |B|); then the
    -- similarity through a function scan, so that it is computed once a pair)
    pairs_query := format('SELECT s.id1, s.id2, j.similarity FROM %1$s s JOIN %2$s x ON x.id OPERATOR(pg_catalog.=) s.id2
                           AND LEAST(s.n1, pg_catalog.cardinality(x.set))::float8 OPERATOR(pg_catalog.>=)
                               ((%3$s OPERATOR(pg_catalog.*) GREATEST(s.n1, pg_catalog.cardinality(x.set))) OPERATOR(pg_catalog.-) 1e-9)
                           CROSS JOIN LATERAL pg_catalog.unnest(ARRAY[@extschema@.simhash_jaccard(x.set, @extschema@.simhash_shingles(s.body1))]) j(similarity)
                           WHERE j.similarity OPERATOR(pg_catalog.>=) %3$s',
                          scratch[4], scratch[3], min_similarity);
END
$$;
COMMENT ON FUNCTION simhash_similar_parts(regclass, name, name, double precision) IS
'the intermediate tables of simhash_similar_pairs(tbl, ...) and simhash_similar_clusters(tbl, ...) on a Citus-distributed table, filled, and the query of its verified pairs';

-- Verified pairs of a table: as simhash_similar_pairs(query); on a table Citus distributes,
-- from 0.7 (LSH candidates), found and verified on the workers (simhash_similar_parts).
CREATE FUNCTION simhash_similar_pairs(tbl regclass, id_column name, text_column name,
                                      min_similarity double precision)
    RETURNS TABLE (id1 bigint, id2 bigint, similarity double precision)
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    job record;
BEGIN
    IF NOT @extschema@.simhash_table_form_on_workers(tbl, id_column, text_column, true,
                                                     @extschema@.simhash_lsh_candidates(min_similarity)) THEN
        RETURN QUERY SELECT * FROM @extschema@.simhash_similar_pairs(
            format('SELECT %I, %I FROM %s', id_column, text_column, tbl), min_similarity);
        RETURN;
    END IF;
    job := @extschema@.simhash_similar_parts(tbl, id_column, text_column, min_similarity);
    RETURN QUERY EXECUTE job.pairs_query;
    EXECUTE format('DROP TABLE %s', array_to_string(job.scratch, ', '));
END
$$;
COMMENT ON FUNCTION simhash_similar_pairs(regclass, name, name, double precision) IS
'every pair of rows of tbl whose texts (text_column) have a simhash_jaccard of at least min_similarity, as simhash_similar_pairs(''SELECT id, body FROM tbl'', min_similarity) (id_column: unique bigint, integer or smallint); on a table Citus distributes, from 0.7, the candidates (pairs sharing a simhash_lsh key) are found and verified on the workers';

-- Verified clusters of a table: as simhash_similar_clusters(query); on a table Citus
-- distributes, joined on the coordinator from the pairs the workers verified.
CREATE FUNCTION simhash_similar_clusters(tbl regclass, id_column name, text_column name,
                                         min_similarity double precision)
    RETURNS TABLE (id bigint, cluster_id bigint, similarity double precision)
    LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    job record;
    found text := format('simhash_similar_found_%s_%s', pg_backend_pid(),
                         substr(md5(random()::text || clock_timestamp()::text), 1, 12));
BEGIN
    IF NOT @extschema@.simhash_table_form_on_workers(tbl, id_column, text_column, true,
                                                     @extschema@.simhash_lsh_candidates(min_similarity)) THEN
        RETURN QUERY SELECT * FROM @extschema@.simhash_similar_clusters(
            format('SELECT %I, %I FROM %s', id_column, text_column, tbl), min_similarity);
        RETURN;
    END IF;
    job := @extschema@.simhash_similar_parts(tbl, id_column, text_column, min_similarity);
    EXECUTE format('CREATE TEMP TABLE %I ON COMMIT DROP AS %s', found, job.pairs_query);
    EXECUTE format('DROP TABLE %s', array_to_string(job.scratch, ', '));
    RETURN QUERY EXECUTE format(
        'WITH best AS (SELECT b.id, max(b.similarity) AS similarity FROM (
                           SELECT p.id1 AS id, p.similarity FROM pg_temp.%1$I p
                           UNION ALL SELECT p.id2, p.similarity FROM pg_temp.%1$I p) b
                       GROUP BY b.id)
         SELECT c.id, c.cluster_id, best.similarity
         FROM @extschema@.simhash_clusters_of_pairs(%2$L) c
         JOIN best ON best.id OPERATOR(pg_catalog.=) c.id
         ORDER BY c.cluster_id, c.id',
        found, format('SELECT id1, id2, 0::bigint, 0::bigint FROM pg_temp.%I', found));
    EXECUTE format('DROP TABLE pg_temp.%I', found);
END
$$;
COMMENT ON FUNCTION simhash_similar_clusters(regclass, name, name, double precision) IS
'connected components of the verified pairs of tbl, as simhash_similar_clusters(''SELECT id, body FROM tbl'', min_similarity); on a table Citus distributes the pairs come from the workers (simhash_similar_pairs(tbl, ...)) and the clusters are joined on the coordinator';

-- The lim rows most similar to a text, most similar first: candidates are the rows whose
-- keys_col (a bigint[] holding simhash_lsh(text_col), best with a GIN index) shares a key
-- with simhash_lsh(q), each verified with simhash_jaccard; with keys_col NULL, the rows
-- found by text_col %~ q (best with a GIN index with simhash_ops on text_col).
CREATE FUNCTION simhash_similar_nearest(rel anyelement, text_col name, keys_col name, q text,
                                        lim integer DEFAULT 10,
                                        min_similarity double precision DEFAULT 0.8)
    RETURNS TABLE (doc anyelement, similarity double precision)
    LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
    SET search_path = pg_catalog, pg_temp
    -- Set below for %~ with set_config(..., true), which PostgreSQL undoes when the
    -- function returns only for the settings of its SET clauses (else at the end of the
    -- transaction); extra_float_digits = 3 also prints min_similarity with every digit.
    SET simhash.similarity_threshold = 0.8
    SET extra_float_digits = 3
    AS $$
DECLARE
    target regclass;
BEGIN
    -- The extension's schema must still bear the name it was installed under: renamed,
    -- another schema could take that name and stand in for the extension's objects.
    IF (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
        WHERE e.extname OPERATOR(pg_catalog.=) 'simhash') OPERATOR(pg_catalog.<>) '@extschema@' THEN
        RAISE EXCEPTION 'simhash: the schema of the extension was renamed; rename it back to @extschema@'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    target := @extschema@.simhash_check_rows(pg_catalog.pg_typeof(rel), lim);
    IF keys_col IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                   WHERE a.attrelid = target AND a.attname = keys_col AND a.attnum > 0
                     AND NOT a.attisdropped AND a.atttypid = 'bigint[]'::regtype) THEN
        RAISE EXCEPTION 'simhash: % is not a bigint[] column of %', quote_ident(keys_col), target
            USING ERRCODE = 'undefined_column',
                  HINT = 'Add one: ALTER TABLE ... ADD COLUMN lsh bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED, with a GIN index on it.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_attribute a
                   WHERE a.attrelid = target AND a.attname = text_col AND a.attnum > 0
                     AND NOT a.attisdropped
                     AND a.atttypid IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype)) THEN
        RAISE EXCEPTION 'simhash: % is not a text column of %', quote_ident(text_col), target
            USING ERRCODE = 'undefined_column';
    END IF;
    IF min_similarity IS NULL OR min_similarity < 0.7 OR min_similarity > 1 OR min_similarity = 'NaN'::float8 THEN
        RAISE EXCEPTION 'simhash: min_similarity must be between 0.7 and 1 here, got %', min_similarity
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Below 0.7 the LSH keys miss too many similar rows; use simhash_similar_pairs.';
    END IF;
    IF q IS NULL OR lim = 0 THEN
        RETURN;
    END IF;
    -- The row is (t.*) cast to its type (a regtype, qualified where a name would be taken):
    -- a bare t would be a column of the table named t.
    IF keys_col IS NULL THEN
        -- No key column: the operator %~, served by a GIN index with simhash_ops on
        -- text_col, at min_similarity (a local setting, undone when this function returns:
        -- it has a SET clause).
        -- (min_similarity::text has every digit: extra_float_digits is 3 here, not the
        -- caller's, which if negative rounded 0.76 to 0.8.)
        PERFORM pg_catalog.set_config('simhash.similarity_threshold', min_similarity::pg_catalog.text, true);
        RETURN QUERY EXECUTE format(
            'SELECT s.t, s.similarity FROM ('
            '  SELECT (t.*)::%3$s AS t, t.ctid AS tid, @extschema@.simhash_jaccard(t.%1$I::pg_catalog.text, $1) AS similarity FROM %2$s t'
            '  WHERE t.%1$I::pg_catalog.text OPERATOR(@extschema@.%%~) $1) s'
            ' ORDER BY s.similarity DESC, s.tid LIMIT $2',
            text_col, target, pg_catalog.pg_typeof(rel))
            USING q, lim;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT s.t, s.similarity FROM ('
        '  SELECT (t.*)::%4$s AS t, t.ctid AS tid, @extschema@.simhash_jaccard(t.%1$I::pg_catalog.text, $1) AS similarity FROM %2$s t'
        '  WHERE t.%3$I OPERATOR(pg_catalog.&&) @extschema@.simhash_lsh($1)) s'
        ' WHERE s.similarity >= $2 ORDER BY s.similarity DESC, s.tid LIMIT $3',
        text_col, target, keys_col, pg_catalog.pg_typeof(rel))
        USING q, min_similarity, lim;
END
$$;
COMMENT ON FUNCTION simhash_similar_nearest(anyelement, name, name, text, integer, double precision) IS
'the lim rows of the table of rel (pass NULL::tablename) whose text_col is most similar to q (simhash_jaccard >= min_similarity, 0.7..1), most similar first; candidates are the rows whose keys_col (bigint[] holding simhash_lsh(text_col), GIN-indexed) shares a key with simhash_lsh(q), or with keys_col NULL the rows text_col %~ q finds (a GIN index with simhash_ops on text_col)';

-- == Similarity operators and the GIN operator class simhash_ops ================
-- (src/pg/similarity_ops.c; docs/search.md "Similarity search with an operator")
--   body %~ q     simhash_jaccard(body, q) >= simhash.similarity_threshold (default 0.8)
--   body <%> q    1 - simhash_jaccard(body, q), for ORDER BY (as pgvector's <%>)
--   fp <~> q      hamming(fp, q) of bigint fingerprints (as pgvector's <~>)
--   CREATE INDEX ... USING gin (body simhash_ops): keys simhash_lsh(body), recheck %~.
-- Named so as to coexist with pg_trgm (%, <->, <%, %>...), pgvector (<~> and <%> on bit)
-- and smlar (%) in one schema.

-- COST 100: each call shingles a text (tens of microseconds for a paragraph), so that the
-- planner prefers the index to reading every row.
-- STABLE, not IMMUTABLE: it reads the setting simhash.similarity_threshold (as pg_trgm's
-- similarity_op reads pg_trgm.similarity_threshold), so it cannot be used in an index
-- expression; the operator class serves it instead.
CREATE FUNCTION simhash_similar_op(body text, q text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_similar_op'
    LANGUAGE C STABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION simhash_similar_op(text, text) IS
'implementation of the operator %~: true when simhash_jaccard(body, q) >= simhash.similarity_threshold (false when both texts are without characters); STABLE as it reads the setting';

CREATE FUNCTION simhash_jaccard_distance(body text, q text) RETURNS double precision
    AS 'MODULE_PATHNAME', 'simhash_jaccard_distance'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 100;
COMMENT ON FUNCTION simhash_jaccard_distance(text, text) IS
'implementation of the operator <%>: 1 - simhash_jaccard(body, q), NULL when both texts are without characters';

CREATE OPERATOR %~ (
    LEFTARG = text, RIGHTARG = text,
    FUNCTION = simhash_similar_op(text, text),
    COMMUTATOR = OPERATOR(@extschema@.%~),
    RESTRICT = pg_catalog.contsel, JOIN = pg_catalog.contjoinsel
);
COMMENT ON OPERATOR %~ (text, text) IS
'similar texts: simhash_jaccard(left, right) >= simhash.similarity_threshold; served by a GIN index with simhash_ops';

CREATE OPERATOR <%> (
    LEFTARG = text, RIGHTARG = text,
    FUNCTION = simhash_jaccard_distance(text, text),
    COMMUTATOR = OPERATOR(@extschema@.<%>)
);
COMMENT ON OPERATOR <%> (text, text) IS
'Jaccard distance of two texts: 1 - simhash_jaccard(left, right)';

CREATE OPERATOR <~> (
    LEFTARG = bigint, RIGHTARG = bigint,
    FUNCTION = hamming(bigint, bigint),
    COMMUTATOR = OPERATOR(@extschema@.<~>)
);
COMMENT ON OPERATOR <~> (bigint, bigint) IS
'Hamming distance of two 64-bit fingerprints: hamming(left, right)';

CREATE FUNCTION simhash_gin_extract_value(text, internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'simhash_gin_extract_value'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_gin_extract_value(text, internal, internal) IS
'GIN support of simhash_ops: the index keys of a text, its simhash_lsh keys';

-- STABLE: from a threshold below 0.7 it asks for a full index scan.
CREATE FUNCTION simhash_gin_extract_query(text, internal, smallint, internal, internal,
                                          internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'simhash_gin_extract_query'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_gin_extract_query(text, internal, smallint, internal, internal, internal, internal) IS
'GIN support of simhash_ops: the keys looked up for q (its simhash_lsh keys), or a full index scan below simhash.similarity_threshold 0.7';

CREATE FUNCTION simhash_gin_consistent(internal, smallint, text, integer, internal, internal,
                                       internal, internal) RETURNS boolean
    AS 'MODULE_PATHNAME', 'simhash_gin_consistent'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_gin_consistent(internal, smallint, text, integer, internal, internal, internal, internal) IS
'GIN support of simhash_ops: a row is a candidate when it shares a key with q; always rechecked with %~';

CREATE FUNCTION simhash_gin_triconsistent(internal, smallint, text, integer, internal, internal,
                                          internal) RETURNS "char"
    AS 'MODULE_PATHNAME', 'simhash_gin_triconsistent'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION simhash_gin_triconsistent(internal, smallint, text, integer, internal, internal, internal) IS
'GIN support of simhash_ops: maybe when a key may match, else false';

-- Not the default class for text (btree_gin has one; pg_trgm's gin_trgm_ops is not either).
CREATE OPERATOR CLASS simhash_ops FOR TYPE text USING gin AS
    OPERATOR 1 @extschema@.%~ (text, text),
    FUNCTION 1 pg_catalog.btint8cmp(bigint, bigint),
    FUNCTION 2 @extschema@.simhash_gin_extract_value(text, internal, internal),
    FUNCTION 3 @extschema@.simhash_gin_extract_query(text, internal, smallint, internal, internal, internal, internal),
    FUNCTION 4 @extschema@.simhash_gin_consistent(internal, smallint, text, integer, internal, internal, internal, internal),
    FUNCTION 6 @extschema@.simhash_gin_triconsistent(internal, smallint, text, integer, internal, internal, internal),
    STORAGE bigint;
COMMENT ON OPERATOR CLASS simhash_ops USING gin IS
'GIN index of texts by their simhash_lsh keys, for body %~ q (thresholds from 0.7; below, a full index scan)';

-- == Block indexes built without blocking writes ===============================
-- CREATE INDEX CONCURRENTLY cannot run inside a function, so this one returns the
-- statements that build the layout simhash_create_index would build, for psql's \gexec:
--   SELECT * FROM simhash_create_index_statements('docs', 'fp') \gexec
-- In order: DROP INDEX CONCURRENTLY of invalid block indexes of the column (left by a
-- CONCURRENTLY build that failed), CREATE INDEX CONCURRENTLY of each block index the layout
-- lacks, DROP INDEX CONCURRENTLY of the block indexes of another layout, ANALYZE, and the
-- call that records the layout in simhash_layouts. Run again after a failure, it goes on
-- from where the failure left off. simhash_near finds the indexes in the catalog, as soon
-- as they are valid.
CREATE FUNCTION simhash_create_index_statements(tbl regclass, col name,
                                                max_distance integer DEFAULT 3,
                                                blocks integer DEFAULT NULL)
    RETURNS SETOF text
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    b integer;
    names text[];
    nsp name;
    qtbl text;
    qind text;
BEGIN
    -- The extension's schema must still bear the name it was installed under: renamed,
    -- another schema could take that name and stand in for the extension's objects.
    IF (SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
        JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
        WHERE e.extname OPERATOR(pg_catalog.=) 'simhash') OPERATOR(pg_catalog.<>) '@extschema@' THEN
        RAISE EXCEPTION 'simhash: the schema of the extension was renamed; rename it back to @extschema@'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    -- The checks and layout of simhash_create_index, and 0A000 for a partitioned table.
    SELECT l.nsp, l.nblocks, l.index_names INTO nsp, b, names
    FROM @extschema@.simhash_index_layout(tbl, col, max_distance, blocks, true) l;
    -- Every relation by schema and name: a regclass prints the name alone when this
    -- function's search_path finds it, as it finds a temporary table, and the caller's
    -- search_path may find another relation of that name first (public.docs before
    -- pg_temp.docs): the statements would act on that one.
    qtbl := format('%I.%I', nsp, (SELECT c.relname FROM pg_class c WHERE c.oid = tbl));

    FOR qind IN SELECT format('%I.%I', n.nspname, c.relname)
                FROM @extschema@.simhash_block_indexes(tbl, col) x
                JOIN pg_index i ON i.indexrelid = x.index
                JOIN pg_class c ON c.oid = x.index JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE NOT i.indisvalid ORDER BY x.blocks, x.block, x.index::text LOOP
        RETURN NEXT format('DROP INDEX CONCURRENTLY IF EXISTS %s', qind);
    END LOOP;

    FOR i IN 0 .. b - 1 LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM @extschema@.simhash_block_indexes(tbl, col) x
                              JOIN pg_index pi ON pi.indexrelid = x.index
                              WHERE x.blocks = b AND x.block = i AND pi.indisvalid);
        RETURN NEXT format('CREATE INDEX CONCURRENTLY %I ON %s USING btree (@extschema@.simhash_block(%I, %s, %s), %I)',
                           names[i + 1], qtbl, col, b, i, col);
    END LOOP;

    FOR qind IN SELECT format('%I.%I', n.nspname, c.relname)
                FROM @extschema@.simhash_block_indexes(tbl, col) x
                JOIN pg_index i ON i.indexrelid = x.index
                JOIN pg_class c ON c.oid = x.index JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE i.indisvalid AND x.blocks <> b ORDER BY x.blocks, x.block, x.index::text LOOP
        RETURN NEXT format('DROP INDEX CONCURRENTLY IF EXISTS %s', qind);
    END LOOP;
    RETURN NEXT format('ANALYZE %s', qtbl);
    RETURN NEXT format('SELECT @extschema@.simhash_layout_record(%L::pg_catalog.regclass, %L::pg_catalog.name, %s, %s)',
                       qtbl, col, max_distance, b);
END
$$;
COMMENT ON FUNCTION simhash_create_index_statements(regclass, name, integer, integer) IS
'the statements that build, without blocking writes, the block indexes simhash_create_index(tbl, col, max_distance, blocks) would make (CREATE INDEX CONCURRENTLY, DROP INDEX CONCURRENTLY of invalid or other layouts'' indexes, ANALYZE, recording the layout), to run one by one with psql''s \gexec';
