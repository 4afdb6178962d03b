-- simhash 0.1 -> 0.2. CREATE EXTENSION simhash installs 0.1 (simhash--0.1.sql, frozen)
-- and then runs this script, so it is also the install script of everything new in 0.2.
-- Hand-edited, one section per feature; never changed once 0.2 is released.
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.2'" to load this file. \quit

-- == Fingerprint options, weights, IDF and conversions (issue 3) ==========================


-- == Near-duplicate search: block keys, simhash_near, index layouts (issue 4) ============


-- == Dedupe on insert: the simhash_dedupe() trigger (issue 5) ============================


-- == All pairs and clusters of a table (issue 6) =========================================

-- Both run a query returning (id, fp) once, through SPI, so they are VOLATILE (the query
-- may be anything) and PARALLEL UNSAFE. Memory: work_mem (see the README).

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

