-- What the simhash_dedupe trigger reads with a Hamming distance, counted in the block
-- indexes' idx_scan (one scan a probe): skip needs one near duplicate, so it stops at the
-- first (one probe for an exact copy, found in the first block) instead of making all k + 1;
-- link stops at an original at distance 0; reject goes on to name the nearest row; a new
-- text makes every probe. And skip keeps what a brute-force greedy pass keeps.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse
SET stats_fetch_consistency = none;

CREATE TABLE probe_docs (id integer PRIMARY KEY, body text, fp bigint, dup_of integer);
SELECT count(*) AS indexes FROM simhash_create_index('probe_docs', 'fp', 3, 4);
CREATE FUNCTION probe_scans() RETURNS bigint LANGUAGE sql AS $$
    SELECT sum(s.idx_scan)::bigint FROM simhash_block_indexes('probe_docs', 'fp') b
    JOIN pg_stat_user_indexes s ON s.indexrelid = b.index $$;
CREATE TRIGGER dedupe BEFORE INSERT ON probe_docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
INSERT INTO probe_docs (id, body) VALUES
    (1, 'Permission is hereby granted, free of charge, to any person obtaining a copy of this software.');

-- skip, an exact copy: one probe (4 before the search stopped at the first)
SELECT pg_stat_force_next_flush();
SELECT probe_scans() AS before \gset
INSERT INTO probe_docs (id, body) SELECT 2, body FROM probe_docs WHERE id = 1;
SELECT pg_stat_force_next_flush();
SELECT probe_scans() - :before AS skip_copy_probes, (SELECT count(*) FROM probe_docs) AS rows;

-- skip, a new text: every probe (k + 1 = 4 blocks, radius 0)
SELECT probe_scans() AS before \gset
INSERT INTO probe_docs (id, body) VALUES (3, 'An unrelated sentence about rivers, mountains and the weather in spring.');
SELECT pg_stat_force_next_flush();
SELECT probe_scans() - :before AS skip_new_probes, (SELECT count(*) FROM probe_docs) AS rows;

-- link, an exact copy of an original: all four probes (an original as near with a smaller
-- key would win); reject: all four, to name the nearest
DROP TRIGGER dedupe ON probe_docs;
CREATE TRIGGER dedupe BEFORE INSERT ON probe_docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'link', 'dup_of');
SELECT probe_scans() AS before \gset
INSERT INTO probe_docs (id, body) SELECT 4, body FROM probe_docs WHERE id = 1;
SELECT pg_stat_force_next_flush();
SELECT probe_scans() - :before AS link_copy_probes, dup_of FROM probe_docs WHERE id = 4;
DROP TRIGGER dedupe ON probe_docs;
CREATE TRIGGER dedupe BEFORE INSERT ON probe_docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'reject');
SELECT probe_scans() AS before \gset
INSERT INTO probe_docs (id, body) SELECT 5, body FROM probe_docs WHERE id = 3;
SELECT pg_stat_force_next_flush();
SELECT probe_scans() - :before AS reject_copy_probes;

-- skip against a brute-force greedy pass: 400 texts, families of near duplicates (words
-- dropped) offered in a shuffled order, one INSERT each; a text is kept exactly when no
-- text kept before it is within k = 3.
TRUNCATE probe_docs;
DROP TRIGGER dedupe ON probe_docs;
CREATE TRIGGER dedupe BEFORE INSERT ON probe_docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'skip');
CREATE TABLE probe_src AS
SELECT i AS n, array_to_string(ARRAY(
           SELECT 'w' || substr(md5((i % 40)::text || '/' || j), 1, 5) FROM generate_series(1, 40) j
           WHERE i < 40 OR (hashint4(i * 100 + j) & 15) <> 0 ORDER BY j), ' ') AS body
FROM generate_series(0, 399) i;
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT n, body FROM probe_src ORDER BY hashint4(n), n LOOP
        INSERT INTO probe_docs (id, body) VALUES (r.n, r.body);
    END LOOP;
END $$;
CREATE FUNCTION probe_greedy() RETURNS SETOF integer LANGUAGE plpgsql AS $$
DECLARE r record; kept bigint[] := '{}';
BEGIN
    FOR r IN SELECT n, simhash(body) AS fp FROM probe_src ORDER BY hashint4(n), n LOOP
        IF NOT EXISTS (SELECT 1 FROM unnest(kept) k WHERE hamming(k, r.fp) <= 3) THEN
            kept := kept || r.fp;
            RETURN NEXT r.n;
        END IF;
    END LOOP;
END $$;
SELECT (SELECT count(*) FROM probe_docs) AS kept,
       (SELECT count(*) FROM probe_greedy()) AS greedy_kept,
       (SELECT count(*) FROM (SELECT id FROM probe_docs EXCEPT SELECT probe_greedy()) d) AS not_greedy,
       (SELECT count(*) FROM probe_docs a JOIN probe_docs b ON a.id < b.id
        WHERE hamming(a.fp, b.fp) <= 3) AS near_pairs_left;

DROP FUNCTION probe_greedy(), probe_scans();
DROP TABLE probe_docs, probe_src;
