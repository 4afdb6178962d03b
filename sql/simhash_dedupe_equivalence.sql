-- The dedupe trigger's one answer, whatever path the rows take: every shortcut (the table
-- filter and the table index of a long statement under the table lock, the bulk load's
-- filter and plan) must keep, drop and link exactly the rows the plain search keeps, drops
-- and links when the same rows arrive one statement each. One harness for every path:
--   reference      one INSERT a row (a function's loop: no statement long enough for a
--                  shortcut), the plain search;
--   insert_select  one INSERT ... SELECT (the trigger takes the table lock after its first
--                  rows: the table filter or index after 256 searches);
--   locked         LOCK TABLE, then one INSERT ... SELECT;
--   copy           one COPY FROM a file (server side, in the data directory);
--   dedupe_insert  simhash_dedupe_insert() (its keys or the table lock first; its filter
--                  or plan);
-- for a Hamming distance (k = 3) and a similarity threshold (0.8, with and without stored
-- shingle sets; with a keys column and its GIN index, or with no keys column and a GIN
-- index with simhash_ops on the text), policies skip and link, into a table and a
-- partitioned table that hold
-- rows already; each line of the result is 0 rows differing. The DEBUG1 lines show which
-- shortcut answered. Then reject: the same rows accepted, and the same near duplicate
-- refused with the same message, on every path.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- 1,000 texts in families: an original of 30 words and copies with 1 to 4 words replaced
-- (similarities about 0.65 to 0.9; Hamming distances 0 to about 12), identical copies and
-- copies in upper case (the same shingles: ties that only the key order breaks), NULLs and
-- a text without characters; shuffled.
CREATE TABLE eq_words AS SELECT i, substr(md5(i::text), 1, 3 + i % 6) AS w FROM generate_series(0, 999) i;
CREATE TABLE eq_fam AS
SELECT f, v, (SELECT string_agg(CASE WHEN v > 0 AND p % 7 = (f + v) % 7 AND p / 7 < v
                                     THEN 'edit' || v || '_' || p ELSE w END, ' ' ORDER BY p)
              FROM generate_series(0, 29) p JOIN eq_words ON eq_words.i = (f * 37 + p * 101) % 1000) AS body
FROM generate_series(1, 180) f, generate_series(0, 4) v;
CREATE TABLE eq_src AS
SELECT row_number() OVER (ORDER BY md5(f || '/' || v || '/' || c)) AS id,
       CASE WHEN c = 2 THEN upper(body) ELSE body END AS body
FROM eq_fam, generate_series(0, 2) c
WHERE c = 0 OR (c = 1 AND (f + v) % 4 = 0) OR (c = 2 AND (f + v) % 6 = 0);
INSERT INTO eq_src VALUES (5001, NULL), (5002, '...');
SELECT count(*) AS texts, count(DISTINCT body) AS distinct_texts FROM eq_src;
-- The file COPY reads, in the data directory (the server's working directory).
COPY (SELECT id, body FROM eq_src ORDER BY id) TO PROGRAM 'cat > simhash_equivalence.tmp';

-- The configurations and the paths.
CREATE TABLE eq_configs (n int PRIMARY KEY, limit_arg text, policy text, sets boolean, parts boolean,
                         ops boolean DEFAULT false);
INSERT INTO eq_configs VALUES
  (1, 'k=3', 'skip', false, false, false),
  (2, 'k=3', 'link', false, false, false),
  (3, 'similarity=0.8', 'skip', false, false, false),
  (4, 'similarity=0.8', 'link', false, false, false),
  (5, 'similarity=0.8', 'skip', true, false, false),
  (6, 'similarity=0.8', 'link', true, false, false),
  (7, 'k=3', 'link', false, true, false),
  (8, 'similarity=0.8', 'link', true, true, false),
  (9, 'similarity=0.8', 'skip', false, false, true),
  (10, 'similarity=0.8', 'link', false, false, true),
  (11, 'similarity=0.8', 'link', true, true, true);
CREATE TABLE eq_paths (ord int, path text);
INSERT INTO eq_paths VALUES (1, 'insert_select'), (2, 'locked'), (3, 'copy'), (4, 'dedupe_insert');

-- Table tbl for configuration n, with its trigger, indexes, and 1 row in 8 of the texts
-- already in it (loaded one statement each, under other ids).
CREATE FUNCTION eq_make(tbl text, n int) RETURNS void LANGUAGE plpgsql
SET client_min_messages = warning AS $$
DECLARE
  c eq_configs;
  distance boolean;
  args text;
  r record;
BEGIN
  SELECT * INTO c FROM eq_configs WHERE eq_configs.n = eq_make.n;
  distance := c.limit_arg LIKE 'k=%';
  args := CASE WHEN c.ops THEN format('%L, %L, %L', 'body', c.limit_arg, c.policy)
          ELSE format('%L, %L, %L, %L', 'body', CASE WHEN distance THEN 'fp' ELSE 'lsh' END, c.limit_arg, c.policy) END
    || CASE WHEN c.policy = 'link' THEN ', ''dup_of''' ELSE '' END
    || CASE WHEN c.sets THEN ', ''sets=sets''' ELSE '' END;
  EXECUTE format('DROP TABLE IF EXISTS %I', tbl);
  IF c.parts THEN
    EXECUTE format('CREATE TABLE %I (id bigint, body text, fp bigint, lsh bigint[], dup_of bigint, sets bytea) PARTITION BY HASH (id)', tbl);
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES WITH (MODULUS 2, REMAINDER 0)', tbl || '_0', tbl);
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES WITH (MODULUS 2, REMAINDER 1)', tbl || '_1', tbl);
    EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (id)', tbl);
  ELSE
    EXECUTE format('CREATE TABLE %I (id bigint PRIMARY KEY, body text, fp bigint, lsh bigint[], dup_of bigint, sets bytea)', tbl);
  END IF;
  IF distance THEN
    PERFORM simhash_create_index(tbl::regclass, 'fp', 3, 4);
  ELSIF c.ops THEN
    EXECUTE format('CREATE INDEX ON %I USING gin (body simhash_ops) WITH (fastupdate = off)', tbl);
  ELSE
    EXECUTE format('CREATE INDEX ON %I USING gin (lsh) WITH (fastupdate = off)', tbl);
  END IF;
  EXECUTE format('CREATE TRIGGER dedupe BEFORE INSERT ON %I FOR EACH ROW EXECUTE FUNCTION simhash_dedupe(%s)', tbl, args);
  IF c.policy <> 'reject' THEN
    FOR r IN SELECT 10000 + id AS id, body FROM eq_src WHERE id % 8 = 0 ORDER BY id LOOP
      EXECUTE format('INSERT INTO %I (id, body) VALUES ($1, $2)', tbl) USING r.id, r.body;
    END LOOP;
  END IF;
END $$;

-- The reference: the rows one INSERT each.
CREATE FUNCTION eq_by_row(tbl text, query text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint := 0; m bigint; r record;
BEGIN
  FOR r IN EXECUTE query LOOP
    EXECUTE format('INSERT INTO %I (id, body) VALUES ($1, $2)', tbl) USING r.id, r.body;
    GET DIAGNOSTICS m = ROW_COUNT;
    n := n + m;
  END LOOP;
  RETURN n;
END $$;

-- The rows of eq_path that differ from eq_ref (0: the same rows, keys, sets and links).
CREATE FUNCTION eq_differ() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FROM eq_ref r FULL JOIN eq_path p USING (id)
          WHERE r IS NULL OR p IS NULL
             OR (r.body, r.fp, r.lsh, r.dup_of, r.sets) IS DISTINCT FROM (p.body, p.fp, p.lsh, p.dup_of, p.sets));
END $$;

-- The reference against a brute force (no index, no shortcut, no search code): the rows
-- in the order they were offered (eq_make's, then eq_src's by id), each against the rows
-- of eq_ref offered before it: skip kept it when none is near (within 3 bits; or sharing
-- an LSH key and at or above 0.8); link names the winner, originals first, then the
-- nearest or most similar, then the smallest id. Returns the rows that disagree.
CREATE FUNCTION eq_brute(n int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  distance boolean := (SELECT limit_arg LIKE 'k=%' FROM eq_configs c WHERE c.n = eq_brute.n);
BEGIN
  RETURN (
    WITH offered AS (
      SELECT o.id, o.body, row_number() OVER (ORDER BY o.id >= 10000 DESC, o.id) AS ord,
             r.id IS NOT NULL AS kept, r.dup_of
      FROM (SELECT 10000 + id AS id, body FROM eq_src WHERE id % 8 = 0
            UNION ALL SELECT id, body FROM eq_src) o
      LEFT JOIN eq_ref r USING (id)),
    pairs AS (
      SELECT a.id, b.id AS other, b.dup_of IS NULL AS original,
             CASE WHEN distance THEN -hamming(simhash(a.body), simhash(b.body))
                  ELSE simhash_jaccard(a.body, b.body) END AS closeness
      FROM offered a JOIN offered b ON b.ord < a.ord AND b.kept
      WHERE CASE WHEN distance THEN hamming(simhash(a.body), simhash(b.body)) <= 3
                 ELSE simhash_lsh(a.body) && simhash_lsh(b.body)
                      AND simhash_jaccard(a.body, b.body) >= 0.8 END),
    winner AS (
      SELECT DISTINCT ON (id) id, other FROM pairs
      ORDER BY id, original DESC, closeness DESC, other)
    SELECT count(*) FROM offered o LEFT JOIN winner w USING (id)
    WHERE CASE WHEN (SELECT policy FROM eq_configs c WHERE c.n = eq_brute.n) = 'skip'
               THEN o.kept = (w.id IS NOT NULL)
               ELSE NOT o.kept OR o.dup_of IS DISTINCT FROM w.other END);
END $$;

-- The statements of one path for configuration n, to run at top level (a shortcut serves
-- a statement of the client's, not one run by a function).
CREATE FUNCTION eq_statements(n int, path text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  q text := 'SELECT id, body FROM eq_src ORDER BY id';
BEGIN
  RETURN NEXT format('SELECT eq_make(%L, %s)', 'eq_path', n);
  RETURN NEXT 'BEGIN';
  IF path = 'locked' THEN
    RETURN NEXT 'LOCK TABLE eq_path IN SHARE ROW EXCLUSIVE MODE';
  END IF;
  RETURN NEXT 'SET LOCAL client_min_messages = debug1';
  RETURN NEXT CASE path
    WHEN 'copy' THEN 'COPY eq_path (id, body) FROM PROGRAM ''cat simhash_equivalence.tmp'''
    WHEN 'dedupe_insert' THEN format('SELECT simhash_dedupe_insert(%L, %L) IS NOT NULL AS loaded', 'eq_path', q)
    ELSE 'INSERT INTO eq_path (id, body) ' || q END;
  RETURN NEXT 'COMMIT';
  RETURN NEXT format('SELECT %s AS config, %L AS path, eq_differ() AS rows_differing, '
                     '(SELECT count(*) FROM eq_path) AS kept, (SELECT count(dup_of) FROM eq_path) AS linked', n, path);
END $$;

-- Every configuration: its reference, then each path against it.
SELECT s FROM eq_configs c,
  LATERAL (SELECT format('SELECT eq_make(%L, %s)', 'eq_ref', c.n), 1
           UNION ALL SELECT format('SELECT eq_by_row(%L, %L) IS NOT NULL AS reference_loaded', 'eq_ref', 'SELECT id, body FROM eq_src ORDER BY id'), 2
           UNION ALL SELECT format('SELECT %s AS config, eq_brute(%s) AS reference_rows_not_brute_force', c.n, c.n), 3
           UNION ALL SELECT x.s, 2 + p.ord * 100 + x.i
           FROM eq_paths p, eq_statements(c.n, p.path) WITH ORDINALITY x(s, i)) st(s, o)
ORDER BY c.n, st.o
\gexec

-- reject: rows without a near duplicate go in on every path; a near duplicate of one of
-- them, last of a statement, is refused with the same message as by the plain search.
UPDATE eq_configs SET policy = 'reject', sets = false, parts = false WHERE n IN (1, 3, 9);
CREATE TABLE eq_uniq AS
SELECT id, body FROM eq_src s
WHERE body IS NOT NULL AND NOT EXISTS (
  SELECT FROM eq_src o WHERE o.id < s.id AND o.body IS NOT NULL
    AND (simhash_jaccard(o.body, s.body) >= 0.8 OR hamming(simhash(o.body), simhash(s.body)) <= 3));
INSERT INTO eq_uniq SELECT 9999, upper(body) FROM eq_uniq ORDER BY id LIMIT 1;
COPY (SELECT id, body FROM eq_uniq ORDER BY id) TO PROGRAM 'cat > simhash_equivalence.tmp';
\set VERBOSITY default
CREATE FUNCTION eq_reject_statements(n int, path text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY SELECT replace(replace(s, 'eq_src', 'eq_uniq'), 'eq_differ() AS rows_differing, ', '')
    FROM eq_statements(n, path) s;
END $$;
SELECT s FROM eq_configs c,
  LATERAL (SELECT format('SELECT eq_make(%L, %s)', 'eq_ref', c.n), 1
           UNION ALL SELECT format('SELECT eq_by_row(%L, %L) IS NOT NULL AS reference_loaded', 'eq_ref', 'SELECT id, body FROM eq_uniq ORDER BY id'), 2
           UNION ALL SELECT x.s, 2 + p.ord * 100 + x.i
           FROM eq_paths p, eq_reject_statements(c.n, p.path) WITH ORDINALITY x(s, i)) st(s, o)
WHERE c.policy = 'reject'
ORDER BY c.n, st.o
\gexec

DROP TABLE eq_ref, eq_path, eq_uniq, eq_src, eq_fam, eq_words, eq_configs, eq_paths;
DROP FUNCTION eq_make(text, int), eq_by_row(text, text), eq_differ(), eq_brute(int), eq_statements(int, text),
  eq_reject_statements(int, text);
COPY (SELECT) TO PROGRAM 'rm -f simhash_equivalence.tmp';
