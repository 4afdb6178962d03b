-- simhash() where users put it: generated columns, expression indexes, parallel scans.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

CREATE TABLE usage_docs (
    id   int PRIMARY KEY,
    body text,
    fp   bigint GENERATED ALWAYS AS (simhash(body)) STORED
);
INSERT INTO usage_docs (id, body)
SELECT i, 'document ' || i || ' about ' || (ARRAY['cats', 'dogs', 'birds'])[1 + i % 3]
FROM generate_series(1, 300) i;
INSERT INTO usage_docs (id, body) VALUES (1001, ''), (1002, NULL), (1003, '¡¿!?');

-- the generated column agrees with the function; empty and NULL texts store NULL
SELECT count(*) AS rows,
       count(*) FILTER (WHERE fp = simhash(body)) AS agree,
       count(*) FILTER (WHERE fp IS NULL) AS null_fps
FROM usage_docs;

-- an UPDATE of the text recomputes the fingerprint
UPDATE usage_docs SET body = 'completely different words now' WHERE id = 1;
SELECT fp = simhash('Completely different words, now!') AS recomputed FROM usage_docs WHERE id = 1;

-- an expression index on simhash(body) is usable (IMMUTABLE)
CREATE INDEX usage_docs_simhash ON usage_docs (simhash(body));
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT id FROM usage_docs WHERE simhash(body) = simhash('document 7 about dogs');
SELECT id FROM usage_docs WHERE simhash(body) = simhash('Document 7, about DOGS.');
RESET enable_seqscan;

-- parallel workers can run it (PARALLEL SAFE)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM usage_docs WHERE hamming(simhash(body), simhash('document 7 about dogs')) <= 3;
SELECT count(*) > 0 AS found FROM usage_docs WHERE hamming(simhash(body), simhash('document 7 about dogs')) <= 3;
RESET ALL;

DROP TABLE usage_docs;
